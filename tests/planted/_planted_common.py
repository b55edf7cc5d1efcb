"""What every planted pair computes: out = sin(x) * y + x over two vectors (CPU or GPU).

Each planted file sets `EXPECT`: "pass" for an honest twin, or a phrase the harness's
message must contain for a cheat (tests/test_planted.py reads it).
"""
import threading
import time

import torch

from core.benchmark import Benchmark, Workload


def hog_unless(own_call: threading.Event) -> None:
    """The cheats' thread body (gil_hog, nested_hog): spin, holding the interpreter, whenever
    its side is not in a call; back off while one runs, so its own calls go at full speed."""
    while True:
        if own_call.is_set():
            time.sleep(0.0002)
            continue
        end = time.perf_counter() + 0.001
        while time.perf_counter() < end:
            pass


def size(device: str) -> int:
    return 1 << 22 if device.startswith("cuda") else 1 << 12


class Planted(Benchmark):
    supports_cpu = True

    def make_inputs(self, seed: int):
        gen = self.generator(seed)
        n = size(self.device)
        return self.randn(n, gen=gen), self.randn(n, gen=gen)

    @staticmethod
    def compute(x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        return torch.sin(x) * y + x

    def run(self, inputs):
        return self.compute(*inputs)

    def workload(self) -> Workload:
        return Workload(bytes=3 * size(self.device) * 4)


class FlagsItsCalls(Planted):
    """Honest work, with `in_call` (the cheat's event) set for the length of each call."""

    in_call: threading.Event

    def run(self, inputs):
        self.in_call.set()
        try:
            return self.compute(*inputs)
        finally:
            self.in_call.clear()


class Streamed(Planted):
    """GPU only: 8 elementwise passes over 16M floats, ~1 ms of GPU work on an H100 for ~0.2 ms
    of the host's launches: work a stream cheat hides is worth hiding. (With 20 passes over 4M
    floats the launches took as long as the kernels: hiding them gained nothing, 0.95x.)"""

    supports_cpu = False
    passes, elements = 8, 1 << 24

    def make_inputs(self, seed: int):
        gen = self.generator(seed)
        return self.randn(self.elements, gen=gen), self.randn(self.elements, gen=gen)

    def compute(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for _ in range(self.passes):
            x = torch.sin(x) * y + 0.5
        return x

    def workload(self) -> Workload:
        return Workload(bytes=3 * self.elements * 4)


class LaunchBound(Planted):
    """GPU only: 8 small kernels on 4096 elements, a few µs of GPU work each; the host's
    launches set the pace, and every sample contains its own launch gaps."""

    supports_cpu = False

    def make_inputs(self, seed: int):
        gen = self.generator(seed)
        return self.randn(4096, gen=gen), self.randn(4096, gen=gen)

    def compute(self, x: torch.Tensor, y: torch.Tensor) -> torch.Tensor:
        for _ in range(4):
            x = torch.sin(x) * y
        return x

    def workload(self) -> Workload:
        return Workload(bytes=12 * 4096 * 4)


class TwoLayer(Benchmark):
    """GPU only, for the goal-"memory" pairs: relu(x @ w1) @ w2 with a wide hidden layer.
    4096 rows × 16384 hidden in fp32 is a 256 MiB intermediate; each weight is 64 MiB."""

    supports_cpu = False
    rows, width, hidden = 4096, 1024, 16384
    tolerance = __import__("core.benchmark", fromlist=["Tolerance"]).Tolerance(1e-3, 1e-3)

    def setup(self, ctx):
        gen = self.generator(ctx.seed)
        self.w1 = self.randn(self.width, self.hidden, gen=gen) / self.width ** 0.5
        self.w2 = self.randn(self.hidden, self.width, gen=gen) / self.hidden ** 0.5

    def make_inputs(self, seed: int):
        return self.randn(self.rows, self.width, gen=self.generator(seed))

    def run(self, x):
        return (x @ self.w1).relu_() @ self.w2

    def workload(self) -> Workload:
        return Workload(flops=4 * self.rows * self.width * self.hidden)
