"""ch09's Triton kernels, run on the CPU by Triton's interpreter (TRITON_INTERPRET=1).

The interpreter must be switched on before triton is imported, and other tests in the same
pytest process may import triton first, so the kernels run in one child process with the
variable set; it prints each check's result as JSON and the tests below assert on them.

Shapes are small and chosen to hit the edges: columns not a multiple of the block, M/N/K
not multiples of the tiles, a last GROUP_M group shorter than the others. The matmul
kernels are checked with fp16 and fp32 operands: the interpreter's `tl.dot` (Triton 3.9)
multiplies bf16 operands as their raw uint16 bit patterns, so bf16 cannot be checked here;
the kernels store in C's dtype, so on a GPU the same code runs the pair's bf16.
The elementwise_fusion pair also runs through its contract (setup, make_inputs, run) at a
small size, its Triton side against the eager baseline on two seeds' inputs.
"""
from __future__ import annotations

import importlib.util

import pytest

from tests.conftest import run_interpreted

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="triton is not installed")

CHILD = r'''
import json
import torch

from ch09._elementwise_fusion_common import epilogue
from ch09._elementwise_fusion_kernel import fused_epilogue
from ch09._triton_matmul_kernels import matmul_grouped, matmul_naive

results = {}
g = torch.Generator().manual_seed(0)


def record(name, got, expected, rtol, atol):
    unwritten = int(torch.isnan(got.double()).sum())
    err = float((got.double() - expected.double()).abs().max())
    ok = unwritten == 0 and torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol)
    results[name] = {"ok": bool(ok), "max_abs_err": err, "unwritten": unwritten}


for rows, cols, block in [(37, 300, 128), (8, 1024, 1024), (3, 2100, 1024)]:
    x = 3 * torch.randn(rows, cols, generator=g)
    w = 1 + 0.1 * torch.randn(cols, generator=g)
    b = 0.1 * torch.randn(cols, generator=g)
    out = torch.full_like(x, float("nan"))
    fused_epilogue(x, w, b, out=out, block=block)
    record(f"epilogue_{rows}x{cols}_block{block}", out, epilogue(x, w, b), 1e-5, 1e-6)

# (M, N, K, naive tiles, grouped tiles + GROUP_M)
SHAPES = [
    (64, 64, 64, (32, 32, 16), (32, 32, 16, 2)),
    # edges on M, N and K; 5 tile-rows in groups of 2: a short last group
    (80, 48, 72, (32, 32, 16), (16, 32, 16, 2)),
    (96, 112, 40, (32, 64, 16), (32, 16, 32, 4)),
]
for dtype, rtol, atol in [(torch.float16, 1e-2, 1e-2), (torch.float32, 1e-5, 1e-4)]:
    for m, n, k, naive, grouped in SHAPES:
        a = torch.randn(m, k, generator=g).to(dtype)
        b = torch.randn(k, n, generator=g).to(dtype)
        expected = a.double() @ b.double()
        tag = f"{str(dtype).split('.')[-1]}_{m}x{n}x{k}"
        c = torch.full((m, n), float("nan"), dtype=dtype)
        matmul_naive(a, b, c, *naive)
        record(f"naive_{tag}", c, expected, rtol, atol)
        c = torch.full((m, n), float("nan"), dtype=dtype)
        matmul_grouped(a, b, c, *grouped)
        record(f"grouped_{tag}", c, expected, rtol, atol)

# The elementwise_fusion pair through its contract (setup, make_inputs, run) at a small size:
# the Triton side compiles on throwaway data in setup() and must then answer the inputs it
# is handed, like the eager baseline.
import ch09._elementwise_fusion_common as ew
from core.benchmark import BenchContext

ew.ROWS, ew.COLS = 5, 1500
from ch09.baseline_elementwise_fusion import EagerEpilogue
from ch09.optimized_elementwise_fusion import TritonEpilogue

sides = [EagerEpilogue(), TritonEpilogue()]
for side in sides:
    side.ctx = BenchContext(seed=3, device="cpu")
    side.setup(side.ctx)
for seed in (1, 2):
    x = sides[0].make_inputs(seed)
    record(f"pair_elementwise_fusion_seed{seed}", sides[1].run(x).clone(), sides[0].run(x),
           1e-5, 1e-6)

print("RESULTS " + json.dumps(results))
'''


@pytest.fixture(scope="module")
def interpreted() -> dict:
    return run_interpreted(CHILD)


def _check(results: dict, prefix: str) -> None:
    chosen = {name: r for name, r in results.items() if name.startswith(prefix)}
    assert chosen, f"no results named {prefix}*"
    bad = {name: r for name, r in chosen.items() if not r["ok"]}
    assert not bad, f"mismatches: {bad}"


def test_fused_epilogue_matches_eager_chain(interpreted):
    _check(interpreted, "epilogue_")


def test_naive_triton_matmul_matches_float64(interpreted):
    _check(interpreted, "naive_")


def test_grouped_triton_matmul_matches_float64(interpreted):
    _check(interpreted, "grouped_")


def test_elementwise_fusion_pair_runs_its_inputs(interpreted):
    _check(interpreted, "pair_elementwise_fusion_")
