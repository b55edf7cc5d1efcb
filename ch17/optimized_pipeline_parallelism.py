"""Optimized: micro-batched pipeline, hand-offs overlapped on side streams.

The batch is split into micro-batches. GPU 0 queues stage 0 of every micro-batch back to
back; after each, an event lets a send stream on GPU 0 copy that micro-batch's activations
to GPU 1 (the destination end of PyTorch's cross-device barrier on a receive stream of GPU 1),
and GPU 1's compute stream waits only for that copy before its stage 1. So GPU 0 computes
micro-batch i+1 while the link carries i and GPU 1 computes i-1. Nothing waits on the host.
"""
from __future__ import annotations

import torch

from ch17._pipeline_parallelism_common import PipelineBench
from core.benchmark import BenchContext


class MicroBatchedPipeline(PipelineBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        if ctx.is_cuda:
            self.send = torch.cuda.Stream(self.devices[0])
            self.receive = torch.cuda.Stream(self.devices[1])

    def run(self, tokens: torch.Tensor) -> torch.Tensor:
        stage0, stage1 = self.stages
        if not self.ctx.is_cuda:  # the CPU "split" (tests): the same schedule, no streams
            return torch.cat([stage1(stage0(mb)) for mb in tokens.chunk(self.sizes.micro_batches)])
        compute0 = torch.cuda.current_stream(stage0.device)
        compute1 = torch.cuda.current_stream(stage1.device)
        outs = []
        for mb in tokens.chunk(self.sizes.micro_batches):
            hidden = stage0(mb)                              # GPU 0, its compute stream
            self.send.wait_stream(compute0)                  # the copy follows this stage 0
            with torch.cuda.stream(self.send), torch.cuda.stream(self.receive):
                moved = hidden.to(stage1.device, non_blocking=True)
            hidden.record_stream(self.send)                  # freed only after the copy read it
            compute1.wait_stream(self.receive)               # GPU 1 starts once it has arrived
            moved.record_stream(compute1)
            outs.append(stage1(moved))                       # GPU 1, its compute stream
        return self.joined(torch.cat(outs))


get_benchmark = MicroBatchedPipeline

if __name__ == "__main__":
    from core.single import main
    main(MicroBatchedPipeline)
