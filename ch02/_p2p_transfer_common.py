"""Shared by `p2p_transfer`: move a 256 MiB buffer from GPU 0 to GPU 1.

Sizes of this order move between GPUs when a pipeline stage hands over a micro-batch's
activations or a prefill server hands a request's KV cache to a decode server. One process
drives both GPUs (the harness's rank 0; rank 1 waits and returns nothing: `rank0_output`).
make_inputs puts the source on GPU 0; run() returns the copy on GPU 1, which must equal it.
The rate is judged against the measured one-way P2P ceiling (`hw peak --gpus 2`).
"""
from __future__ import annotations

import torch
import torch.distributed as dist

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

MIB = 2**20
SIZE = 256 * MIB


class PeerTransfer(Benchmark):
    requires = Requirements(gpus=2)
    rank0_output = True
    tolerance = Tolerance(0.0, 0.0)  # a copy: bit for bit

    def setup(self, ctx: BenchContext) -> None:
        self.active = dist.get_rank() == 0
        if self.active:
            self.source_gpu, self.target_gpu = torch.device("cuda", 0), torch.device("cuda", 1)
            self.prepare()

    def prepare(self) -> None:
        """Buffers a side allocates once (none by default)."""

    def make_inputs(self, seed: int) -> torch.Tensor:
        if dist.get_rank() != 0:
            return torch.empty(0, device=self.device)  # rank 1 takes part in no copy
        gen = torch.Generator(device="cuda:0").manual_seed(seed)
        return torch.randn(SIZE // 4, generator=gen, device="cuda:0")

    def run(self, x: torch.Tensor) -> torch.Tensor | None:
        return self.transfer(x) if self.active else None

    def transfer(self, x: torch.Tensor) -> torch.Tensor:
        raise NotImplementedError

    def workload(self) -> Workload:
        return Workload(link_bytes=SIZE, link="p2p_oneway")
