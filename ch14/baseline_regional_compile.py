"""Baseline: `torch.compile(model)` on the whole 24-block model.

Dynamo traces the forward through all 24 blocks into one graph, and Inductor lowers,
schedules and generates code for all of it: the work grows with the depth, although every
block is the same code with different weights. (Identical generated kernels are compiled by
Triton once; the tracing, lowering and scheduling are not shared.)
"""
from __future__ import annotations

import torch

from ch14._regional_compile_common import RegionalBench

# Three cold starts per side (core.compile_time), each a full compile, plus the steady-state run.
TIMEOUT_S = 1800


class WholeModelCompile(RegionalBench):
    def compile(self, model: torch.nn.Module) -> torch.nn.Module:
        return torch.compile(model)


get_benchmark = WholeModelCompile

if __name__ == "__main__":
    from core.single import main
    main(WholeModelCompile)
