"""Shared by the `memory_double_buffering` pair: a layer stack whose weights live in host memory.

Offloaded inference (DeepSpeed ZeRO-Inference, FlexGen, Accelerate's `device_map="auto"`
with CPU offload) keeps a model's weights in pinned host memory and streams each layer to
the GPU just before it runs. Here: 8 MLP layers, x <- x + GELU(x W1ᵀ) W2ᵀ with d 2048 and
hidden 8192 in bf16: 64 MiB of weights per layer, 512 MiB for the stack, pinned in setup().
Each call pushes one batch of 12288 tokens (a prefill chunk, or FlexGen's large
throughput batch) through all 8 layers; every layer's weights cross the host link once per
call into a device buffer, then feed two matmuls.

When overlapping copy and compute pays: a layer moves 2 bytes per weight across the host link
and does 2 FLOPs per weight per token (two matmuls: 4·T·d·hidden FLOPs for 2·d·hidden weights),
so its compute/copy ratio is T FLOPs per byte moved. Assumed rates (no `hw peak` numbers on
the machine this was written on): pinned host-to-device copies at ~50 GB/s (PCIe Gen5 x16 on
an H100; ~25 GB/s on Gen4), bf16 matmuls of this shape at ~650 TFLOP/s. Copy and compute per
layer are equal at T ≈ 650e12 / 50e9 ≈ 13k tokens, where the serial loop takes twice as long
as either: that is where double buffering can approach 2x (`python -m
ch19.sweep_double_buffering` measures the curve over the batch size). At T = 12288 both are expected near
1.3 ms per layer. A decode step (T of 1-64) is copy-bound: overlap hides the tiny compute and
saves almost nothing (FlexGen's answer there is a bigger batch, i.e. this regime); at T far
above 13k the copies hide inside compute either way. README.md shows the expected curve.

Outputs: both sides run the same kernels in the same order on the same stream, so they agree
bit for bit (tolerance 0). The reference recomputes the stack in float64 from the host
weights. The residual stream grows over the 8 layers to an RMS of ~4.7 (largest ~22), where
bf16's rounding step is 0.03-0.06; measured on the CPU at d 2048 / hidden 8192 / 128 tokens,
bf16 against float64 errs by at most 0.18. reference_tolerance: rtol 5e-2, atol 0.4 (~2x
that). A layer skipped, or a buffer read before its copy landed (another layer's weights),
moves outputs by O(RMS) and fails.

On the CPU (supports_cpu): 3 layers of d 32 / hidden 64, 16 tokens, fp32; there are no
streams, so both sides are plain loops there and only the buffer logic is exercised.
"""
from __future__ import annotations

import torch
import torch.nn.functional as F

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

CUDA_SHAPE = dict(layers=8, d=2048, hidden=8192, tokens=12288)
CPU_SHAPE = dict(layers=3, d=32, hidden=64, tokens=16)


def mlp_layer(x: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor) -> torch.Tensor:
    """One residual MLP layer, x [T, d] -> [T, d]; w1 [hidden, d], w2 [d, hidden]."""
    return x + F.linear(F.gelu(F.linear(x, w1)), w2)


class OffloadedStackBench(Benchmark):
    """Host-resident weights (pinned on a GPU), a device activation; sides define run()."""

    supports_cpu = True
    tolerance = Tolerance(rtol=0.0, atol=0.0)
    reference_tolerance = Tolerance(rtol=5e-2, atol=0.4)
    tokens: int | None = None  # sweep_double_buffering.py sets other batch sizes

    @property
    def shape(self) -> dict[str, int]:
        shape = CUDA_SHAPE if self.ctx.is_cuda else CPU_SHAPE
        return shape if self.tokens is None else {**shape, "tokens": self.tokens}

    @property
    def dtype(self) -> torch.dtype:
        return torch.bfloat16 if self.ctx.is_cuda else torch.float32

    def setup(self, ctx: BenchContext) -> None:
        s = self.shape
        gen = self.generator(ctx.seed)
        self.host_w1, self.host_w2 = [], []
        for _ in range(s["layers"]):  # drawn on the device, then parked in pinned host memory
            w1 = self.randn(s["hidden"], s["d"], gen=gen) / s["d"] ** 0.5
            w2 = self.randn(s["d"], s["hidden"], gen=gen) / s["hidden"] ** 0.5
            for w, host in ((w1, self.host_w1), (w2, self.host_w2)):
                host.append(w.to("cpu", self.dtype).pin_memory() if ctx.is_cuda else w.to(self.dtype))
        self.prepare()

    def prepare(self) -> None:
        """Per-side device buffers and streams; not timed."""

    def device_buffers(self) -> tuple[torch.Tensor, torch.Tensor]:
        """One layer's worth of device memory for W1 and W2."""
        return (torch.empty_like(self.host_w1[0], device=self.device),
                torch.empty_like(self.host_w2[0], device=self.device))

    def make_inputs(self, seed: int) -> torch.Tensor:
        s = self.shape
        return self.randn(s["tokens"], s["d"], gen=self.generator(seed), dtype=self.dtype)

    def reference(self, x: torch.Tensor) -> torch.Tensor:
        y = x.double()
        for w1, w2 in zip(self.host_w1, self.host_w2):
            y = mlp_layer(y, w1.to(x.device, torch.float64), w2.to(x.device, torch.float64))
        return y

    def workload(self) -> Workload:
        s = self.shape
        item = torch.empty(0, dtype=self.dtype).element_size()
        weights = 2 * s["d"] * s["hidden"] * s["layers"]
        return Workload(flops=2 * weights * s["tokens"],
                        flops_dtype="bf16" if self.ctx.is_cuda else "fp32",
                        link_bytes=weights * item, link="h2d",
                        units=s["tokens"], unit_name="tokens")
