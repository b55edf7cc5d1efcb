"""Baseline: each batch goes through every stage before the next batch starts.

`frames.to(device)` copies the batch and returns once the copy is done; preprocess, model
and postprocess are enqueued behind it; `.cpu()` copies the top-5 back and waits for all of
it. The loop a first inference script writes: correct, and at any moment either the copy
engine or the SMs (or neither, while the host turns around) is busy, never both.
"""
from __future__ import annotations

import torch

from ch20._pipeline_sequential_common import InferencePipeline


class SequentialPipeline(InferencePipeline):
    def run(self, frames: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        probs, ids = [], []
        for batch in frames:
            p, i = self.infer(batch.to(self.device))
            probs.append(p.cpu())  # waits for this batch's whole pipeline
            ids.append(i.cpu())
        return torch.cat(probs), torch.cat(ids)


get_benchmark = SequentialPipeline

if __name__ == "__main__":
    from core.single import main
    main(SequentialPipeline)
