"""Shared by `expert_parallel` (every GPU): the chapter's MoE layer with its experts split
across ranks (expert parallelism, EP = world).

Each rank holds experts [rank·E/world, (rank+1)·E/world) of the 8 experts of 1408 (d_model
2048, top-2, bf16) and the router (replicated), and serves its own 8192 tokens. A forward is:
route locally → *dispatch* every (token, expert) row to the rank that owns the expert (an
all-to-all) → the local experts run on what arrived (sort by local expert + grouped GEMM,
as `moe_dispatch`) → *combine*: an all-to-all sends the outputs back → each rank unsorts and
sums its tokens' k outputs with the router weights. About 16384 rows of 4 KiB leave each
rank per direction, (n-1)/n of them to other GPUs (half, ~32 MiB each way, on 2 GPUs).

The pair runs on every GPU present (`bench run --gpus N` for fewer) and scales weakly: 8192
tokens per rank at every count, and the same 8 experts split over the ranks (the count must
divide 8: 2, 4 or 8 GPUs, or gloo ranks on a CPU; setup() refuses another), so each rank's
expert FLOPs stay the same with balanced routing while the share of rows that crosses the
links grows from 1/2 to 7/8.

The sides differ only in how the two all-to-alls are done (routing, local experts and the
combine are shared functions). make_inputs builds every rank's tokens ([world, N, d]) so that
reference() can compute a rank's answer with all experts on one device (float64 experts on
the model's own routing); each rank returns the layer output for its own tokens.

Both sides compute the local experts on the same rows in the same order (grouped by source
rank, then by expert), so outputs match to the last bit in practice; the tolerance is
bf16's, as for `moe_dispatch`.
"""
from __future__ import annotations

from dataclasses import replace

import torch
import torch.distributed as dist

from ch15._moe_dispatch_common import (BF16_TOLERANCE, REFERENCE_TOLERANCE, TINY_MOE, TOKENS,
                                       combine, expert_counts, expert_offsets, moe_config, reference_moe,
                                       route, swiglu_grouped)
from ch15.decoder import MoE
from core.benchmark import BenchContext, Benchmark, Requirements, Workload

CAPACITY_FACTOR = 1.25  # the padded baseline's per-destination capacity, × the balanced load
# The CPU's MoE: the decoder's TINY widths with 8 experts, as on the GPU, so that they split
# over 2, 4 or 8 gloo ranks (moe_dispatch's 4 do not split over 8).
CPU_MOE = replace(TINY_MOE, n_experts=8)
# More tokens on the CPU than moe_dispatch's 64, and more capacity: the tiny router (64-wide
# weights) is less balanced than the GPU's. One of its 8 experts draws up to 1.15× its share
# at any token count (weight seeds 0-5), and at 8 ranks (one expert each) 512 tokens put up to
# 1.39× the balanced rows on one rank (8 weight seeds × 100 draws; 1.27× at 4 ranks), past
# 1.25×. 2× leaves ~11 standard deviations of a rank's count above the worst expert's mean.
# The GPU's 8192 tokens stay within 1.07× at 8 ranks (3 weight seeds × 20 draws).
CPU_TOKENS = 512
CPU_CAPACITY_FACTOR = 2.0


def local_experts(rows: torch.Tensor, local_ids: torch.Tensor, w_gate_up_t: torch.Tensor,
                  w_down_t: torch.Tensor) -> torch.Tensor:
    """This rank's experts on the rows that arrived (any order): sort by local expert,
    grouped GEMMs, unsort. Returns outputs in the rows' order."""
    order, offs = expert_offsets(local_ids, w_gate_up_t.shape[0])
    y = swiglu_grouped(rows[order], offs, w_gate_up_t, w_down_t)
    return torch.empty_like(y).index_copy_(0, order, y)


def split_sizes(expert_counts: torch.Tensor, world: int) -> torch.Tensor:
    """Rows per destination rank from rows per (global) expert: experts are split into
    `world` contiguous equal ranges, so destination r gets the sum of its range."""
    return expert_counts.view(world, -1).sum(dim=1)


def source_expert_ids(recv_counts: torch.Tensor, total: int | None = None) -> torch.Tensor:
    """recv_counts [world, E_local]: rows received from source s for local expert e, laid out
    source by source and, inside a source, expert by expert (each sender sorts by expert).
    Returns the local expert id of every received row, on the device; with `total` (the row
    count, already on the host) there is no host sync."""
    e_local = recv_counts.shape[1]
    ids = torch.arange(e_local, device=recv_counts.device).repeat(recv_counts.shape[0])
    return ids.repeat_interleave(recv_counts.reshape(-1), output_size=total)


class ExpertParallelBench(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, scales="weak")
    tolerance = BF16_TOLERANCE
    reference_tolerance = REFERENCE_TOLERANCE

    def tokens(self) -> int:
        return TOKENS if self.ctx.is_cuda else CPU_TOKENS

    def setup(self, ctx: BenchContext) -> None:
        self.rank, self.world = dist.get_rank(), dist.get_world_size()
        self.cfg = moe_config(ctx.device) if ctx.is_cuda else CPU_MOE
        if self.cfg.n_experts % self.world:
            raise ValueError(f"{self.cfg.n_experts} experts do not split over {self.world} ranks")
        self.e_local = self.cfg.n_experts // self.world
        moe = self.full_moe()
        self.router = moe.router
        mine = slice(self.rank * self.e_local, (self.rank + 1) * self.e_local)
        self.w_gate_up = moe.w_gate_up[mine].clone()
        self.w_down = moe.w_down[mine].clone()
        self.w_gate_up_t, self.w_down_t = self.w_gate_up.transpose(1, 2), self.w_down.transpose(1, 2)
        self.rows = self.tokens() * self.cfg.top_k  # assignments this rank sends per call

    def full_moe(self) -> MoE:
        """All experts, the same on every rank (one seed): each rank keeps its slice."""
        return MoE(self.cfg, torch.Generator(device=self.ctx.device).manual_seed(self.ctx.seed))

    def make_inputs(self, seed: int) -> torch.Tensor:
        return self.randn(dist.get_world_size(), self.tokens(), self.cfg.d_model,
                          gen=self.generator(seed), dtype=self.cfg.dtype)

    def run(self, inputs: torch.Tensor) -> torch.Tensor:
        x = inputs[self.rank]
        weights, experts = route(x, self.router, self.cfg.top_k)
        k = self.cfg.top_k
        flat = experts.reshape(-1)
        order = flat.argsort(stable=True)  # rows sorted by expert, hence by destination rank
        counts = expert_counts(flat, self.cfg.n_experts)
        y_sorted = self.exchange(x[order // k], flat[order], counts)
        return combine(y_sorted, order, weights)

    def exchange(self, rows: torch.Tensor, ids: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
        """Dispatch `rows` (sorted by global expert id `ids`; `counts` rows per expert) to the
        experts' ranks, run them there, and return their outputs in the rows' order."""
        raise NotImplementedError

    def reference(self, inputs: torch.Tensor) -> torch.Tensor:
        moe = self.full_moe()
        return reference_moe(inputs[self.rank], moe.router, moe.w_gate_up, moe.w_down,
                             self.cfg.top_k)

    def workload(self) -> Workload:
        cfg, n = self.cfg, self.tokens()
        # per rank, with balanced routing: its share of the expert FLOPs, the router's whole
        flops = 2 * self.rows * 3 * cfg.d_model * cfg.ffn + 2 * n * cfg.d_model * cfg.n_experts
        return Workload(flops=flops, flops_dtype="bf16" if cfg.dtype == torch.bfloat16 else "fp32",
                        units=n, unit_name="tokens")
