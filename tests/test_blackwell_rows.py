"""The rows for hardware the project's GPUs lack, checked on a CPU-only machine (issue 37, item 7).

- ch08 `tiling_tcgen05`, ch09 `triton_matmul_tcgen05_tma`, ch10 `matmul_tcgen05`: one Triton
  kernel (ch08/_tiling_tcgen05_kernel.py), compiled here for sm_100 without a GPU (Triton's
  compiler and its bundled ptxas run on the CPU): its PTX has TMA copies and tcgen05 MMAs into
  tensor memory, the warp-specialized build has its partitions, and the 128 x 256 tile the ch08
  pair argues for spills on sm_90 (accumulator in registers) but not on sm_100 (in TMEM). The
  kernel's indexing runs under Triton's interpreter against float64.
- ch09 `fp8_gemm_nvfp4` / `fp8_gemm_mxfp4`: the MXFP4 quantizer, both formats' emulated GEMM
  error against the tolerances, and the variants' own run() against torch's shape and dtype
  checks for `_scaled_mm` (meta tensors).
- ch02 `grace_coherent_memory`: the Grace check's answers.
- Every new side SKIPs with its reason: on this CPU, and on a Hopper GPU (simulated) or a
  consumer Blackwell one.
"""
from __future__ import annotations

import importlib
import importlib.util
import json
import math
import os
import re
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from core import REPO_ROOT
from core.pairfile import unmet_requirement
from tests.conftest import cpu_only, cubin_registers_and_stack

needs_triton = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                  reason="triton is not installed")

TCGEN05_SIDES = ["ch08.baseline_tiling_tcgen05", "ch08.optimized_tiling_tcgen05",
                 "ch09.optimized_triton_matmul_tcgen05_tma", "ch10.baseline_matmul_tcgen05",
                 "ch10.optimized_matmul_tcgen05", "ch10.optimized_matmul_tcgen05_cublas"]
FP4_SIDES = ["ch09.optimized_fp8_gemm_nvfp4", "ch09.optimized_fp8_gemm_mxfp4"]
GRACE_SIDES = ["ch02.baseline_grace_coherent_memory", "ch02.optimized_grace_coherent_memory"]


def bench(module: str):
    return importlib.import_module(module).get_benchmark()


# --- the Triton kernel, compiled for sm_100 and sm_90 ----------------------------------------

@pytest.fixture(scope="module")
def compiled():
    """(capability, tile) -> CompiledKernel, each compiled once (1-3 s apiece)."""
    from ch08._tiling_tcgen05_kernel import compile_for

    cache = {}

    def get(capability, tile):
        if (capability, tile) not in cache:
            cache[capability, tile] = compile_for(capability, tile)
        return cache[capability, tile]

    return get


def instructions(ptx: str) -> set[str]:
    """The tcgen05 / TMA / wgmma / setmaxnreg opcodes a PTX listing uses (debug-info file
    names also contain "tcgen05", so match opcodes only: at the start of an instruction)."""
    return set(re.findall(r"^\s*(?:@%p\d+\s+)?((?:tcgen05|cp\.async\.bulk\.tensor|wgmma|setmaxnreg)[\w.:]*)",
                          ptx, re.MULTILINE))




@needs_triton
@pytest.mark.parametrize("tile_name", ["HOPPER_TILE", "TMEM_TILE"])
def test_the_kernel_compiles_for_sm100_to_tma_loads_and_tcgen05_mmas(compiled, tile_name):
    from ch08 import _tiling_tcgen05_common as common

    kernel = compiled(100, getattr(common, tile_name))
    ptx = kernel.asm["ptx"]
    assert ".target sm_100a" in ptx
    ops = instructions(ptx)
    assert "tcgen05.mma.cta_group::1.kind::f16" in ops  # bf16 operands from shared memory
    assert {"tcgen05.alloc.cta_group::1.sync.aligned.shared::cta.b32",  # TMEM for the acc
            "tcgen05.commit.cta_group::1.mbarrier::arrive::one.shared::cluster.b64"} <= ops
    assert any(op.startswith("tcgen05.ld.") for op in ops)  # the epilogue reads TMEM once
    # TMA: tiles global -> shared completing on an mbarrier, the C tile shared -> global
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes" in ops
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ops
    assert not any(op.startswith("wgmma") for op in ops)  # not Hopper's MMA


@needs_triton
def test_the_wide_tile_spills_on_sm90_and_fits_on_sm100(compiled):
    """The ch08 pair's premise, from ptxas itself: a 128 x 256 fp32 accumulator in 4 warps is
    256 registers per thread on Hopper (wgmma accumulates in registers), over the 255 limit;
    on Blackwell it lives in TMEM and the kernel needs no stack. 8 warps fit on Hopper."""
    from ch08._tiling_tcgen05_common import TMEM_TILE

    hopper = compiled(90, TMEM_TILE)
    assert any(op.startswith("wgmma.mma_async") for op in instructions(hopper.asm["ptx"]))
    registers, stack = cubin_registers_and_stack(hopper.asm["cubin"])
    assert registers == 255 and stack > 0
    assert cubin_registers_and_stack(compiled(90, replace(TMEM_TILE, num_warps=8)).asm["cubin"])[1] == 0
    assert cubin_registers_and_stack(compiled(100, TMEM_TILE).asm["cubin"])[1] == 0


@needs_triton
def test_warp_specialization_splits_the_loop_into_partitions_on_sm100(compiled):
    from ch08._tiling_tcgen05_common import TMEM_TILE
    from ch10.optimized_matmul_tcgen05 import WarpSpecializedTcgen05Matmul

    tile = WarpSpecializedTcgen05Matmul.tile
    assert tile == replace(TMEM_TILE, warp_specialize=True)
    specialized, pipelined = compiled(100, tile), compiled(100, TMEM_TILE)
    ttgir = specialized.asm["ttgir"]
    assert "ttg.warp_specialize" in ttgir and "ttg.warp_specialize" not in pipelined.asm["ttgir"]
    # each worker partition's region (up to its ttg.warp_return) does one job: a single warp
    # issues the MMAs, another partition the TMA loads; the epilogue stays with the kernel's
    # own warps after the region (TMEM load, TMA store)
    jobs = {}  # what a partition does -> its warps
    for header in re.finditer(r"partition\d+\(", ttgir):
        body = ttgir[header.end():ttgir.index("ttg.warp_return", header.end())]
        warps = int(re.search(r"num_warps\((\d+)\)", ttgir[header.end():]).group(1))
        job = ("mma" if "ttng.tc_gen5_mma" in body else "") + \
              ("load" if "async_tma_copy_global_to_local" in body else "")
        jobs[job] = warps
    assert set(jobs) == {"mma", "load"} and jobs["mma"] == 1, jobs
    epilogue = ttgir[ttgir.rindex("ttg.warp_return"):]
    assert "ttng.tmem_load" in epilogue and "async_tma_copy_local_to_global" in epilogue
    ops = instructions(specialized.asm["ptx"])
    assert {"setmaxnreg.inc.sync.aligned.u32", "setmaxnreg.dec.sync.aligned.u32"} <= ops
    assert "tcgen05.mma.cta_group::1.kind::f16" in ops
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes" in ops
    assert not any(op.startswith("setmaxnreg") for op in instructions(pipelined.asm["ptx"]))
    assert specialized.metadata.num_warps > pipelined.metadata.num_warps == 4  # + worker warps
    assert cubin_registers_and_stack(specialized.asm["cubin"])[1] == 0


INTERPRETED = r'''
import json
import torch
from ch08._tiling_tcgen05_common import TileConfig
from ch08._tiling_tcgen05_kernel import matmul_tma

g = torch.Generator().manual_seed(0)
results = {}
# edges: M and N not multiples of the tile, a K tail, a short last GROUP_M group; the
# warp-specialized build (its flag only reaches the compiler) must compute the same
CASES = [((64, 64, 64), TileConfig(32, 32, 16, group_m=2)),
         ((200, 328, 104), TileConfig(32, 64, 32, group_m=2)),
         ((96, 96, 48), TileConfig(32, 32, 16, group_m=2, warp_specialize=True))]
for (m, n, k), tile in CASES:
    for dtype, atol in ((torch.float16, 5e-2), (torch.float32, 1e-4)):
        a = torch.randn(m, k, generator=g).to(dtype)
        b = torch.randn(k, n, generator=g).to(dtype)
        c = torch.full((m, n), float("nan"), dtype=dtype)
        matmul_tma(a, b, c, tile)
        err = (c.double() - a.double() @ b.double()).abs()
        results[f"{m}x{n}x{k}_{str(dtype)[6:]}"] = {
            "nan": int(torch.isnan(c).sum()), "max_err": float(err.max()), "atol": atol}
print(json.dumps(results))
'''


@needs_triton
def test_the_kernel_computes_the_product_under_the_interpreter():
    """Triton's interpreter runs the kernel's indexing (grouped order, TMA descriptors' zero
    padding and clipped stores) on the CPU; fp16/fp32, since the interpreter's tl.dot reads
    bf16 as raw bits (see tests/test_ch09_triton.py)."""
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONPATH": str(REPO_ROOT)}
    done = subprocess.run([sys.executable, "-c", INTERPRETED], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert len(results) == 6
    for case, r in results.items():
        assert r["nan"] == 0 and r["max_err"] < r["atol"], (case, r)


def test_each_tcgen05_side_runs_its_tile_through_the_shared_kernel(monkeypatch):
    """The sides' wiring at a small shape on the CPU, with the kernel replaced by a recorder:
    ch08 baseline 128 x 128, everything else 128 x 256, ch10's optimized warp-specialized,
    cuBLAS without the kernel; every output is the product and the NaN output is re-armed."""
    from ch08 import _tiling_tcgen05_common as ch08_common
    from ch08 import _tiling_tcgen05_kernel as kernel
    from ch09 import _triton_matmul_common as ch09_common
    from core.benchmark import BenchContext

    for module in (ch08_common, ch09_common):
        for name in ("M", "N", "K"):
            monkeypatch.setattr(module, name, 64)
    calls = []

    def recorder(a, b, c, tile):
        calls.append(tile)
        c.copy_(a.float() @ b.float())
        return c

    monkeypatch.setattr(kernel, "matmul_tma", recorder)
    HOPPER, TMEM = ch08_common.HOPPER_TILE, ch08_common.TMEM_TILE
    expected = {"ch08.baseline_tiling_tcgen05": HOPPER, "ch08.optimized_tiling_tcgen05": TMEM,
                "ch09.optimized_triton_matmul_tcgen05_tma": TMEM,
                "ch10.baseline_matmul_tcgen05": TMEM,
                "ch10.optimized_matmul_tcgen05": replace(TMEM, warp_specialize=True),
                "ch10.optimized_matmul_tcgen05_cublas": None}
    for module, tile in expected.items():
        side = bench(module)
        side.ctx = BenchContext(seed=0, device="cpu")
        calls.clear()
        side.setup(side.ctx)
        assert torch.isnan(side.c).all() if tile else not calls, module  # re-armed / no kernel
        a = side.make_inputs(1)
        out = side.run(a)
        assert calls == ([tile, tile] if tile else []), module
        torch.testing.assert_close(out.float(), (a.float() @ side.b.float()), rtol=1e-2, atol=1e-2)


# --- FP4 GEMMs: quantizers, emulated error, the _scaled_mm call ------------------------------

def test_mxfp4_scales_are_the_smallest_power_of_two_that_fits_and_round_trip_exactly():
    from ch09._fp8_gemm_fp4 import dequantize_mxfp4, quantize_mxfp4
    from ch19._nvfp4_gemm_common import E2M1_VALUES

    grid = torch.tensor(E2M1_VALUES)
    g = torch.Generator().manual_seed(0)
    codes = torch.randint(0, 8, (4, 64), generator=g)
    sign = torch.where(torch.rand(4, 64, generator=g) < 0.5, -1.0, 1.0)
    x = sign * grid[codes] * torch.exp2(torch.tensor([-3.0, 0.0, 5.0, 1.0]))[:, None]
    x[:, 0] = x[:, 32] = 6.0 * torch.exp2(torch.tensor([-3.0, 0.0, 5.0, 1.0]))  # amax = 6 * 2^e
    x[3, 32:] = 0.0  # an all-zero block
    packed, exponent = quantize_mxfp4(x)
    assert packed.shape == (4, 32) and packed.dtype == exponent.dtype == torch.uint8
    assert exponent[:, 0].tolist() == [124, 127, 132, 128] and exponent[3, 1] == 0
    assert torch.equal(dequantize_mxfp4(packed, exponent), x)  # representable: exact
    assert int(packed[1, 0] & 15) == 7  # element 0 (6.0, code 7) is the low nibble
    y = torch.tensor([[7.5] + [0.5] * 31])  # amax 7.5: scale 2, 3.75 -> 4 (no saturation at 6)
    assert dequantize_mxfp4(*quantize_mxfp4(y))[0, 0] == 8.0


@pytest.mark.parametrize("fmt", ["nvfp4", "mxfp4"])
def test_emulated_fp4_gemm_error_matches_the_derivation_and_the_tolerance(fmt):
    from ch09 import _fp8_gemm_fp4 as fp4
    from ch19._nvfp4_gemm_common import dequantize_nvfp4, quantize_nvfp4

    def emulate(t):
        if fmt == "nvfp4":
            return dequantize_nvfp4(*quantize_nvfp4(t)).double()
        return fp4.dequantize_mxfp4(*fp4.quantize_mxfp4(t)).double()

    g = torch.Generator().manual_seed(0)
    m, k, n = 256, 2048, 512
    a, b = torch.randn(m, k, generator=g), torch.randn(k, n, generator=g)
    exact = a.double() @ b.double()
    got = emulate(a) @ emulate(b.t().contiguous()).t()  # B quantized along K, as the variant does
    sigma = float((got - exact).std()) / math.sqrt(k)
    low, high = {"nvfp4": (0.12, 0.15), "mxfp4": (0.145, 0.18)}[fmt]
    assert low < sigma < high
    tol = {"nvfp4": fp4.NVFP4_GEMM_TOLERANCE, "mxfp4": fp4.MXFP4_GEMM_TOLERANCE}[fmt]
    atol = tol.atol / math.sqrt(fp4.K) * math.sqrt(k)  # the bound scales with sqrt(K)
    torch.testing.assert_close(got, exact, rtol=tol.rtol, atol=atol)
    with pytest.raises(AssertionError):  # a scale off by 2 fails
        torch.testing.assert_close(2 * got, exact, rtol=tol.rtol, atol=atol)


@pytest.mark.parametrize("module", FP4_SIDES)
def test_fp4_variants_call_scaled_mm_with_operands_torch_accepts(module):
    """The variant's own prepare-then-run path, with the quantizer uncompiled on the CPU and
    the operands moved to the meta device, where torch's `_scaled_mm` shape and dtype checks
    (the block-scaled layouts it requires) run without a GPU."""
    from core.benchmark import BenchContext

    side = bench(module)
    operand = type(side).operand
    m, k, n = 256, 512, 384
    g = torch.Generator().manual_seed(0)
    side.b = torch.randn(k, n, generator=g)
    side.bt4, *side.b_scales = [t.to("meta") for t in operand(side.b.t().contiguous())]
    side.quantize = lambda x: tuple(t.to("meta") for t in operand(x))
    side.ctx = BenchContext(seed=0, device="cpu")
    out = side.run(torch.randn(m, k, generator=g))
    assert out.device.type == "meta" and out.shape == (m, n) and out.dtype == torch.bfloat16


def test_fp4_scale_layout_at_the_real_shape_passes_scaled_mm_checks():
    from ch09._fp8_gemm_common import K, M, N
    from ch19._nvfp4_gemm_common import to_blocked

    fp4 = torch.empty(M, K // 2, dtype=torch.uint8, device="meta").view(torch.float4_e2m1fn_x2)
    w4 = torch.empty(N, K // 2, dtype=torch.uint8, device="meta").view(torch.float4_e2m1fn_x2)
    for block, dtype in ((16, torch.float8_e4m3fn), (32, torch.uint8)):
        sa = to_blocked(torch.empty(M, K // block, dtype=dtype, device="meta"))
        sb = to_blocked(torch.empty(N, K // block, dtype=dtype, device="meta"))
        if dtype == torch.uint8:
            sa, sb = sa.view(torch.float8_e8m0fnu), sb.view(torch.float8_e8m0fnu)
        out = torch._scaled_mm(fp4, w4.t(), scale_a=sa, scale_b=sb, out_dtype=torch.bfloat16)
        assert out.shape == (M, N)


# --- ch02 grace_coherent_memory: the Grace check ---------------------------------------------

def test_grace_check_names_what_the_host_lacks():
    from ch02._grace_coherent_memory_common import c2c_unavailable

    assert "this host is x86_64" in c2c_unavailable("x86_64", 1)
    assert "Grace" in c2c_unavailable("x86_64", 1)
    assert "not on NVLink-C2C" in c2c_unavailable("aarch64", 0)  # an Arm server, PCIe GPU
    assert "not on NVLink-C2C" in c2c_unavailable("aarch64", -1)  # driver not asked/unknown
    assert c2c_unavailable("aarch64", 1) is None


def test_grace_sides_share_zero_copys_kernel_at_256_mib():
    from ch02._zero_copy_common import ZeroCopyBench

    base, opt = (bench(m) for m in GRACE_SIDES)
    assert isinstance(base, ZeroCopyBench) and base.source == opt.source == "zero_copy.cu"
    assert base.floats == opt.floats == 64 * 1024 * 1024
    assert base.workload().link_bytes == 256 * 1024 * 1024 and base.timing_mode == "hot"


# --- every new side SKIPs with its reason ----------------------------------------------------

@pytest.fixture
def gpu(monkeypatch):
    """Pretend one GPU of the given compute capability is present."""
    def set_capability(capability):
        monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: capability)
    return set_capability


@cpu_only
@pytest.mark.parametrize("module", TCGEN05_SIDES + FP4_SIDES + GRACE_SIDES)
def test_new_sides_skip_on_this_cpu(module):
    assert "needs a CUDA GPU" in unmet_requirement(bench(module), "cpu")


@pytest.mark.parametrize("module", TCGEN05_SIDES + FP4_SIDES)
def test_blackwell_sides_skip_on_hopper_with_the_reason(gpu, module):
    gpu((9, 0))
    assert unmet_requirement(bench(module), "cuda") == "needs compute capability ≥ 10.0; this GPU is 9.0"
    gpu((10, 0))
    assert unmet_requirement(bench(module), "cuda") is None


def test_the_hopper_sides_beside_them_still_run_on_hopper(gpu):
    gpu((9, 0))
    for module in ("ch09.baseline_triton_matmul", "ch09.optimized_triton_matmul",
                   "ch09.baseline_fp8_gemm", "ch09.optimized_fp8_gemm"):
        assert unmet_requirement(bench(module), "cuda") is None, module


@pytest.mark.parametrize("module", TCGEN05_SIDES)
def test_tcgen05_sides_refuse_consumer_blackwell(gpu, module):
    gpu((12, 0))
    assert "needs tcgen05 tensor cores" in unmet_requirement(bench(module), "cuda")


@pytest.mark.parametrize("module", GRACE_SIDES)
def test_grace_sides_skip_on_an_x86_hopper_host(gpu, module, monkeypatch):
    monkeypatch.setattr("platform.machine", lambda: "x86_64")
    gpu((9, 0))
    reason = unmet_requirement(bench(module), "cuda")
    assert reason.startswith("needs a Grace superchip") and "x86_64" in reason
    gpu((8, 0))
    assert unmet_requirement(bench(module), "cuda") == "needs compute capability ≥ 9.0; this GPU is 8.0"
