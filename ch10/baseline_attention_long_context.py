"""Chunked eager causal attention: 4096 query rows at a time, keys only up to the chunk's end.

At S = 32768 the causal score matrix is 16 GiB in bf16 even for its unmasked half, 32 GiB as
the full S x S that the textbook formula writes (and its softmax as much again), so the eager
formula runs per chunk of query rows. A chunk's rows see keys 0..chunk end and no further:
the blocks to its right are entirely in its future, and computing them only to mask them
would nearly double the work (64 blocks of 4096 x 4096 per head instead of 36). Inside the chunk's diagonal block the future half is set to -inf.
Every chunk's scores still go to HBM and back: written by the first matmul, read and written
by the softmax, read by the second matmul.
"""
import math

import torch

from ch10._attention_long_context_common import LongContextAttentionBench
from core.benchmark import BenchContext

CHUNK = 4096  # query rows per step: the last chunk's scores are 16·4096·32768 bf16 = 4 GiB


class ChunkedEagerAttention(LongContextAttentionBench):
    # measured on an H200 (2026-11-28): 22.2 s for the pair (checks 10, timing 8)
    slow_because = ("three flash sides are checked and timed against a 39 ms eager baseline "
                    "at sequence 32768, the length the lesson is about")

    def setup(self, ctx: BenchContext) -> None:
        # In every chunk's diagonal block, key j lies in query row r's future when j > r:
        # one pattern for all chunks, built once.
        self.future = torch.ones(CHUNK, CHUNK, dtype=torch.bool, device=ctx.device).triu(1)

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        seq = q.shape[-2]
        out = self.nan_like(q)  # a chunk the loop failed to write fails verification
        # Largest chunk first: the caching allocator then carves each later, smaller chunk's
        # scores out of the blocks the first one got. In ascending order every chunk needs a
        # larger block than any cached one and the cache grows to their sum (an H100: 37 GiB
        # reserved instead of 9).
        for start in reversed(range(0, seq, CHUNK)):
            end = min(start + CHUNK, seq)
            out[:, :, start:end] = self.attend_chunk(q[:, :, start:end], k[:, :, :end],
                                                     v[:, :, :end])
        return out

    def attend_chunk(self, q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        """Rows q (the last rows before k's end) against keys k; scores freed on return."""
        rows = q.shape[-2]
        # Scale the chunk's queries rather than its scores: a pass over rows x D values
        # instead of one over rows x keys.
        scores = torch.matmul(q * (1.0 / math.sqrt(q.shape[-1])), k.transpose(-2, -1))
        scores[..., -rows:].masked_fill_(self.future[:rows, :rows], float("-inf"))
        return torch.matmul(torch.softmax(scores, dim=-1), v)  # softmax: fp32 inside, bf16 out


get_benchmark = ChunkedEagerAttention

if __name__ == "__main__":
    from core.single import main
    main(ChunkedEagerAttention)
