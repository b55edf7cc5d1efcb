"""ch06's added pairs on a CPU-only machine: quantization_ilp and autotuning.

quantization_ilp (CUDA): the .cu file builds for sm_90a and exports both launchers; the
per-row int8 quantizer round-trips; both kernels' summation orders, emulated in fp32 exactly
as the kernels nest their FMAs, stay well inside the pair's tolerance of the float64
reference and of each other, while one wrong weight does not; the pair SKIPs on CPU.

autotuning (Triton): the softmax kernel runs under Triton's interpreter (TRITON_INTERPRET=1,
set in a child process before triton is imported, as tests/test_ch09_triton.py does) for
every candidate configuration on shapes that hit each path (one tile, several tiles, ragged
rows and columns); both sides run through their contract at small shapes (the optimized one
with a stand-in timer), so which configuration each side keeps is checked; the baseline's
row-length rule is checked against the pair's shapes, and the search's choice rule on
tables where configurations win different shapes and where one wins all.
"""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys

import numpy as np
import pytest
import torch

from ch06._quantization_ilp_common import Int8GemvBench, int8_gemv_reference, quantize_rows
from ch06.optimized_autotuning import best_per_shape, time_table
from core import REPO_ROOT, cuda
from core.pairfile import load_benchmark, unmet_requirement

needs_nvcc = pytest.mark.skipif(cuda.nvcc_path() is None, reason="nvcc (CUDA toolkit) not found")
needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="triton is not installed")


# --- quantization_ilp -------------------------------------------------------------------
@needs_nvcc
def test_quantization_ilp_cu_builds_for_sm90a(tmp_path, monkeypatch):
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path))
    library = cuda.build(REPO_ROOT / "ch06" / "quantization_ilp.cu", (9, 0))
    symbols = subprocess.run(["nm", "-D", "--defined-only", str(library)], capture_output=True,
                             text=True, check=True).stdout
    for name in ("launch_gemv_int8_one_acc", "launch_gemv_int8_four_acc"):
        assert name in symbols


def test_quantize_rows_round_trips_within_half_a_step():
    w = torch.randn(64, 300, generator=torch.Generator().manual_seed(0)) * 0.02
    q, scale = quantize_rows(w)
    assert q.dtype == torch.int8 and scale.dtype == torch.float32
    assert int(q.abs().max()) == 127  # each row's largest weight maps to ±127
    assert (q.abs().amax(dim=1) == 127).all()
    err = (q.float() * scale[:, None] - w).abs()
    assert (err <= scale[:, None] / 2 * (1 + 1e-5)).all()


def _fma32(acc: np.ndarray, a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """fmaf: an int8 x fp32 product is exact in float64, so the sum rounds once to fp32."""
    return (acc.astype(np.float64) + a.astype(np.float64) * b.astype(np.float64)).astype(np.float32)


def _warp_sum(v: np.ndarray) -> np.ndarray:
    """The kernels' __shfl_xor_sync butterfly over the last axis (32 lanes), in fp32."""
    lanes = np.arange(32)
    for offset in (16, 8, 4, 2, 1):
        v = (v + v[:, lanes ^ offset]).astype(np.float32)
    return v[:, 0]


def emulate_one_acc(q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """gemv_int8_one_acc without its scale: lane l folds k = l, l + 32, ... into one chain."""
    rows, cols = q.shape
    acc = np.zeros((rows, 32), np.float32)
    for start in range(0, cols, 32):
        acc = _fma32(acc, q[:, start:start + 32], x[start:start + 32])
    return _warp_sum(acc)


def emulate_four_acc(q: np.ndarray, x: np.ndarray) -> np.ndarray:
    """gemv_int8_four_acc without its scale: lane l takes 16-byte chunks l, l + 32, ...;
    word j of a chunk feeds chain j byte by byte; chains add as (0 + 1) + (2 + 3)."""
    rows, cols = q.shape
    chunks = q.reshape(rows, cols // 512, 32, 16)  # [row, iteration, lane, byte]
    xs = x.reshape(cols // 512, 32, 16)
    acc = np.zeros((rows, 32, 4), np.float32)
    for it in range(cols // 512):
        for byte in range(4):
            idx = [4 * j + byte for j in range(4)]
            acc = _fma32(acc, chunks[:, it][:, :, idx], xs[it][:, idx])
    pair01 = (acc[..., 0] + acc[..., 1]).astype(np.float32)
    pair23 = (acc[..., 2] + acc[..., 3]).astype(np.float32)
    return _warp_sum((pair01 + pair23).astype(np.float32))


def _within(got: torch.Tensor, want: torch.Tensor, tol) -> torch.Tensor:
    return (got.double() - want.double()).abs() <= tol.atol + tol.rtol * want.double().abs()


def test_both_kernel_orders_sit_well_inside_the_tolerance_and_a_wrong_weight_does_not():
    gen = torch.Generator().manual_seed(1)
    rows, cols = 256, 4096  # the pair's reduction length; fewer rows
    q, scale = quantize_rows(torch.randn(rows, cols, generator=gen) * 0.02)
    x = torch.randn(cols, generator=gen)
    want = int8_gemv_reference(q, scale, x)
    one = torch.from_numpy(emulate_one_acc(q.numpy(), x.numpy())) * scale
    four = torch.from_numpy(emulate_four_acc(q.numpy(), x.numpy())) * scale
    tol = Int8GemvBench.tolerance
    assert not torch.equal(one, four)  # the orders really differ: a tolerance is needed
    # 5x margin: every element stays within a fifth of the stated bound
    tight = type(tol)(rtol=tol.rtol / 5, atol=tol.atol / 5)
    assert _within(one, want, tight).all() and _within(four, want, tight).all()
    assert _within(four, one, tight).all()
    # a kernel that misreads one weight by a single int8 step fails the tolerance, in that row
    k = int(x.abs().argmax())
    bad_q = q.clone()
    bad_q[7, k] += 1 if int(bad_q[7, k]) < 127 else -1
    bad = torch.from_numpy(emulate_four_acc(bad_q.numpy(), x.numpy())) * scale
    passed = _within(bad, want, tol)
    assert not passed[7] and int(passed.sum()) == rows - 1
    # ... and an unscaled (or wrongly scaled) row is far outside it
    assert not _within(torch.from_numpy(emulate_four_acc(q.numpy(), x.numpy())), want, tol).all()


def test_quantization_ilp_pair_skips_on_cpu_with_a_reason():
    for side in ("baseline", "optimized"):
        bench = load_benchmark(REPO_ROOT / "ch06" / f"{side}_quantization_ilp.py")
        assert unmet_requirement(bench, "cpu").startswith("needs a CUDA GPU")


# --- autotuning: choice rules -------------------------------------------------------------
def test_search_keeps_each_shapes_fastest_config():
    table = {("short", "A"): 1.0, ("short", "B"): 3.0, ("short", "C"): 2.0,
             ("square", "A"): 3.0, ("square", "B"): 1.0, ("square", "C"): 1.5,
             ("long", "A"): 4.0, ("long", "B"): 2.0, ("long", "C"): 1.0}
    assert best_per_shape(table) == {"short": "A", "square": "B", "long": "C"}


def test_search_when_one_config_wins_everywhere():
    table = time_table(("a", "b"), ("fast", "slow"),
                       lambda shape, cfg: (1.0 if cfg == "fast" else 2.0) * len(shape))
    assert len(table) == 4
    assert best_per_shape(table) == {"a": "fast", "b": "fast"}


@needs_triton
def test_row_length_rule_picks_what_a_hand_written_softmax_would():
    from ch06._autotuning_common import SHAPES, candidates
    from ch06.baseline_autotuning import launch_for

    def as_tuple(config) -> tuple[int, int, int]:
        return config.block_r, config.block_c, config.num_warps

    # short rows packed 16 to a program; a row in one tile; a vocabulary row walked in tiles
    assert as_tuple(launch_for(128)) == (16, 128, 4)
    assert as_tuple(launch_for(4096)) == (1, 4096, 8)
    assert as_tuple(launch_for(128256)) == (1, 16384, 16)
    assert as_tuple(launch_for(1000)) == (2, 1024, 4)  # rounded up to a power of two
    assert as_tuple(launch_for(20000)) == (1, 16384, 16)
    # the rule's choice for every shape of the pair is among the search's candidates, so
    # the search compares measuring against predicting, never against a config it lacks
    assert {launch_for(cols) for _, cols in SHAPES} <= set(candidates())


def test_autotuning_pair_skips_on_cpu_with_a_reason():
    for side in ("baseline", "optimized"):
        bench = load_benchmark(REPO_ROOT / "ch06" / f"{side}_autotuning.py")
        assert unmet_requirement(bench, "cpu").startswith("needs a CUDA GPU")


# --- autotuning: the Triton kernel and the pair under the interpreter ---------------------
CHILD = r'''
import json
import torch

from ch06._autotuning_common import candidates
from ch06._autotuning_kernel import softmax_rows
from ch06.baseline_autotuning import RowLengthSoftmax
from ch06.optimized_autotuning import AutotunedSoftmax
from core.benchmark import BenchContext

results = {}
g = torch.Generator().manual_seed(0)
# one tile for some configs, several for others; rows not a multiple of 16 or 64;
# columns not a multiple of any tile
SHAPES = [(37, 128), (5, 300), (3, 5000), (2, 20000)]
for rows, cols in SHAPES:
    x = 4 * torch.randn(rows, cols, generator=g)
    want = torch.softmax(x.double(), dim=1)
    for config in candidates():
        y = torch.full_like(x, float("nan"))
        softmax_rows(x, y, config)
        err = (y.double() - want).abs()
        ok = bool(torch.allclose(y.double(), want, rtol=1e-4, atol=1e-9))
        results[f"{rows}x{cols} {config}"] = {"ok": ok, "max_abs_err": float(err.max())}

# The pair's two sides at small shapes; the optimized side's search gets a stand-in timer
# that makes a different configuration fastest for each shape (the first candidate whose
# tile width matches). The baseline never times: the timer is there to show it is unused.
SMALL = ((37, 128), (6, 1000), (2, 20000))
WIDTH = {(37, 128): 128, (6, 1000): 1024, (2, 20000): 16384}

def fake_time(self, x, y, config):
    self.timed = getattr(self, "timed", 0) + 1
    self.softmax_rows(x, y, config)  # the search still launches every configuration
    rows, cols = x.shape
    return 1.0 if config.block_c == WIDTH[(rows, cols)] else 1.0 + abs(config.block_c - cols) / 1e4

picked = {}
outputs = {}
for cls in (RowLengthSoftmax, AutotunedSoftmax):
    side = type("Small" + cls.__name__, (cls,), {"shapes": SMALL, "time_config": fake_time})()
    side.ctx = BenchContext(device="cpu", seed=3)
    side.setup(side.ctx)
    nan_before = all(bool(torch.isnan(y).all()) for y in side.outputs)
    xs = side.make_inputs(11)
    out = [y.clone() for y in side.run(xs)]
    ref = side.reference(xs)
    tol = side.tolerance
    close = all(bool(torch.allclose(o.double(), r, rtol=tol.rtol, atol=tol.atol))
                for o, r in zip(out, ref))
    other = [y.clone() for y in side.run(side.make_inputs(12))]
    picked[cls.__name__] = {"nan_before": nan_before, "close_to_reference": close,
                            "seed_changes_output": any(not torch.equal(a, b)
                                                       for a, b in zip(out, other)),
                            "configs": {f"{r}x{c}": [v.block_r, v.block_c, v.num_warps]
                                        for (r, c), v in side.config_for.items()},
                            "timed": getattr(side, "timed", 0)}
    outputs[cls.__name__] = out
picked["sides_agree"] = all(
    bool(torch.allclose(a.double(), b.double(), rtol=1e-4, atol=1e-9))
    for a, b in zip(outputs["RowLengthSoftmax"], outputs["AutotunedSoftmax"]))
print(json.dumps({"kernel": results, "pair": picked}))
'''


@pytest.fixture(scope="module")
def interpreted():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return json.loads(proc.stdout.strip().splitlines()[-1])


@needs_triton
def test_every_candidate_config_computes_softmax(interpreted):
    kernel = interpreted["kernel"]
    assert len(kernel) == 4 * 7
    bad = {name: r for name, r in kernel.items() if not r["ok"]}
    assert not bad


@needs_triton
def test_autotuning_sides_keep_the_right_configs_and_agree(interpreted):
    pair = interpreted["pair"]
    base, opt = pair["RowLengthSoftmax"], pair["AutotunedSoftmax"]
    for side in (base, opt):
        assert side["nan_before"] and side["close_to_reference"] and side["seed_changes_output"]
    assert opt["timed"] == 3 * 7  # every shape x every candidate was timed
    assert base["timed"] == 0  # the rule predicts from the row length, no timing
    # per shape: the candidate the stand-in timer makes fastest (first with that width)
    assert opt["configs"] == {"37x128": [16, 128, 4], "6x1000": [4, 1024, 8],
                              "2x20000": [1, 16384, 16]}
    # per shape from the row length: 1000 columns round up to 1024, two rows to a program
    assert base["configs"] == {"37x128": [16, 128, 4], "6x1000": [2, 1024, 4],
                               "2x20000": [1, 16384, 16]}
    assert pair["sides_agree"]
