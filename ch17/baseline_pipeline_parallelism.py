"""Baseline: naive two-GPU model parallelism, one micro-batch in flight.

The whole batch runs through stage 0 on GPU 0, its activations are copied to GPU 1, then
stage 1 runs: what Accelerate's `device_map="auto"` does. GPU 1 idles during stage 0 and
GPU 0 during the copy and stage 1.
"""
from __future__ import annotations

import torch

from ch17._pipeline_parallelism_common import PipelineBench


class OneInFlight(PipelineBench):
    # the model fits one GPU, where it would run faster than split over two: the pipeline's
    # schedule is the lesson, not a headline (an audit, 2026-11-28)
    teaching = True

    def run(self, tokens: torch.Tensor) -> torch.Tensor:
        stage0, stage1 = self.stages
        hidden = stage0(tokens)
        return self.joined(stage1(hidden.to(stage1.device)))


get_benchmark = OneInFlight

if __name__ == "__main__":
    from core.single import main
    main(OneInFlight)
