"""Optimized: the same gating as one fused Triton pass over the logits (plus a small scan).

Each program holds a block of tokens' logits in registers, does softmax, top-k, the
renormalisation and the in-block positions there, and writes only the answers; the
per-block expert counts are scanned (a [blocks, experts] cumsum) and added to the ranks by a
second tiny kernel. No sort, no intermediate in memory. Why Triton rather than torch.compile:
inductor keeps `topk` and the sort as ATen kernels, so it cannot fuse the chain into one
pass; the hand-written kernel's in-block scan can. Expected: several times faster than the
eager chain (one read of the 4 MiB of logits instead of a dozen kernels and a radix sort).
"""
from __future__ import annotations

import torch

from ch17._moe_gating_common import Gating, GatingBench
from core.benchmark import BenchContext, Requirements


class FusedGating(GatingBench):
    requires = Requirements(modules=("triton",))
    supports_cpu = False  # Triton needs a GPU (the tests run it under TRITON_INTERPRET=1)

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        from ch17._moe_gating_kernel import buffers, fused_gating  # lazy: needs triton

        self.kernel = fused_gating
        s = self.size
        self.out = buffers(s.tokens, s.experts, s.top_k, ctx.device)
        self.kernel(self.make_inputs(ctx.seed + 1), self.top_k, out=self.out)  # compile now
        for buffer in self.out:
            buffer.fill_(-1)  # nothing from the warm-up call survives into a timed one

    def run(self, logits: torch.Tensor) -> Gating:
        return self.kernel(logits, self.top_k, out=self.out)


get_benchmark = FusedGating

if __name__ == "__main__":
    from core.single import main
    main(FusedGating)
