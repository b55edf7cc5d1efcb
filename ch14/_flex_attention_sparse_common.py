"""Shared by the `flex_attention_sparse` pair: causal sliding-window attention, bf16,
B=2 H=16 S=8192 D=64, window W=1024 (Mistral/Gemma-style local attention).

Query i attends to keys j with i - W < j <= i. The mask does not depend on the data, so
each side builds its form of it once in setup(): a dense boolean [S, S] tensor for SDPA, a
BlockMask for FlexAttention.

Workload: the FLOPs the mask keeps, 4 * B * H * D * (allowed (i, j) pairs), for both sides;
the baseline spends ~8.5x that computing scores it then masks away. Tolerance: both sides mask
exactly (no float bias) and differ only in summation order and where they round to bf16.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

B, H, S, D = 2, 16, 8192, 64
WINDOW = 1024


def sliding_window(b, h, q_idx, kv_idx):
    """mask_mod: True where query q_idx may attend to key kv_idx (causal, last WINDOW keys)."""
    return (q_idx >= kv_idx) & (q_idx - kv_idx < WINDOW)


def dense_mask(seq: int, device: str | torch.device) -> torch.Tensor:
    """The same mask as a boolean [seq, seq] tensor (True = attend), as SDPA takes it."""
    pos = torch.arange(seq, device=device)
    diff = pos[:, None] - pos[None, :]
    return (diff >= 0) & (diff < WINDOW)


def allowed_pairs(seq: int) -> int:
    """(query, key) pairs the mask keeps: min(i + 1, WINDOW) summed over queries i."""
    w = min(WINDOW, seq)
    return w * seq - w * (w - 1) // 2


class WindowBench(Benchmark):
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    def setup(self, ctx: BenchContext) -> None:
        self.prepare()

    def prepare(self) -> None:
        """Per-variant setup (the dense mask, or the block mask and compiled kernel)."""

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        gen = self.generator(seed)
        return tuple(self.randn(B, H, S, D, gen=gen, dtype=torch.bfloat16) for _ in range(3))

    def workload(self) -> Workload:
        return Workload(flops=4 * B * H * D * allowed_pairs(S), flops_dtype="bf16",
                        units=B * S, unit_name="tokens")
