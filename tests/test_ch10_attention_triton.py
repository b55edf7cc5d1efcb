"""ch10's hand-written Hopper attention (`_attention_triton_kernel.py`) on a CPU-only machine.

- Numerics, under Triton's interpreter (TRITON_INTERPRET=1, in a child process because the
  variable must be set before triton is imported): the kernel's own indexing, TMA
  descriptor loads and stores, online softmax and causal split, at B=1, H=2, S=256-512,
  D=64 and 128, non-causal and causal, at pinned launch configs (BLOCK_N 64 and 128, the
  warp-specialize flag on and off), against a float64 reference and against SDPA's math in
  the inputs' dtype, with the attention pair's tolerance. In fp16 and fp32, not bf16: the
  interpreter's `tl.dot` (Triton 3.9) multiplies bf16 operands as raw uint16 bit patterns
  (see tests/test_ch09_triton.py). The kernel rounds P to the inputs' dtype, so on a GPU
  the same code runs the pairs' bf16.
- Hopper code generation, compiled for sm_90 without a GPU (Triton's compiler and ptxas run
  on the CPU): the software-pipelined configs load through TMA, multiply with wgmma, use
  exp2, and fit in registers (no spills) and in an SM's shared memory.
- The launcher's guards and the autotuner's pruning (tiles that divide S, no warp
  specialization on the causal pass, configs the installed Triton cannot compile dropped).
- The variants' wiring (non-causal for `attention_triton`, causal for
  `attention_long_context_triton`) and their clean SKIP on this machine.
What none of this covers: bf16 on the GPU, Triton 3.6 (the GPU machines') code generation,
the warp-specialized build on sm_90, speed. Those need the GPU run.
"""
from __future__ import annotations

import importlib
import importlib.util
import re

import pytest
import torch

from core.pairfile import unmet_requirement
from tests.conftest import cubin_registers_and_stack, run_interpreted

pytestmark = pytest.mark.skipif(importlib.util.find_spec("triton") is None,
                                reason="triton is not installed")

CHILD = r'''
import json
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ch10._attention_common import AttentionBench
from ch10._attention_triton_kernel import attention_forward
from core.verify import compare

TOL = AttentionBench.tolerance
g = torch.Generator().manual_seed(0)
results = {}
CONFIGS = {"bn64": {"BLOCK_M": 128, "BLOCK_N": 64},
           "bn128_ws": {"BLOCK_M": 128, "BLOCK_N": 128, "WARP_SPECIALIZE": True}}
for dtype in (torch.float16, torch.float32):
    for seq, dim in ((256, 64), (256, 128), (512, 64)):
        # scaled up so the softmax is peaked and a wrong scale or mask would show
        q, k, v = (2 * torch.randn(1, 2, seq, dim, generator=g).to(dtype) for _ in range(3))
        for causal in (False, True):
            truth = F.scaled_dot_product_attention(q.double(), k.double(), v.double(),
                                                   is_causal=causal)
            with sdpa_kernel(SDPBackend.MATH):
                sdpa = F.scaled_dot_product_attention(q, k, v, is_causal=causal)
            for name, config in CONFIGS.items():
                out = attention_forward(q, k, v, causal, config=config)
                tag = f"{str(dtype)[6:]}_S{seq}_D{dim}_{'causal' if causal else 'full'}_{name}"
                vs_truth = compare(truth, out, TOL, same_dtype=False)
                vs_sdpa = compare(sdpa, out, TOL)
                results[tag] = {"dtype": str(out.dtype), "shape": list(out.shape),
                                "vs_fp64": vs_truth.ok, "vs_sdpa": vs_sdpa.ok,
                                "used": vs_truth.tolerance_used,
                                "max_err": float((out.double() - truth).abs().max()),
                                "message": vs_truth.message + " | " + vs_sdpa.message}
            # the other masking's answer must fail: the flag reaches the kernel
            other = attention_forward(q, k, v, not causal, config=CONFIGS["bn64"])
            results[tag.rsplit("_", 2)[0] + "_flipped"] = {
                "flipped_fails": not compare(truth, other, TOL, same_dtype=False).ok}
print("RESULTS " + json.dumps(results))
'''


@pytest.fixture(scope="module")
def interpreted() -> dict:
    return run_interpreted(CHILD)


def test_kernel_matches_fp64_and_sdpa_under_the_interpreter(interpreted: dict) -> None:
    runs = {tag: r for tag, r in interpreted.items() if not tag.endswith("_flipped")}
    assert len(runs) == 2 * 3 * 2 * 2  # dtypes x shapes x masking x configs
    for tag, r in runs.items():
        assert r["vs_fp64"] and r["vs_sdpa"], (tag, r["message"])
        assert r["used"] < 0.25, (tag, r)  # well inside the tolerance, not at its edge
        assert r["dtype"] == ("torch.float16" if tag.startswith("float16") else "torch.float32")
        if tag.startswith("float32"):
            assert r["max_err"] < 1e-4, (tag, r)  # fp32 operands: only summation order


def test_causal_and_full_answers_differ(interpreted: dict) -> None:
    flipped = {tag: r for tag, r in interpreted.items() if tag.endswith("_flipped")}
    assert len(flipped) == 2 * 3 * 2
    assert all(r["flipped_fails"] for r in flipped.values()), flipped


# --- Hopper code generation, compiled for sm_90 on the CPU -----------------------------------

SMEM_PER_BLOCK = 227 * 1024  # the most shared memory one CTA may opt into on H100/H200


def instructions(ptx: str) -> set[str]:
    return set(re.findall(
        r"^\s*(?:@%p\d+\s+)?((?:cp\.async\.bulk\.tensor|wgmma\.mma_async|ex2|mbarrier\.try_wait"
        r"|setmaxnreg)[\w.:]*)", ptx, re.MULTILINE))




# (BLOCK_M, BLOCK_N, num_stages): BLOCK_M 128 runs 8 warps (two warpgroups), 64 runs 4 (one)
PIPELINED = [(128, 128, 2), (128, 128, 3), (128, 64, 2), (128, 64, 3), (64, 64, 3)]


@pytest.mark.parametrize("causal", [False, True], ids=["full", "causal"])
@pytest.mark.parametrize("block_m, block_n, stages", PIPELINED,
                         ids=[f"bm{m}_bn{n}_s{s}" for m, n, s in PIPELINED])
def test_pipelined_configs_compile_to_tma_and_wgmma_without_spills(block_m: int, block_n: int,
                                                                   stages: int,
                                                                   causal: bool) -> None:
    from ch10._attention_triton_kernel import CONFIGS, compile_for

    config = next(c for c in CONFIGS if c.kwargs["BLOCK_N"] == block_n and c.num_stages == stages
                  and c.kwargs["BLOCK_M"] == block_m and not c.kwargs["WARP_SPECIALIZE"])
    assert config.num_warps == block_m // 16  # one warpgroup (4 warps) per 64 query rows
    kernel = compile_for(90, config, causal)
    ptx = kernel.asm["ptx"]
    assert ".target sm_90a" in ptx
    ops = instructions(ptx)
    # TMA: K/V (and Q) tiles global -> shared completing on an mbarrier; O shared -> global
    assert "cp.async.bulk.tensor.2d.shared::cta.global.mbarrier::complete_tx::bytes" in ops
    assert "cp.async.bulk.tensor.2d.global.shared::cta.bulk_group" in ops
    assert any(op.startswith("mbarrier.try_wait") for op in ops)
    # wgmma for both matmuls: Q Kᵀ (N = BLOCK_N) and P V (N = head_dim 128), bf16 -> fp32
    assert f"wgmma.mma_async.sync.aligned.m64n{block_n}k16.f32.bf16.bf16" in ops
    assert "wgmma.mma_async.sync.aligned.m64n128k16.f32.bf16.bf16" in ops
    assert any(op.startswith("ex2.approx") for op in ops)  # the exp2 softmax
    registers, stack = cubin_registers_and_stack(kernel.asm["cubin"])
    assert registers <= 255 and stack == 0, (registers, stack)
    assert kernel.metadata.shared <= SMEM_PER_BLOCK, kernel.metadata.shared


# --- the launcher and the autotuner's pruning ------------------------------------------------

def test_launcher_rejects_what_the_kernel_cannot_do() -> None:
    from ch10._attention_triton_kernel import attention_forward

    q = torch.zeros(1, 1, 200, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="must divide sequence length 200"):
        attention_forward(q, q, q, False, config={"BLOCK_M": 128, "BLOCK_N": 64})
    q = torch.zeros(1, 1, 256, 64, dtype=torch.float16)
    with pytest.raises(ValueError, match="BLOCK_N divide BLOCK_M when causal"):
        attention_forward(q, q, q, True, config={"BLOCK_M": 64, "BLOCK_N": 128})
    with pytest.raises(ValueError, match="head_dim"):
        attention_forward(*(torch.zeros(1, 1, 256, 96),) * 3, False,
                          config={"BLOCK_M": 128, "BLOCK_N": 64})


def test_pruning_keeps_dividing_tiles_and_no_warp_specialization_when_causal(
        monkeypatch: pytest.MonkeyPatch) -> None:
    import ch10._attention_triton_kernel as kern

    monkeypatch.setattr(kern, "_compiles", lambda config, args: True)
    full = kern._usable(kern.CONFIGS, {"seq_len": 4096}, HEAD_DIM=128, CAUSAL=False)
    assert full == kern.CONFIGS and any(c.kwargs["WARP_SPECIALIZE"] for c in full)
    causal = kern._usable(kern.CONFIGS, {"seq_len": 32768}, HEAD_DIM=128, CAUSAL=True)
    assert causal and not any(c.kwargs["WARP_SPECIALIZE"] for c in causal)
    assert {c.kwargs["BLOCK_N"] for c in causal} == {64, 128}
    with pytest.raises(ValueError, match="no launch configuration fits sequence length 288"):
        kern._usable(kern.CONFIGS, {"seq_len": 288}, HEAD_DIM=128, CAUSAL=False)  # 4.5 x 64


def test_a_config_the_compiler_rejects_is_dropped_with_its_reason(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A compiler pass that fails (as Triton 3.9's Hopper warp specialization does on this
    kernel) drops that config instead of aborting the tuning run."""
    import ch10._attention_triton_kernel as kern
    from triton.tools.tensor_descriptor import TensorDescriptor

    def warmup(*args, WARP_SPECIALIZE: bool, **kwargs) -> None:
        assert [d.block_shape for d in args[:4]] == [[bm, 64], [bn, 64], [bn, 64], [bm, 64]]
        if WARP_SPECIALIZE:
            raise RuntimeError("PassManager::run failed")

    monkeypatch.setattr(kern.attention_fwd_kernel, "warmup", warmup)
    monkeypatch.setattr(kern, "DROPPED", {})
    x = torch.zeros(256, 64, dtype=torch.float16)
    desc = TensorDescriptor.from_tensor(x, [128, 64])
    args = {"q_desc": desc, "k_desc": desc, "v_desc": desc, "o_desc": desc, "qk_scale": 0.18,
            "seq_len": 256, "HEAD_DIM": 64, "CAUSAL": False}
    for config in kern.CONFIGS:
        bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
        assert kern._compiles(config, args) is not config.kwargs["WARP_SPECIALIZE"]
    assert len(kern.DROPPED) == 2 and all("PassManager" in why for why in kern.DROPPED.values())


# --- the variants ----------------------------------------------------------------------------

@pytest.mark.parametrize("module, causal", [("ch10.optimized_attention_triton", False),
                                            ("ch10.optimized_attention_long_context_triton", True)])
def test_variant_calls_the_kernel_with_its_masking_and_skips_here(module: str,
                                                                  causal: bool) -> None:
    bench = importlib.import_module(module).get_benchmark()
    calls = []
    bench.attention = lambda q, k, v, causal: calls.append((q, k, v, causal)) or q
    inputs = tuple(torch.randn(1, 2, 256, 64) for _ in range(3))
    assert bench.run(inputs) is inputs[0]
    assert len(calls) == 1 and calls[0][:3] == inputs and calls[0][3] is causal
    why = unmet_requirement(bench, "cpu")
    assert why and "CUDA GPU" in why  # a clean SKIP with its reason on this machine
    assert bench.requires.min_compute_capability == (9, 0) and "triton" in bench.requires.modules


def test_the_sweep_says_it_needs_a_hopper_gpu_here() -> None:
    """`python -m ch10.sweep_attention_triton` on a machine without sm_90 exits with the reason,
    not a traceback from deep inside Triton; its config labels name the launch."""
    import subprocess
    import sys

    from ch10._attention_triton_kernel import CONFIGS
    from ch10.sweep_attention_triton import config_label

    done = subprocess.run([sys.executable, "-m", "ch10.sweep_attention_triton", "--samples", "1"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode != 0 and "needs a Hopper (sm_90) or newer GPU" in done.stderr
    assert config_label(CONFIGS[1]) == "M128 N128 w8 s3"
    assert config_label(CONFIGS[-1]).endswith(" ws")


def test_the_sweep_times_its_rows_in_interleaved_rounds() -> None:
    from ch10.sweep_attention_triton import timed_in_rounds

    order = []

    def fake_ms(call, samples):
        order.append((call(), samples))
        return float(len(order))
    times = timed_in_rounds({"a": lambda: "a", "b": lambda: "b"}, samples=7, rounds=3,
                            time_ms=fake_ms)
    assert order == [("a", 7), ("b", 7)] * 3  # a, b, a, b, ...: no row is timed all at once
    assert times == {"a": [1.0, 3.0, 5.0], "b": [2.0, 4.0, 6.0]}


def test_the_tuner_times_configs_back_to_back_like_the_harness(monkeypatch: pytest.MonkeyPatch) -> None:
    """The autotuner's timer is the harness's measure_cuda on back-to-back calls (no L2 flush
    between them, as Triton's default does), and it answers Triton's quantiles from them."""
    import ch10._attention_triton_kernel as kern
    import core.timing
    from core.timing import Batch

    assert kern.attention_fwd_tuned.do_bench is kern._time_back_to_back
    batches = []

    def fake_measure(fn, n):
        batches.append(n)
        for _ in range(n):
            fn()
        return Batch(samples_ms=[float(i + 1) for i in range(n)], wall_ms=0.0)
    monkeypatch.setattr(core.timing, "measure_cuda", fake_measure)
    calls = []
    quantiles = kern._time_back_to_back(lambda: calls.append(1), quantiles=(0.5, 0.2, 0.8))
    assert batches == [3, kern.TUNING_CALLS] and len(calls) == 3 + kern.TUNING_CALLS
    assert quantiles == [11.0, 5.0, 17.0]  # of 1..20 ms
