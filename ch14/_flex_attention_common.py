"""Shared by the `flex_attention` pair: bidirectional ALiBi attention, bf16, B=4 H=16 S=4096 D=64.

ALiBi (Press et al.) replaces position embeddings with a per-head linear penalty on the
distance between query and key: score(i, j) += -slope_h * |i - j|, slopes 2^(-8 h / H) for
h = 1..H. The symmetric |i - j| form is the encoder variant (MosaicBERT); no causal mask,
so both sides compute every score and the pair isolates one question: materialize the bias,
or compute it inside the kernel.

Tolerance: the baseline's bias is a bf16 tensor (SDPA takes a mask in the query's dtype);
FlexAttention computes it in fp32. The bias is rounded only where it is large and exp()
makes the difference vanish; measured on the CPU at S=2048 the rounded bias moved outputs
by at most 1 bf16 ulp. rtol = atol = 2e-2 leaves room for the two kernels' summation orders.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

B, H, S, D = 4, 16, 4096, 64


def alibi_slopes(heads: int, device: str | torch.device) -> torch.Tensor:
    """slope_h = 2^(-8 h / heads), h = 1..heads (fp32)."""
    return torch.exp2(-8.0 * torch.arange(1, heads + 1, device=device) / heads)


def alibi_bias(slopes: torch.Tensor, seq: int) -> torch.Tensor:
    """The bias as a tensor [heads, seq, seq] (fp32): what the baseline materializes."""
    pos = torch.arange(seq, device=slopes.device)
    return -slopes[:, None, None] * (pos[:, None] - pos[None, :]).abs()


def alibi_score_mod(slopes: torch.Tensor):
    """The same bias as a FlexAttention score_mod, computed per score inside the kernel."""
    def score_mod(score, b, h, q_idx, kv_idx):
        return score - slopes[h] * (q_idx - kv_idx).abs()

    return score_mod


class AlibiBench(Benchmark):
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def setup(self, ctx: BenchContext) -> None:
        self.slopes = alibi_slopes(H, ctx.device)
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (the bias, or the compiled kernel); not timed."""

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return tuple(self.randn(B, H, S, D, gen=gen, dtype=torch.bfloat16) for _ in range(3))

    def workload(self) -> Workload:
        return Workload(flops=4 * B * H * S * S * D, flops_dtype="bf16",  # QK^T and PV
                        units=B * S, unit_name="tokens")
