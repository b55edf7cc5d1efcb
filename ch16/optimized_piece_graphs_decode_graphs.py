"""Variant: the whole decode step as one CUDA graph per batch bucket (static KV cache).

setup() captures `Decoder.decode` on each bucket's static buffers, attention included: the
KV write and read go to fixed addresses of the static ContiguousKV, and the read length is
fixed at capture (the batch's longest context, what eager reads too; an engine captures at
its maximum and uses a length-aware kernel, e.g. FlashAttention's `cache_seqlens`). run()
loads tokens, slots and positions into the bucket's buffers (batch 20 -> bucket 24, 4 padded
rows) and replays: one launch for the step. SGLang's decode graphs and vLLM's FULL cudagraph
mode work this way.
"""
from __future__ import annotations

import torch

from ch16._piece_graphs_common import GraphedDecodeBench, StaticBatch, bucket_for


class FullStepGraphs(GraphedDecodeBench):
    def capture(self, sb: StaticBatch) -> None:
        sb.graph = torch.cuda.CUDAGraph()
        with torch.no_grad(), torch.cuda.graph(sb.graph, pool=self.pool):
            sb.logits = self.model.decode(sb.tokens, self.kv, sb.slots, sb.positions, max_len=self.kv_len)

    def run(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[0]
        sb = self.static[bucket_for(n, self.buckets)]
        sb.load(tokens, self.slots, self.positions)
        sb.graph.replay()
        return sb.logits[:n].clone()


get_benchmark = FullStepGraphs

if __name__ == "__main__":
    from core.single import main
    main(FullStepGraphs)
