"""Optimized: regional compilation, the repeated block compiled once (PyTorch's recipe).

`block.compile()` on each of the 24 blocks wraps its forward in torch.compile in place. The
blocks share their code and differ only in their parameters, which Dynamo treats as inputs
(inlined nn.Module parameters, the default since torch 2.5), so the first block's call
compiles one graph and the other 23 reuse it after a guard check. The final RMSNorm stays
eager (one small kernel). Steady state should match the whole-model compile; what the
regional side gives up is fusion across block boundaries.

setup() checks that Dynamo built one graph, not one per block: were the parameters guarded
as constants, each block would recompile, and past the recompile limit (8) fall back to
eager, and a "fast compile" would then be a model that was never compiled.
"""
from __future__ import annotations

import torch
from torch._dynamo.utils import counters

from ch14._regional_compile_common import RegionalBench


class RegionalCompile(RegionalBench):
    def setup(self, ctx) -> None:
        graphs_before = counters["stats"]["unique_graphs"]
        super().setup(ctx)
        graphs = counters["stats"]["unique_graphs"] - graphs_before
        if graphs > 2:  # one per block means no reuse (2 allows for one graph break)
            raise RuntimeError(f"regional compile built {graphs} graphs for {self.cfg.n_layers} "
                               f"identical blocks: the compiled block is not being reused")

    def compile(self, model: torch.nn.Module) -> torch.nn.Module:
        for block in model.layers:
            block.compile()
        return model


get_benchmark = RegionalCompile

if __name__ == "__main__":
    from core.single import main
    main(RegionalCompile)
