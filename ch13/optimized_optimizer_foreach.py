"""Optimized (teaching pair): AdamW(foreach=True), what torch picks by default on a GPU.

The foreach path launches one `_foreach_*` kernel per operation for a whole list of tensors
(multi-tensor apply), so the launch count no longer grows with the number of parameters;
but each operation is still its own pass over memory. Against the per-parameter loop this
is the launch saving alone; `optimizer_fused` measures what fusing the passes adds on top.
"""
from __future__ import annotations

import torch

from ch13._optimizer_common import LR, WEIGHT_DECAY, AdamWStep


class ForeachAdamW(AdamWStep):
    def optimizer(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        return torch.optim.AdamW(params, lr=LR, weight_decay=WEIGHT_DECAY, foreach=True)


get_benchmark = ForeachAdamW

if __name__ == "__main__":
    from core.single import main
    main(ForeachAdamW)
