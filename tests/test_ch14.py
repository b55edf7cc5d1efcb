"""Chapter 14 on the CPU: the Triton kernels under the interpreter, the attention masks and
score_mod against their dense forms, the regional compile's graph reuse, and the pair files.

The Triton kernels run in one child process with TRITON_INTERPRET=1 (set before triton is
imported, which other tests in this process may already have done; see test_ch09_triton.py).
The interpreter's bf16 arithmetic is not the GPU's (tl.dot multiplies raw bf16 bit patterns,
conversions round differently), so kernels are checked in fp16 and fp32; they take their
output dtype from the tensors, so on a GPU the same code runs the pairs' bf16.
"""
from __future__ import annotations

import importlib.util
import math
import warnings

import pytest
import torch
import torch.nn.functional as F

from core import REPO_ROOT
from tests.conftest import run_interpreted

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="triton is not installed")

CHILD = r'''
import json
import torch
import torch.nn.functional as F

from ch14._triton_norm_common import rms_norm
from ch14._triton_norm_kernel import rms_norm_triton
from ch14._triton_persistent_kernels import matmul_persistent, matmul_tile

results = {}
g = torch.Generator().manual_seed(0)


def record(name, got, expected, rtol, atol):
    unwritten = int(torch.isnan(got.double()).sum())
    err = float((got.double() - expected.double()).abs().max())
    ok = unwritten == 0 and torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol)
    results[name] = {"ok": bool(ok), "max_abs_err": err, "unwritten": unwritten}


# RMSNorm: row lengths below, at and above a power of two (masked tail), against F.rms_norm.
# fp16 rounds once like F.rms_norm; one fp16 ulp (2^-10) of slack for the sum's order.
for dtype, rtol, atol in [(torch.float32, 1e-5, 1e-6), (torch.float16, 2e-3, 2e-3)]:
    for rows, cols in [(5, 300), (3, 1024), (4, 2500)]:
        x = (3 * torch.randn(rows, cols, generator=g)).to(dtype)
        w = (1 + 0.1 * torch.randn(cols, generator=g)).to(dtype)
        y = torch.full_like(x, float("nan"))
        rms_norm_triton(x, w, 1e-6, out=y)
        record(f"norm_{str(dtype)[6:]}_{rows}x{cols}", y, rms_norm(x, w, 1e-6), rtol, atol)

# Matmuls: M/N/K not multiples of the tiles, a short last GROUP_M group, and for the
# persistent kernel fewer "SMs" than tiles, so each program loops over several tiles.
SHAPES = [(64, 64, 64, (32, 32, 16, 2)), (80, 48, 72, (16, 32, 16, 2)),
          (96, 112, 40, (32, 16, 32, 4))]
for dtype, rtol, atol in [(torch.float16, 1e-2, 1e-2), (torch.float32, 1e-5, 1e-4)]:
    for m, n, k, config in SHAPES:
        a = torch.randn(m, k, generator=g).to(dtype)
        b = torch.randn(k, n, generator=g).to(dtype)
        bias = torch.randn(n, generator=g).to(dtype)
        exact = a.double() @ b.double()
        tag = f"{str(dtype)[6:]}_{m}x{n}x{k}"
        c = torch.full((m, n), float("nan"), dtype=dtype)
        record(f"tile_{tag}", matmul_tile(a, b, c, config), exact, rtol, atol)
        for sms in (1, 3):
            c = torch.full((m, n), float("nan"), dtype=dtype)
            record(f"persistent_{tag}_sms{sms}", matmul_persistent(a, b, c, sms, config=config),
                   exact, rtol, atol)
        c = torch.full((m, n), float("nan"), dtype=dtype)
        matmul_persistent(a, b, c, 3, bias=bias, gelu=True, config=config)
        record(f"epilogue_{tag}", c, F.gelu(exact + bias.double(), approximate="tanh"),
               rtol, atol)

print("RESULTS " + json.dumps(results))
'''


@pytest.fixture(scope="module")
def interpreted() -> dict:
    return run_interpreted(CHILD, PYTHONWARNINGS="ignore")


def _check(results: dict, prefix: str, expected_count: int) -> None:
    chosen = {name: r for name, r in results.items() if name.startswith(prefix)}
    assert len(chosen) == expected_count, f"{prefix}*: {sorted(chosen)}"
    bad = {name: r for name, r in chosen.items() if not r["ok"]}
    assert not bad, f"mismatches: {bad}"


@needs_triton
def test_triton_rms_norm_matches_torch_rms_norm(interpreted):
    _check(interpreted, "norm_", 6)


@needs_triton
def test_per_tile_matmul_matches_float64(interpreted):
    _check(interpreted, "tile_", 6)


@needs_triton
def test_persistent_tma_matmul_matches_float64(interpreted):
    _check(interpreted, "persistent_", 12)


@needs_triton
def test_fused_bias_gelu_epilogue_matches_tanh_gelu(interpreted):
    _check(interpreted, "epilogue_", 6)


def test_eager_rms_norm_spelling_is_within_the_pairs_tolerance_of_f_rms_norm():
    """The teaching baseline (the formula as eager ops, rounding twice) against F.rms_norm
    (rounding once) in bf16 on the CPU: they differ, by at most one bf16 ulp, inside the
    tolerance the pairs verify with; a norm without its weight does not pass."""
    from ch14._triton_norm_common import NormBench, rms_norm
    from ch14.baseline_triton_norm_fusion import rms_norm_eager

    g = torch.Generator().manual_seed(2)
    x = torch.randn(512, 4096, generator=g).to(torch.bfloat16)
    w = (1 + 0.1 * torch.randn(4096, generator=g)).to(torch.bfloat16)
    eager, torch_norm = rms_norm_eager(x, w, 1e-6).double(), rms_norm(x, w, 1e-6).double()
    tol = NormBench.tolerance
    assert not torch.equal(eager, torch_norm)
    assert ((eager - torch_norm).abs() <= torch_norm.abs() * 2.0 ** -7).all()  # one ulp
    assert torch.allclose(eager, torch_norm, rtol=tol.rtol, atol=tol.atol)
    unweighted = rms_norm(x, None, 1e-6).double()
    assert not torch.allclose(unweighted, torch_norm, rtol=tol.rtol, atol=tol.atol)


# --- attention: the score_mod and the mask_mod against the dense tensors the baselines use ---
def _flex(*args, **kwargs):
    from torch.nn.attention.flex_attention import flex_attention

    with warnings.catch_warnings():  # eager flex warns that it is unfused: intended here
        warnings.simplefilter("ignore")
        return flex_attention(*args, **kwargs)


def _qkv(b: int, h: int, s: int, d: int) -> list[torch.Tensor]:
    g = torch.Generator().manual_seed(1)
    return [torch.randn(b, h, s, d, generator=g) for _ in range(3)]


def test_alibi_slopes_and_bias_follow_the_paper():
    from ch14._flex_attention_common import alibi_bias, alibi_slopes

    slopes = alibi_slopes(8, "cpu")  # ALiBi, 8 heads: 1/2, 1/4, ..., 1/256
    assert torch.allclose(slopes, torch.tensor([2.0 ** -i for i in range(1, 9)]))
    bias = alibi_bias(slopes, 6)
    assert bias.shape == (8, 6, 6)
    assert bias[2, 5, 1] == bias[2, 1, 5] == -4 * slopes[2]  # symmetric |i - j|
    assert torch.all(bias.diagonal(dim1=1, dim2=2) == 0)


def test_alibi_score_mod_matches_materialized_bias():
    from ch14._flex_attention_common import alibi_bias, alibi_score_mod, alibi_slopes

    heads, seq = 4, 256
    q, k, v = _qkv(2, heads, seq, 16)
    slopes = alibi_slopes(heads, "cpu")
    got = _flex(q, k, v, score_mod=alibi_score_mod(slopes))
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=alibi_bias(slopes, seq)[None])
    no_bias = F.scaled_dot_product_attention(q, k, v)
    assert torch.allclose(got, expected, rtol=1e-4, atol=1e-5)
    assert not torch.allclose(got, no_bias, rtol=1e-2, atol=1e-2)  # the bias does matter


def test_sliding_window_mask_mod_matches_dense_mask(monkeypatch):
    import ch14._flex_attention_sparse_common as common
    from torch.nn.attention.flex_attention import create_block_mask, create_mask

    monkeypatch.setattr(common, "WINDOW", 100)  # read at call time by every helper
    seq = 384  # three 128-blocks; a window that is not a multiple of the block
    dense = common.dense_mask(seq, "cpu")
    assert torch.equal(create_mask(common.sliding_window, 1, 1, seq, seq, "cpu")[0, 0], dense)
    assert dense.sum() == common.allowed_pairs(seq)
    assert dense[150, 51] and not dense[150, 50] and not dense[150, 151]

    q, k, v = _qkv(1, 2, seq, 16)
    block_mask = create_block_mask(common.sliding_window, None, None, seq, seq, device="cpu")
    got = _flex(q, k, v, block_mask=block_mask)
    expected = F.scaled_dot_product_attention(q, k, v, attn_mask=dense)
    assert torch.allclose(got, expected, rtol=1e-4, atol=1e-5)


# --- the transformer and the compile pairs ----------------------------------------------------
def test_config_flops_count_every_matmul():
    from ch14._transformer import Block, Config

    cfg = Config(d_model=64, n_heads=4, n_layers=3, hidden=160, batch=2, seq=32)
    linear = sum(2 * cfg.tokens * m.in_features * m.out_features
                 for m in Block(cfg).modules() if isinstance(m, torch.nn.Linear))
    attention = 2 * 2 * cfg.batch * cfg.seq * cfg.seq * cfg.d_model / 2  # QK^T, PV; causal half
    assert math.isclose(cfg.flops(), cfg.n_layers * (linear + attention))


TINY = dict(d_model=64, n_heads=2, n_layers=6, hidden=128, batch=1, seq=32)


def _contract(cls, ctx):
    bench = cls()
    bench.ctx = ctx
    bench.setup(ctx)
    return bench


def test_regional_compile_reuses_one_graph_and_matches_whole_model(monkeypatch):
    """Both sides of the pair through their contract on the CPU (Inductor's C++ backend), at a
    tiny size: the regional side must build one graph for six blocks (its setup() raises
    otherwise) and answer like the whole-model compile and like eager."""
    import ch14._regional_compile_common as common
    from ch14._transformer import Config, build
    from ch14.baseline_regional_compile import WholeModelCompile
    from ch14.optimized_regional_compile import RegionalCompile
    from core.benchmark import BenchContext

    monkeypatch.setattr(common.RegionalBench, "cfg", Config(**TINY))
    torch._dynamo.reset()
    ctx = BenchContext(seed=3, device="cpu")
    regional = _contract(RegionalCompile, ctx)
    assert all(hasattr(block, "_compiled_call_impl") and block._compiled_call_impl is not None
               for block in regional.model.layers)
    whole = _contract(WholeModelCompile, ctx)
    eager = build(Config(**TINY), "cpu", ctx.seed)
    tol = common.RegionalBench.tolerance
    for seed in (1, 2):
        x = regional.make_inputs(seed)
        with torch.no_grad():
            expected = eager(x)
        for side in (regional, whole):
            assert torch.allclose(side.run(x).float(), expected.float(), rtol=tol.rtol,
                                  atol=tol.atol)
    torch._dynamo.reset()


# --- the pair files ---------------------------------------------------------------------------
STEMS = {"model_compile": {"", "max_autotune"}, "regional_compile": {""},
         "flex_attention": {""}, "flex_attention_sparse": {""},
         "triton_norm": {"", "compiled"}, "triton_norm_fusion": {""},
         "triton_persistent": {""},
         "gemm_epilogue": {"", "triton"}}


def test_every_pair_loads_and_shares_its_input_builder():
    from core.benchmark import option, shares_builder
    from core.discovery import discover_chapter
    from core.pairfile import load_benchmark

    chapter = discover_chapter(REPO_ROOT / "ch14")
    assert not chapter.orphans
    assert {p.stem: {e.variant for e in p.examples} for p in chapter.pairs} == STEMS
    for pair in chapter.pairs:
        baseline = load_benchmark(pair.baseline)
        for example in pair.examples:
            optimized = load_benchmark(example.optimized)
            assert shares_builder(baseline, optimized), example.optimized
            assert option(optimized, "requires", None).cuda  # CUDA-only pairs
    goal = load_benchmark(REPO_ROOT / "ch14" / "optimized_regional_compile.py").goal
    assert goal == "compile_time"
    # the unfused eager RMSNorm is the lesson, not a headline; F.rms_norm is the real baseline
    teaching = {p.stem for p in chapter.pairs if option(load_benchmark(p.baseline), "teaching",
                                                        False)}
    assert teaching == {"triton_norm_fusion"}
