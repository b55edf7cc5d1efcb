"""Baseline (teaching): each sequence's step on the default stream, then a device-wide sync.

The book's starting point: after each sequence's append and attention the code calls
torch.cuda.synchronize(), as code does that reads a length back with .item(), checks a flag
on the host, or was written to be "safe" about the cache. Each sync drains the GPU; the
next sequence's kernels are launched only after the host wakes up, so every sequence adds
the host's launch latency to the GPU's time, and no two sequences ever overlap. The sync is
the lesson, so the pair is tagged `teaching`; without it, one stream would still run the
sequences one after another.
"""
import torch

from ch11._stream_ordered_kv_cache_common import KvCacheBench


class SyncPerSequence(KvCacheBench):
    teaching = True

    def run(self, inputs: tuple[torch.Tensor, ...]) -> torch.Tensor:
        q = inputs[0]
        out = torch.empty_like(q)
        for i in range(len(self.lengths)):
            out[i].copy_(self.step(i, *inputs))
            torch.cuda.synchronize()
        return out


get_benchmark = SyncPerSequence

if __name__ == "__main__":
    from core.single import main
    main(SyncPerSequence)
