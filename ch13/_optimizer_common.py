"""Shared by `optimizer_foreach` (teaching) and `optimizer_fused`: one AdamW step over a
GPT-2-small-sized parameter set.

148 fp32 tensors, 124M parameters, shaped as GPT-2 small's (12 blocks of d 768 plus the
50257 x 768 token embedding): the realistic mix of a few huge tensors and many small ones
(biases, LayerNorm weights) that decides how much per-tensor launch overhead costs.

make_inputs(seed) gives this step's gradients (one per parameter). setup() draws the
parameters from the weight seed and then takes two AdamW steps with gradients drawn from that
seed too, so the measured step is a mid-training one (nonzero first and second moments,
bias corrections past step 1) rather than Adam's first step, which is nearly sign(grad)
and would verify little. run() installs the gradients and steps: it is `stateful`, and each
verification starts from a fresh setup(). It returns the updated parameters.
"""
from __future__ import annotations

import torch

from core.benchmark import BenchContext, Benchmark, Tolerance, Workload

LR, WEIGHT_DECAY = 1e-3, 0.1
WARM_STEPS = 2


def gpt2_small_shapes(d: int = 768, layers: int = 12, vocab: int = 50257, ctx: int = 1024
                      ) -> list[tuple[int, ...]]:
    """The parameter shapes of GPT-2 small (tied embedding counted once)."""
    block = [(d,), (d,), (3 * d, d), (3 * d,), (d, d), (d,), (d,), (d,), (4 * d, d), (4 * d,),
             (d, 4 * d), (d,)]
    return [(vocab, d), (ctx, d), *block * layers, (d,), (d,)]


CUDA_SHAPES = gpt2_small_shapes()
CPU_SHAPES = gpt2_small_shapes(d=16, layers=2, vocab=64, ctx=32)


class AdamWStep(Benchmark):
    supports_cpu = True
    stateful = True
    # Every side computes AdamW in fp32 from the same gradients and state; the
    # implementations order the same operations differently (a few ulps of the update,
    # ~1e-10 here). A skipped or doubled step moves parameters by ~LR = 1e-3.
    tolerance = Tolerance(rtol=1e-5, atol=1e-6)

    @property
    def shapes(self) -> list[tuple[int, ...]]:
        return CUDA_SHAPES if self.ctx.is_cuda else CPU_SHAPES

    def optimizer(self, params: list[torch.Tensor]) -> torch.optim.Optimizer:
        raise NotImplementedError

    def setup(self, ctx: BenchContext) -> None:
        gen = self.generator(ctx.seed)
        self.params = [(0.02 * self.randn(*s, gen=gen)).requires_grad_() for s in self.shapes]
        self.opt = self.optimizer(self.params)
        for _ in range(WARM_STEPS):  # a mid-training state; also warms the kernels up
            self.step([self.randn(*s, gen=gen) for s in self.shapes])

    def make_inputs(self, seed: int) -> list[torch.Tensor]:
        gen = self.generator(seed)
        return [self.randn(*s, gen=gen) for s in self.shapes]

    def step(self, grads: list[torch.Tensor]) -> None:
        for p, g in zip(self.params, grads):
            p.grad = g  # no copy; AdamW reads gradients and never writes them
        self.opt.step()

    def run(self, grads: list[torch.Tensor]) -> list[torch.Tensor]:
        self.step(grads)
        for p in self.params:
            p.grad = None  # do not keep the caller's tensors alive past the call
        return [p.detach() for p in self.params]

    def workload(self) -> Workload:
        n = sum(torch.Size(s).numel() for s in self.shapes)
        # fp32 reads of param, grad, exp_avg, exp_avg_sq; writes of param and both moments
        return Workload(bytes=7 * 4 * n, units=n, unit_name="params")
