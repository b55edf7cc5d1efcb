"""Shared by the autotuning pair: row softmax over a mix of three fp32 shapes in one run().

The mix (each shape is ~64 MB in and ~64 MB out, so none dominates the total):
  131072 x 128     short rows: attention scores over a 128-token window, many heads/queries
  4096 x 4096      square: one head's scores in a 4096-token prefill
  128 x 128256     long rows: next-token probabilities over Llama 3's vocabulary, batch 128

One Triton kernel (_autotuning_kernel.py) takes a launch configuration (rows per program,
columns per tile, warps). No configuration suits all three: short rows want many rows per
program and small tiles (a 4096-column tile would leave 97% of its lanes masked on a
128-column row), long rows want one row per program and wide tiles (32 rows per program
would leave 4 programs for 132 SMs).

The sides differ only in how each shape gets its configuration (choose(), in setup(), not
timed):
  baseline : predicted from the row length by the rule a hand-written softmax uses (tile =
             row rounded up to a power of two, capped; short rows packed several to a
             program; warps scaled with the tile), with no timing;
  optimized: measured: every configuration in candidates() timed on every shape once with
             triton.testing.do_bench on throwaway inputs (3 shapes x 7 configurations,
             expected to take seconds, mostly Triton compiles), the fastest kept per shape.
The rule's choice for each of the three shapes is one of the candidates, so the search can
only find something at least as fast, up to timing noise; the pair measures what measuring
buys over predicting. Expected (not measured): a small gain at most, on shapes where the
rule's compromises (the tile cap for the long rows, 16 rows of 128 per program) are not
this GPU's best; if the rule picks the winner for every shape, the sides tie and the table
says so.

Tolerance: configurations split a row into different tiles, so the running max and sum see
the values in different orders and the rescaling factors exp(m - m') differ: a few fp32
ulps (~1e-6 relative) between configurations, more where many rescales compound. rtol 1e-4
keeps a wide margin; atol 1e-9 covers probabilities near zero (the long rows' typical value
is ~1e-5). `reference()` is torch's softmax in float64.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

import torch

from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload

if TYPE_CHECKING:
    from ch06._autotuning_kernel import LaunchConfig

Shape = tuple[int, int]
Scratch = dict[Shape, tuple[torch.Tensor, torch.Tensor]]  # {shape: (x, y)} throwaway tensors
SHAPES: tuple[Shape, ...] = ((131072, 128), (4096, 4096), (128, 128256))


def candidates() -> tuple[LaunchConfig, ...]:
    """The search space: each entry a LaunchConfig (rows per program, tile width, warps)."""
    from ch06._autotuning_kernel import LaunchConfig

    return (LaunchConfig(16, 128, 4), LaunchConfig(64, 128, 8), LaunchConfig(4, 1024, 8),
            LaunchConfig(1, 4096, 4), LaunchConfig(1, 4096, 8), LaunchConfig(1, 4096, 16),
            LaunchConfig(1, 16384, 16))


class SoftmaxMixBench(Benchmark):
    requires = Requirements(modules=("triton",))
    tolerance = Tolerance(rtol=1e-4, atol=1e-9)
    shapes: tuple[Shape, ...] = SHAPES

    def setup(self, ctx: BenchContext) -> None:
        from ch06._autotuning_kernel import softmax_rows

        self.softmax_rows = softmax_rows
        self.outputs = tuple(torch.empty(shape, device=ctx.device) for shape in self.shapes)
        scratch = self.make_inputs(ctx.seed + 1)  # throwaway data: searching, compiling
        self.config_for = self.choose(dict(zip(self.shapes, zip(scratch, self.outputs))))
        self.run(scratch)  # compile each shape's configuration, not timed
        for y in self.outputs:
            y.fill_(float("nan"))  # what run() never writes fails verification

    def choose(self, scratch: Scratch) -> dict[Shape, LaunchConfig]:
        """Each shape's launch configuration (the sides differ here); `scratch` holds
        throwaway (x, y) tensors of every shape that a search may launch on."""
        raise NotImplementedError

    def make_inputs(self, seed: int) -> tuple[torch.Tensor, ...]:
        gen = self.generator(seed)
        return tuple(self.randn(*shape, gen=gen) for shape in self.shapes)

    def run(self, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        for x, y in zip(xs, self.outputs):
            self.softmax_rows(x, y, self.config_for[tuple(x.shape)])
        return self.outputs

    def reference(self, xs: tuple[torch.Tensor, ...]) -> tuple[torch.Tensor, ...]:
        return tuple(torch.softmax(x.double(), dim=1) for x in xs)

    def workload(self) -> Workload:
        return Workload(bytes=sum(2 * 4 * rows * cols for rows, cols in self.shapes))
