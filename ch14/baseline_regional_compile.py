"""Baseline: `torch.compile(model)` on the whole 24-block model.

Dynamo traces the forward through all 24 blocks into one graph, and Inductor lowers,
schedules and generates code for all of it: the work grows with the depth, although every
block is the same code with different weights. (Identical generated kernels are compiled by
Triton once; the tracing, lowering and scheduling are not shared.)

Why ~110 s on an H100, not 20: the gate needs two or three cold starts per side (the median
of three, core.compile_time; a gate run stops after two once they decide it), each a fresh
process compiling from empty caches, ~29 s here plus ~18 s regional; fewer blocks would
shrink the very cost the pair is about (the whole-model compile grows with the depth).
"""
from __future__ import annotations

import torch

from ch14._regional_compile_common import RegionalBench

# Three cold starts per side (core.compile_time), each a full compile, plus the steady-state run.
TIMEOUT_S = 1800


class WholeModelCompile(RegionalBench):
    slow_because = ("the gate needs two or three cold starts per side, each a fresh process "
                    "compiling 24 blocks from empty caches (~29 s whole-model, ~18 s regional "
                    "on an H100); fewer blocks would shrink the cost the pair is about")
    def compile(self, model: torch.nn.Module) -> torch.nn.Module:
        return torch.compile(model)


get_benchmark = WholeModelCompile

if __name__ == "__main__":
    from core.single import main
    main(WholeModelCompile)
