"""ch09 `memory_bound` on the CPU: the bf16 side's error matches the derivation in
_memory_bound_common.py (and a wrong answer fails the tolerance), both sides agree and the
baseline agrees with float64, the workload places both sides far left of the ridge with half the
bytes on the bf16 side, the GPU shape is out of L2's reach, no global TF32 state leaks, and the
pair verifies through the harness."""
from __future__ import annotations

import math

import pytest
import torch

from ch09._memory_bound_common import (BF16_WEIGHTS_TOLERANCE, CPU_SHAPE, GPU_SHAPE,
                                       MemoryBoundBench)
from ch09.baseline_memory_bound import Fp32Gemv
from ch09.optimized_memory_bound import Bf16Gemv
from core import REPO_ROOT
from core.benchmark import BenchContext, shares_builder
from tests.conftest import cpu_only

CPU = BenchContext(seed=0, device="cpu")


def ready(cls: type[MemoryBoundBench], ctx: BenchContext = CPU) -> MemoryBoundBench:
    bench = cls()
    bench.ctx = ctx
    bench.setup(ctx)
    return bench


def close(got: torch.Tensor, want: torch.Tensor) -> bool:
    tol = BF16_WEIGHTS_TOLERANCE
    return torch.allclose(got, want, rtol=tol.rtol, atol=tol.atol)


@pytest.mark.parametrize("k", [256, 4096])
def test_bf16_error_matches_the_derivation_whatever_k(k):
    """sigma_err ≈ sqrt(2) * 1.7e-3 ≈ 2.4e-3 for y ~ N(0, 1), independent of K."""
    gen = torch.Generator().manual_seed(k)
    w = torch.randn(2048, k, generator=gen) / math.sqrt(k)
    x = torch.randn(8, k, generator=gen)
    exact = x.double() @ w.double().T
    rounded = x.bfloat16().double() @ w.bfloat16().double().T  # inputs rounded, exact sums
    sigma = (rounded - exact).std().item()
    assert 1.9e-3 < sigma < 2.9e-3, sigma
    assert 0.8 < exact.std().item() < 1.2  # the outputs' scale the atol is written for
    assert (rounded - exact).abs().max().item() < BF16_WEIGHTS_TOLERANCE.atol / 1.5


def test_sides_agree_on_cpu_and_the_baseline_agrees_with_float64():
    base, opt = ready(Fp32Gemv), ready(Bf16Gemv)
    assert shares_builder(base, opt)
    assert opt.w16.dtype == torch.bfloat16 and not hasattr(opt, "w")  # bf16 storage only
    outputs = []
    for seed in (1, 2):
        x = base.make_inputs(seed)
        assert x.shape == (CPU_SHAPE[0], CPU_SHAPE[2]) and x.dtype == torch.float32
        want, got = base.run(x), opt.run(x.clone())
        assert got.dtype == want.dtype == torch.float32 and got.shape == want.shape
        assert close(got, want)
        ref_tol = base.reference_tolerance
        assert torch.allclose(want.double(), base.reference(x), rtol=ref_tol.rtol, atol=ref_tol.atol)
        outputs.append(got)
    assert not torch.allclose(outputs[0], outputs[1])  # the answer follows the inputs


def test_a_wrong_answer_fails_the_tolerance():
    base, opt = ready(Fp32Gemv), ready(Bf16Gemv)
    x = base.make_inputs(3)
    want = base.run(x)
    opt.w16 = opt.w16.roll(1, dims=0)  # rows out of place: an indexing bug
    assert not close(opt.run(x), want)
    opt.w16 = base.w.to(torch.bfloat16) * 1.05  # a 5% scale error
    assert not close(opt.run(x), want)


def test_workload_is_memory_bound_and_the_bf16_side_moves_half_the_bytes():
    for ctx in (CPU, BenchContext(seed=0, device="cuda")):
        sizes = GPU_SHAPE if ctx.is_cuda else CPU_SHAPE
        fp32, bf16 = (cls.__new__(cls) for cls in (Fp32Gemv, Bf16Gemv))
        for bench in (fp32, bf16):
            bench.tokens, bench.out_features, bench.in_features = sizes
        w32, w16 = fp32.workload(), bf16.workload()
        assert w32.flops == w16.flops == 2 * math.prod(sizes)
        assert w32.bound == w16.bound == "memory"
        assert w32.flops / w32.bytes < 0.55 and w16.flops / w16.bytes < 1.1  # ridge: tens+
        assert 1.9 < w32.bytes / w16.bytes <= 2.0
        assert (w32.flops_dtype, w16.flops_dtype) == ("fp32", "bf16")
    t, n, k = GPU_SHAPE
    assert t == 1 and 2 * n * k > 8 * 50 * 2**20  # even the bf16 weight is ~9x a Hopper L2


def test_the_baseline_leaves_the_tf32_flag_as_it_found_it():
    base = ready(Fp32Gemv)
    flags = torch.backends.cuda.matmul
    before = flags.allow_tf32
    try:
        for state in (True, False):
            flags.allow_tf32 = state
            base.run(base.make_inputs(4))
            assert flags.allow_tf32 is state
    finally:
        flags.allow_tf32 = before


@cpu_only
def test_memory_bound_verifies_through_the_harness():
    from core.child import run_pair
    from tests.conftest import spec_for
    from core.discovery import discover

    chapter = next(c for c in discover(REPO_ROOT) if c.name == "ch09")
    pair = next(p for p in chapter.pairs if p.stem == "memory_bound")
    result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
    assert [(e.id, e.status) for e in result.examples] == [("ch09:memory_bound", "ok")], result.examples
