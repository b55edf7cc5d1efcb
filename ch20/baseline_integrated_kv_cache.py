"""Baseline: the decode loop people write first. Eager steps over a torch.cat-grown bf16 cache.

Prefill writes the prompts' K/V; each decode step calls the decoder's own `decode`, whose
attention appends the new token's K and V with `torch.cat` (a fresh tensor one token longer
per layer, the whole cache copied: the ch13 `kv_cache` flaw) and reads the cache back at its
exact length. Every step launches its ~250 kernels from Python; at batch 32 a step's GPU
work is expected to be a few hundred microseconds (~0.6 GB of weights plus up to ~0.5 GB of
KV reads and cat copies, at HBM speed), so the launches are expected to set the pace.
"""
from __future__ import annotations

import torch

from ch20._integrated_kv_cache_common import CatKV, DecodeLoop


class CatCacheEager(DecodeLoop):
    cpu_bound = "each eager decode step's ~250 kernel launches from Python set its time"

    @torch.no_grad()
    def run(self, stream: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        s = self.shape
        kv = CatKV(self.cfg, s.batch, self.device)
        slots = torch.arange(s.batch, device=self.device)
        self.model.prefill(stream[:, :s.prompt], kv, slots)
        scores = []
        for t in range(s.steps):
            pos = s.prompt + t
            positions = torch.full((s.batch,), pos, device=self.device)
            logits = self.model.decode(stream[:, pos], kv, slots, positions, max_len=pos + 1)
            scores.append(self.score(logits, stream[:, pos + 1]))
        return torch.stack(scores), logits.float()


get_benchmark = CatCacheEager

if __name__ == "__main__":
    from core.single import main
    main(CatCacheEager)
