"""Shared by `paged_kv`: throughput at a fixed KV-cache memory budget.

Both sides run the same continuous-batching engine (ch15/_continuous_batching_common.py) over
the same number of KV bytes; they differ in how the cache hands out that memory.

- Baseline, `ContiguousKV`: every sequence reserves max_seq tokens up front, whatever its
  length. The budget (9 slots x 1024 tokens x 8 KiB = 72 MiB on the GPU) holds 8 sequences
  (one slot is the engine's scratch row), so at most 8 requests decode at once.
- Optimized, `PagedKV`: the same bytes as 16-token blocks; a request reserves the blocks its
  prompt + output need (~20 blocks for a ~320-token request), so ~28 fit in the budget.
  vLLM's PagedAttention/block manager (and SGLang's and TensorRT-LLM's paged KV) do this.

The offline run() serves a seeded batch of requests to the end and returns the token table;
the unit is generated tokens. Decode is memory- and launch-bound at these batch sizes, so a
step of 28 sequences costs about what a step of 8 does: more sequences per step is more
tokens per second.

Same tokens, by construction: both engines decode at the same fixed width (32 rows, idle
rows are padding) and attend over a fixed max_len, so a sequence's logits do not depend on
how many others run beside it (see the continuous-batching module). The baseline thereby
pays for 32 rows while filling 8; at these sizes the decode step's cost is the weights and
the launches, not the rows (to be confirmed on the GPU: the README lists it as a risk).
The paged side reserves each request's whole length at admission (no preemption needed);
vLLM allocates block by block and preempts when the pool runs dry.
"""
from __future__ import annotations

from dataclasses import dataclass, replace

from ch15._continuous_batching_common import ContinuousEngine, Engine, ServingBench, Sizes
from ch15.decoder import SMALL, TINY
from ch15.kv import ContiguousKV, KVCache, PagedKV
from core.benchmark import Workload
from core.goodput import SLO


@dataclass(frozen=True)
class Budget:
    contiguous_slots: int  # sequences the budget holds at max_seq each (plus one scratch slot)
    block_size: int = 16

    def tokens(self, max_seq: int) -> int:
        return (self.contiguous_slots + 1) * max_seq


class PagedBench(ServingBench):
    gpu = Sizes(cfg=replace(SMALL, max_seq=1024), width=32, requests=0, rate_rps=1.0,
                prompt_len=(64, 384), output_len=(32, 96), batch=32, slo=SLO(1.0, 1.0))
    cpu = Sizes(cfg=TINY, width=8, requests=0, rate_rps=1.0, prompt_len=(4, 24),
                output_len=(4, 16), batch=12, slo=SLO(1.0, 1.0))
    offline_output_len = None
    gpu_budget, cpu_budget = Budget(8), Budget(2)

    @property
    def budget(self) -> Budget:
        return self.gpu_budget if self.ctx.is_cuda else self.cpu_budget

    def make_kv(self) -> KVCache:
        raise NotImplementedError

    def engine(self) -> Engine:
        return ContinuousEngine(self.model, self.make_kv(), self.sizes.width)

    def workload(self) -> Workload:
        s = self.sizes
        # the expected count: each call draws its output lengths uniformly in the range
        return Workload(units=s.batch * sum(s.output_len) / 2, unit_name="tokens")


class ContiguousBudget(PagedBench):
    def make_kv(self) -> KVCache:
        return ContiguousKV(self.sizes.cfg, self.budget.contiguous_slots + 1, self.device)


class PagedBudget(PagedBench):
    def make_kv(self) -> KVCache:
        cfg, budget = self.sizes.cfg, self.budget
        blocks = budget.tokens(cfg.max_seq) // budget.block_size  # the same bytes as the baseline
        return PagedKV(cfg, num_blocks=blocks, max_seqs=self.sizes.width + 1, device=self.device,
                       block_size=budget.block_size)
