"""Chapter 13 on a CPU: the math the GPU sides rely on, checked against plain references.

- ring attention's block attention + online-softmax merge against full attention, with the
  ranks simulated in one process;
- the KV cache sides (cat, index write, pooled slots) against each other and float64;
- fp8 quantization's round-trip error bounds and the fp8 linear's three GEMMs (layouts
  enforced as cuBLASLt wants them) against bf16;
- int8 per-channel quantization's error bound, and the dynamic int8 path's error;
- the Triton kernels of `quantization`, `quantization_dynamic` and `precisionfp8` under
  Triton's interpreter (in a child process): the split-K weight-only kernel (tiles, edges,
  counters back at zero), the per-token quantizer, the int8 GEMM with fused scales, and the
  fp8 cast-transpose;
- the sweep's ncu summary (a CSV in, a short CSV out);
- the training-step checks (sketch, alignment);
- the optimizer and training baselines: torch's default AdamW, the per-parameter loop only
  as a teaching baseline.
Every pair also imports, follows the contract and (where CPU-capable) verifies through the
harness in tests/test_real_pairs.py; the multi-rank pairs run there as gloo ranks.
"""
from __future__ import annotations

import importlib.util
import json
import math
import os
import subprocess
import sys

import pytest
import torch
import torch.nn.functional as F

from ch13._fp8_linear import E4M3, E5M2, Fp8Linear, mm_fp8, quantize
from ch13._quantization_common import quantize_rows, quantize_tokens
from ch13._ring_attention import attend_block, merge
from ch13._step_checks import alignment, probe_for, sketch
from ch13.optimized_kv_cache_pooled import SlotPool
from ch13.optimized_quantization_dynamic import rescale
from core import REPO_ROOT
from core.benchmark import BenchContext


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- ring attention

@pytest.mark.parametrize("dtype, atol", [(torch.float32, 1e-5), (torch.bfloat16, 2e-2)])
@pytest.mark.parametrize("ranks", [1, 2, 4])
def test_ring_merge_equals_full_attention(dtype, atol, ranks):
    b, h, s, d = 1, 3, 96, 16
    q = (4 * torch.randn(b, h, s // ranks, d, generator=gen(0))).to(dtype)
    k = torch.randn(b, h, s, d, generator=gen(1)).to(dtype)
    v = torch.randn(b, h, s, d, generator=gen(2)).to(dtype)
    acc = None
    for block in reversed(range(ranks)):  # any order of arrival: the merge is symmetric
        sl = slice(block * s // ranks, (block + 1) * s // ranks)
        acc = merge(acc, *attend_block(q, k[:, :, sl], v[:, :, sl]))
    full = F.scaled_dot_product_attention(q.double(), k.double(), v.double())
    assert acc[0].shape == full.shape
    torch.testing.assert_close(acc[0].double(), full, rtol=atol, atol=atol)
    lse = torch.logsumexp((q.double() @ k.double().transpose(-1, -2)) / math.sqrt(d), dim=-1)
    torch.testing.assert_close(acc[1].double(), lse, rtol=1e-3, atol=atol)


def test_merge_is_stable_for_far_apart_logsumexps():
    out1, out2 = torch.ones(1, 1, 2, 4), 3 * torch.ones(1, 1, 2, 4)
    lse1, lse2 = torch.tensor([[[1000.0, -1000.0]]]), torch.tensor([[[0.0, 0.0]]])
    out, lse = merge((out1, lse1), out2, lse2)
    assert torch.isfinite(out).all() and torch.isfinite(lse).all()
    assert torch.allclose(out[0, 0, 0], out1[0, 0, 0]) and torch.allclose(out[0, 0, 1], out2[0, 0, 1])


# ---------------------------------------------------------------- KV cache

def _bench(module: str):
    bench = importlib.import_module(f"ch13.{module}").get_benchmark()
    bench.ctx = BenchContext(seed=0, device="cpu")
    bench.setup(bench.ctx)
    return bench


def test_kv_cache_index_write_matches_cat_and_float64():
    sides = [_bench(m) for m in ("baseline_kv_cache", "optimized_kv_cache", "optimized_kv_cache_pooled")]
    inputs = sides[0].make_inputs(3)
    expected = sides[0].reference(inputs)
    for _ in range(3):  # the pooled side lands on other slots each call
        for side in sides:
            out = side.run(inputs)
            torch.testing.assert_close(out.double(), expected, rtol=2e-2, atol=2e-2)
    assert torch.equal(sides[0].run(inputs), sides[1].run(inputs))


def test_slot_pool_hands_out_adjacent_free_slots():
    pool = SlotPool(8)
    a = pool.take(3)
    b = pool.take(4)
    assert {a, b} == {0, 3}
    with pytest.raises(RuntimeError):
        pool.take(2)
    pool.give_back(a, 3)
    assert pool.take(2) == 0


# ---------------------------------------------------------------- fp8

@pytest.mark.parametrize("dtype, bits", [(E4M3, 3), (E5M2, 2)])
def test_fp8_round_trip_error_is_half_an_ulp(dtype, bits):
    x = torch.randn(4096, generator=gen(0)) * 7
    q, scale = quantize(x, dtype)
    back = q.float() * scale
    assert q.dtype == dtype and scale.numel() == 1
    assert float(back.abs().max()) == pytest.approx(float(x.abs().max()), rel=2.0 ** -(bits + 1))
    # values in the normal range round to within half an ulp: 2^-(bits+1) relative
    normal = x.abs() > 1e-2 * x.abs().max()
    rel = ((back - x).abs() / x.abs())[normal]
    assert float(rel.max()) <= 2.0 ** -(bits + 1) + 1e-6
    assert 0.3 * 2.0 ** -(bits + 1) < float(rel.std()) * math.sqrt(3) < 2.0 ** -(bits + 1)


def test_mm_fp8_enforces_cublaslt_layouts():
    a, sa = quantize(torch.randn(32, 64, generator=gen(0)), E4M3)
    b, sb = quantize(torch.randn(48, 64, generator=gen(1)), E4M3)
    assert mm_fp8(a, b.t(), sa, sb).shape == (32, 48)
    with pytest.raises(AssertionError):
        mm_fp8(a, b.t().contiguous(), sa, sb)  # row-major b: cuBLASLt refuses it


def test_fp8_linear_forward_and_backward_track_bf16():
    x = torch.randn(64, 128, generator=gen(0)).bfloat16().requires_grad_()
    w = (torch.randn(96, 128, generator=gen(1)) / math.sqrt(128)).bfloat16().requires_grad_()
    dy = torch.randn(64, 96, generator=gen(2)).bfloat16()
    y = Fp8Linear.apply(x, w)
    y.backward(dy)
    got = (y.detach(), x.grad, w.grad)
    x2, w2 = x.detach().float().requires_grad_(), w.detach().float().requires_grad_()
    y2 = x2 @ w2.T
    y2.backward(dy.float())
    for name, g, e, bound in zip(("y", "dx", "dw"), got, (y2.detach(), x2.grad, w2.grad), (0.05, 0.08, 0.08)):
        rel = float((g.float() - e).norm() / e.norm())
        assert rel < bound, f"{name}: relative error {rel:.3f} (e4m3 ~3.8%, e5m2 x e4m3 ~6%)"
        assert rel > 0.005, f"{name}: no fp8 rounding visible ({rel:.4f}): not an fp8 path?"


# ---------------------------------------------------------------- int8

def test_int8_per_channel_error_is_half_a_step():
    w = torch.randn(64, 4096, generator=gen(0)) / 64
    q, scale = quantize_rows(w)
    assert q.dtype == torch.int8 and scale.shape == (64,)
    assert int(q.abs().max()) == 127
    err = (q.float() * scale[:, None] - w).abs()
    assert bool((err <= scale[:, None] / 2 + 1e-7).all())
    x = torch.randn(16, 4096, generator=gen(1))
    y, yq = x @ w.T, (x @ (q.float() * scale[:, None]).T)
    rel = float((yq - y).std() / y.std())
    assert 0.004 < rel < 0.013, rel  # ~0.9% of the output's std (_quantization_common.py)


def test_int8_dynamic_path_matches_float_within_derived_error():
    w = torch.randn(256, 1024, generator=gen(0)) / 32
    x = torch.randn(64, 1024, generator=gen(1)).bfloat16()
    q, w_scale = quantize_rows(w.bfloat16())
    xq, x_scale = quantize_tokens(x)
    assert xq.dtype == torch.int8 and x_scale.shape == (64, 1)
    y = rescale(torch._int_mm(xq, q.t()), x_scale, w_scale)
    expected = x.float() @ w.bfloat16().float().T
    rel = float((y.float() - expected).std() / expected.std())
    assert y.dtype == torch.bfloat16 and 0.007 < rel < 0.02, rel  # ~1.3%


TRITON_CHILD = r'''
import json, torch
from ch13._fp8_linear import E4M3, E5M2, quantize_t
from ch13._int8_kernel import GemmTile, Int8WeightOnlyLinear, Tile, int8_matmul_scaled
from ch13._int8_kernel import quantize_rows as quantize_triton
from ch13._quantization_common import quantize_rows, quantize_tokens
results = {}
g = torch.Generator().manual_seed(0)

def rel(got, expected):
    return float((got.double() - expected.double()).abs().max() / expected.double().abs().max())

# weight-only: (M, N, K, tile); M past one 16-row tile, N and K off the tile edges, split-K
# 1 (direct store), 2 and 3 (uneven: the last split runs past K), each layer called twice
# (the counters must be back at zero for the second call)
for m, n, k, tile in [(1, 64, 256, Tile(16, 32, 128, 1)), (5, 70, 300, Tile(16, 16, 64, 3)),
                      (16, 96, 512, Tile(16, 32, 128, 2)), (40, 64, 512, Tile(16, 64, 64, 4))]:
    x = torch.randn(m, k, generator=g).half()  # the interpreter's tl.dot mishandles bf16
    q, scale = quantize_rows(torch.randn(n, k, generator=g))
    layer = Int8WeightOnlyLinear(q, scale)
    first, second = layer(x, tile), layer(x, tile)
    expected = x.float() @ (q.float() * scale[:, None]).T
    results[f"weight_only {m}x{n}x{k} {tile}"] = {
        "err": max(rel(first, expected), rel(second, expected)),
        "same": bool(torch.equal(first, second)), "locks": int(layer.locks.abs().sum())}

# per-token quantizer: int8 against the torch reference; fp8 on values that e4m3 holds exactly
# once scaled (the interpreter's float -> fp8 cast misrounds values that carry into the next
# power of two, which the GPU's cvt instruction does not)
x = torch.randn(37, 300, generator=g).bfloat16()
q, s = quantize_triton(x)
q_ref, s_ref = quantize_tokens(x)
results["rows int8"] = {"q_diff": int((q.int() - q_ref.int()).abs().max()),
                        "scale": bool(torch.equal(s, s_ref)), "shape": list(s.shape)}
grid = torch.randint(-100, 100, (37, 300), generator=g).float().to(E4M3).float()  # exact e4m3 values
grid[:, 0] = 448.0  # each row's amax: scale = 2^-3, exact
xs = (grid / 8).bfloat16()
q8, s8 = quantize_triton(xs, E4M3)
results["rows e4m3"] = {"exact": bool(torch.equal(q8.float(), grid)), "scale": float(s8.unique()[0])}

# int8 GEMM with the scales in the epilogue; M, N, K off the tile edges
for m, n, k in [(70, 40, 256), (33, 50, 200)]:
    a, sa = quantize_tokens(torch.randn(m, k, generator=g))
    b, sb = quantize_rows(torch.randn(n, k, generator=g))
    c = int8_matmul_scaled(a, b, sa, sb, GemmTile(32, 32, 64, 2, 4, 2), out_dtype=torch.float32)
    exact = (a.double() @ b.double().T) * sa.double() * sb.double()[None, :]
    results[f"gemm {m}x{n}x{k}"] = {"err": rel(c, exact)}

# fp8 cast-transpose: both copies, the scale, tiles cut at the edges (70 x 130)
for dtype, fmax in ((E4M3, 448.0), (E5M2, 57344.0)):
    vals = torch.randint(-60, 60, (70, 130), generator=g).float().to(dtype).float()
    vals[3, 7] = fmax
    t = (vals / 4).bfloat16()  # scale = amax / fmax = 1/4, exact
    q8, q8t, s = quantize_t(t, dtype)
    results[f"cast_transpose {dtype}"] = {
        "q": bool(torch.equal(q8.float(), vals)), "qt": bool(torch.equal(q8t.float(), vals.t())),
        "scale": float(s), "contiguous": q8t.is_contiguous() and list(q8t.shape) == [130, 70]}
print(json.dumps(results))
'''


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_triton_kernels_match_references_in_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    done = subprocess.run([sys.executable, "-c", TRITON_CHILD], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    weight_only = {k: v for k, v in results.items() if k.startswith("weight_only")}
    assert len(weight_only) == 4
    for case, r in weight_only.items():
        assert r["err"] < 2e-3, case  # fp16 output rounding, fp32 accumulation
        assert r["same"], f"{case}: a second call differs (split-K sums in a fixed order)"
        assert r["locks"] == 0, f"{case}: split-K counters not reset"
    assert results["rows int8"] == {"q_diff": 0, "scale": True, "shape": [37, 1]}
    assert results["rows e4m3"] == {"exact": True, "scale": 0.125}
    for case in ("gemm 70x40x256", "gemm 33x50x200"):
        assert results[case]["err"] < 1e-6, case  # int32 exact; fp32 scaling
    for dtype in ("torch.float8_e4m3fn", "torch.float8_e5m2"):
        assert results[f"cast_transpose {dtype}"] == {"q": True, "qt": True, "scale": 0.25,
                                                       "contiguous": True}


NCU_CSV = """==PROF== Connected to process 1
"ID","Kernel Name","gpu__time_duration.sum","launch__grid_size","dram__throughput.avg.pct_of_peak_sustained_elapsed"
"","","usecond","","%"
"0","_int8_weight_only_kernel","30.0","512","80.0"
"1","_int8_weight_only_kernel","10.0","512","40.0"
"2","void gemv2T_kernel<int, int, 128, 16, 4>(float)","45.5","264","90.0"
"""


def test_ncu_summary_groups_kernels_and_weights_percentages_by_time():
    from ch13.sweep_quantization import ncu_summary

    lines = ncu_summary("quantization:optimized", NCU_CSV).splitlines()
    assert lines[0] == "side,kernel,calls,us,grid,dram%"
    assert lines[1] == "quantization:optimized,void gemv2T_kernel<int; int; 128; 16; 4>(float),1,45.5,264,90.0"
    assert lines[2] == "quantization:optimized,_int8_weight_only_kernel,2,40.0,512,70.0"
    assert ncu_summary("x", "==PROF== nothing").startswith("x: no kernels")


# ---------------------------------------------------------------- training-step checks

def test_alignment_counts_adam_steps():
    p = torch.randn(64, 32, generator=gen(0), requires_grad=True)
    g = torch.randn(64, 32, generator=gen(1))
    before = p.detach().clone()
    opt = torch.optim.AdamW([p], lr=1e-3, weight_decay=0.0)
    p.grad = g
    assert float(alignment(before, p.detach(), g, 1e-3)) == pytest.approx(0.0)
    opt.step()
    assert float(alignment(before, p.detach(), g, 1e-3)) == pytest.approx(1.0, abs=1e-3)
    opt.step()
    assert float(alignment(before, p.detach(), g, 1e-3)) == pytest.approx(2.0, abs=1e-2)


def test_sketch_is_scale_free_and_sees_a_wrong_gradient():
    g = torch.randn(48, 80, generator=gen(0))
    left, right = probe_for(48, "cpu"), probe_for(80, "cpu")
    s, rms = sketch(g, left, right)
    s2, rms2 = sketch(1e-4 * g, left, right)
    torch.testing.assert_close(s, s2, rtol=1e-4, atol=1e-5)
    assert float(rms2 / rms) == pytest.approx(1e-4, rel=1e-4)
    assert 0.5 < float(s.std()) < 1.5  # order-one values
    wrong, _ = sketch(g.flip(0), left, right)
    assert float((wrong - s).abs().max()) > 0.5
    noisy, _ = sketch(g * (1 + 0.01 * torch.randn(48, 80, generator=gen(1))), left, right)
    assert float((noisy - s).abs().max()) < 0.05  # a 1% elementwise error stays ~1%


# ---------------------------------------------------------------- optimizer and training baselines

def test_optimizer_baselines_are_torchs_default_or_tagged_teaching():
    """The headline pair starts from AdamW as torch builds it by default (foreach on a GPU);
    the per-parameter loop survives only as the teaching pair's baseline."""
    fused_base = _bench("baseline_optimizer_fused")
    defaults = fused_base.opt.defaults
    assert defaults["foreach"] is None and not defaults["fused"]  # nothing chosen: torch's default
    assert not getattr(fused_base, "teaching", False)
    assert _bench("optimized_optimizer_fused").opt.defaults["fused"] is True
    loop = _bench("baseline_optimizer_foreach")
    assert loop.teaching and loop.opt.defaults["foreach"] is False
    assert _bench("optimized_optimizer_foreach").opt.defaults["foreach"] is True


def test_optimizer_sides_take_the_same_step():
    from core.verify import compare

    sides = [_bench(m) for m in ("baseline_optimizer_fused", "optimized_optimizer_fused",
                                          "baseline_optimizer_foreach", "optimized_optimizer_foreach")]
    grads = sides[0].make_inputs(5)
    outs = [s.run([g.clone() for g in grads]) for s in sides]
    for side, out in zip(sides[1:], outs[1:]):
        assert compare(outs[0], out, side.tolerance).ok, type(side).__name__


def test_training_standard_sides_use_the_default_optimizer_until_the_fused_stage():
    from ch13.baseline_training_standard import EagerFp32Step
    from ch13.optimized_training_standard import StandardStep
    from ch13.optimized_training_standard_amp import AmpStep
    from ch13.optimized_training_standard_amp_compile import AmpCompiledStep

    params = [torch.zeros(3, requires_grad=True)]
    for cls in (EagerFp32Step, AmpStep, AmpCompiledStep):
        defaults = cls().make_optimizer(params).defaults
        assert defaults["foreach"] is None and not defaults["fused"], cls.__name__
    assert StandardStep().make_optimizer(params).defaults["fused"] is True
