"""Where ch13's quantization pairs spend their time, part by part, on one GPU.

    python -m ch13.sweep_quantization [--part quantization dynamic fp8]
    python -m ch13.sweep_quantization --profile-one quantization:optimized   (ncu driver)

- quantization (y = x Wᵀ, K = N = 8192): bf16 F.linear (cuBLAS) and the int8 weight-only
  kernel's tiles at M = 1, 16, 64, 256 tokens: GPU µs per call (CUDA-graph replay), weight
  bytes / time, and that as % of a measured copy (torch copy_ of 1 GiB, bytes read + written,
  as `hw peak` counts it). At M = 16 also the eager time per call, back to back, which is
  what the harness measured before the pair moved to graph replay.
- dynamic (the same layer at M = 2048): each part alone: the per-token quantizers (torch ops,
  Triton), torch._int_mm and its separate rescale (the first version), the Triton int8 GEMM
  with fused scales per tile, the bf16 GEMM, and for comparison fp8 e4m3 with row-wise scales
  (torch._scaled_mm, ch19's fp8_linear); then the kernels cuBLASLt runs for _int_mm and
  _scaled_mm (torch.profiler).
- fp8 (precisionfp8's block, d 4096, hidden 16384, 8192 tokens): the six GEMMs of one block
  in bf16 and in fp8 alone, each tensor's quantization (amax, cast-transpose) against an
  eager transpose of its fp8 copy (the first version's layout work), and the whole
  forward + backward of both blocks per side, with the sum of the parts beside it.

Every configuration's answer is checked against a reference before it is timed; a wrong one
raises (the sweep fails loudly). About 10 s of GPU work, plus ~25 Triton compiles on the
host (cached on disk: a second run, or the pairs' setup() after it, reuses them).

`--profile-one PAIR[:SIDE]` sets up a pair's sides as the harness does, warms them, and runs
exactly one call per side between torch.cuda.profiler.start()/stop(), printing nothing on
stdout: the driver ch13/ncu_quantization.sh runs under `ncu --profile-from-start off`.
`--ncu-summary LABEL FILE` reads ncu's `--csv --page raw` output from FILE and prints a short CSV.
"""
from __future__ import annotations

import argparse
import csv
import io
import math
import statistics
import sys
from typing import Any, Callable

import torch
import torch.nn.functional as F

from ch13._quantization_common import K, N, gpu_time_us, quantize_rows, quantize_tokens

GB = 1e9


def eager_us(fn: Callable[[], Any], calls: int = 50) -> float:
    """µs per call launched back to back from Python (events around each call): the host's
    launch time shows up here when it exceeds the GPU's."""
    from core.timing import measure_cuda

    measure_cuda(fn, 5)
    return 1e3 * statistics.median(measure_cuda(fn, calls).samples_ms)


def copy_gbps() -> float:
    src = torch.randn(2**28, device="cuda")  # 1 GiB of fp32
    dst = torch.empty_like(src)
    from core.timing import measure_cuda

    measure_cuda(lambda: dst.copy_(src), 3)
    ms = min(measure_cuda(lambda: dst.copy_(src), 10).samples_ms)
    return 2 * src.numel() * 4 / ms / 1e6


def table(header: list[str], rows: list[list[str]]) -> str:
    lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
    return "\n".join(lines + ["| " + " | ".join(r) + " |" for r in rows])


def close(got: torch.Tensor, expected: torch.Tensor, what: str, rtol: float, atol: float) -> None:
    """Raise unless got ≈ expected: a configuration that computes the wrong answer is not timed."""
    if not torch.allclose(got.double(), expected.double(), rtol=rtol, atol=atol):
        err = float((got.double() - expected.double()).abs().max())
        raise AssertionError(f"{what}: wrong answer (max abs error {err:.3g}, atol {atol})")


# ----------------------------------------------------------------------------- quantization

def sweep_weight_only(copy: float, tokens: tuple[int, ...] = (1, 16, 64, 256)) -> str:
    from ch13._int8_kernel import Int8WeightOnlyLinear, decode_tiles

    gen = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(N, K, generator=gen, device="cuda") / math.sqrt(K)).bfloat16()
    q, scale = quantize_rows(w)
    linear = Int8WeightOnlyLinear(q, scale)
    deq = (q.float() * scale[:, None]).T
    rows = []

    def row(m: int, name: str, us: float, weight_bytes: int, eager: float | None = None) -> None:
        gbps = weight_bytes / (us * 1e-6) / GB
        rows.append([str(m), name, f"{us:.1f}", f"{eager:.1f}" if eager else "", f"{gbps:.0f}",
                     f"{100 * gbps / copy:.0f}%"])

    for m in tokens:
        x = torch.randn(m, K, generator=gen, device="cuda").bfloat16()
        close(F.linear(x, w), x.float() @ w.float().T, f"bf16 M={m}", 1e-2, 2e-2)
        row(m, "bf16 F.linear (cuBLAS)", gpu_time_us(lambda: F.linear(x, w)), 2 * N * K,
            eager_us(lambda: F.linear(x, w)) if m == 16 else None)
        expected = x.float() @ deq
        tiles = decode_tiles(m)
        if m != 16:  # the full set at the pair's M; three shapes elsewhere (compile time)
            tiles = [tiles[i] for i in (0, 3, 4)]
        timings = linear.tune(x, tiles, check=lambda y, m=m: close(y, expected, f"int8 M={m}", 1e-2, 2e-2))
        for tile, us in sorted(timings.items(), key=lambda kv: kv[1]):
            eager = eager_us(lambda t=tile: linear(x, t)) if m == 16 and tile == linear.tile else None
            row(m, f"int8 {tile}", us, N * K + 4 * N, eager)
        rows.extend([str(m), f"int8 {tile}: skipped ({why})", "", "", "", ""]
                    for tile, why in linear.skipped.items())
    return table(["M", "kernel", "GPU µs", "eager µs", "weight GB/s", "% of copy"], rows)


# ----------------------------------------------------------------------------- dynamic

def kernel_names(fn: Callable[[], Any]) -> list[str]:
    from torch.profiler import ProfilerActivity, profile

    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        fn()
        torch.cuda.synchronize()
    return sorted({e.name for e in prof.events() if e.device_type == torch.autograd.DeviceType.CUDA})


def sweep_dynamic(copy: float, m: int = 2048) -> str:
    from ch13._int8_kernel import int8_matmul_scaled, quantize_rows as quantize_triton, tune_gemm
    from ch13.optimized_quantization_dynamic import rescale

    gen = torch.Generator(device="cuda").manual_seed(0)
    w = (torch.randn(N, K, generator=gen, device="cuda") / math.sqrt(K)).bfloat16()
    x = torch.randn(m, K, generator=gen, device="cuda").bfloat16()
    q, w_scale = quantize_rows(w)
    qt = q.t()  # [K, N] column-major: what _int_mm's cuBLASLt path takes
    flops = 2 * m * N * K
    rows = []

    def row(name: str, us: float, rate: str) -> None:
        rows.append([name, f"{us:.1f}", rate])

    def tflops(us: float) -> str:
        return f"{flops / (us * 1e-6) / 1e12:.0f} TFLOP/s"

    def gbps(moved: int, us: float) -> str:
        g = moved / (us * 1e-6) / GB
        return f"{g:.0f} GB/s ({100 * g / copy:.0f}% of copy)"

    ref = x.float() @ w.float().T
    close(F.linear(x, w), ref, "bf16 prefill", 1e-2, 5e-2)
    bf16_us = gpu_time_us(lambda: F.linear(x, w))
    row("bf16 F.linear (cuBLAS)", bf16_us, tflops(bf16_us))

    xq, x_scale = quantize_tokens(x)
    xq_t, x_scale_t = quantize_triton(x)
    if int((xq_t.int() - xq.int()).abs().max()) > 1 or not torch.allclose(x_scale_t, x_scale):
        raise AssertionError("Triton per-token quantizer disagrees with quantize_tokens")
    q_bytes = 3 * m * K + 4 * m  # bf16 in, int8 out, scales
    for name, fn in (("quantize x, torch ops (eager; the first version compiled them)", lambda: quantize_tokens(x)),
                     ("quantize x, Triton (1 kernel)", lambda: quantize_triton(x))):
        us = gpu_time_us(fn)
        row(name, us, gbps(q_bytes, us))

    exact = (xq.double() @ q.double().T) * x_scale.double() * w_scale.double()[None, :]
    acc = torch._int_mm(xq, qt)
    close(acc, xq.double() @ q.double().T, "_int_mm", 0, 0.5)
    int_mm_us = gpu_time_us(lambda: torch._int_mm(xq, qt))
    row("torch._int_mm alone (int32 out)", int_mm_us, tflops(int_mm_us))
    rescale_us = gpu_time_us(lambda: rescale(acc, x_scale, w_scale))
    row("rescale int32 -> bf16 (eager)", rescale_us, gbps(6 * m * N, rescale_us))

    timings = tune_gemm(xq, q, x_scale, w_scale,
                        check=lambda c: close(c, exact, "Triton int8 GEMM", 1e-2, 1e-2))
    for tile, us in sorted(timings.items(), key=lambda kv: kv[1]):
        row(f"Triton int8 GEMM + scales {tile}", us, tflops(us))
    best = min(timings, key=timings.get)
    old = gpu_time_us(lambda: rescale(torch._int_mm(quantize_tokens(x)[0], qt), x_scale, w_scale))

    def int8_side() -> torch.Tensor:  # optimized_quantization_dynamic's run()
        xq_, x_scale_ = quantize_triton(x)
        return int8_matmul_scaled(xq_, q, x_scale_, w_scale, best)

    close(int8_side(), ref, "int8 dynamic side", 1e-2, 0.2)
    new = gpu_time_us(int8_side)
    row("torch path: quantize + _int_mm + rescale (eager ops)", old, f"{bf16_us / old:.2f}x of bf16")
    row("optimized side: quantize (Triton) + int8 GEMM", new, f"{bf16_us / new:.2f}x of bf16")

    e4m3 = torch.float8_e4m3fn
    w8, w8_scale = quantize_triton(w, e4m3)  # per output channel
    x8, x8_scale = quantize_triton(x, e4m3)
    for fast in (False, True):
        fp8 = torch._scaled_mm(x8, w8.t(), scale_a=x8_scale, scale_b=w8_scale.view(1, -1),
                               out_dtype=torch.bfloat16, use_fast_accum=fast)
        close(fp8, ref, "fp8 row-wise _scaled_mm", 1e-2, 0.4)
        us = gpu_time_us(lambda fast=fast: torch._scaled_mm(
            x8, w8.t(), scale_a=x8_scale, scale_b=w8_scale.view(1, -1), out_dtype=torch.bfloat16,
            use_fast_accum=fast))
        row(f"fp8 e4m3 row-wise _scaled_mm alone, fast_accum={fast}", us, tflops(us))

    def fp8_side() -> torch.Tensor:  # what ch19's fp8_linear runs, with this kernel's quantizer
        x8, x8_scale = quantize_triton(x, e4m3)
        return torch._scaled_mm(x8, w8.t(), scale_a=x8_scale, scale_b=w8_scale.view(1, -1),
                                out_dtype=torch.bfloat16)

    fp8_us = gpu_time_us(fp8_side)
    row("fp8 side: quantize (Triton) + _scaled_mm", fp8_us, f"{bf16_us / fp8_us:.2f}x of bf16")

    names = [f"_int_mm -> {n[:90]}" for n in kernel_names(lambda: torch._int_mm(xq, qt))]
    names += [f"_scaled_mm -> {n[:90]}" for n in kernel_names(lambda: torch._scaled_mm(
        x8, w8.t(), scale_a=x8_scale, scale_b=w8_scale.view(1, -1), out_dtype=torch.bfloat16))]
    return table([f"part (M={m}, K=N={K})", "GPU µs", "rate"], rows) + "\n\n" + "\n".join(names)


# ----------------------------------------------------------------------------- fp8 training

def sweep_fp8(copy: float) -> str:
    from ch13._fp8_common import BLOCKS, D, FP8_TRAINING_TOLERANCE, HIDDEN, TOKENS
    from ch13._fp8_linear import E4M3, E5M2, mm_fp8, quantize, quantize_t
    from ch13.baseline_precisionfp8 import Bf16Mlp
    from ch13.optimized_precisionfp8 import Fp8Mlp
    from core.benchmark import BenchContext

    gen = torch.Generator(device="cuda").manual_seed(0)
    t, d, h = TOKENS, D, HIDDEN
    label = {E4M3: "e4m3", E5M2: "e5m2"}

    def ms(fn: Callable[[], Any]) -> float:
        from core.timing import measure_cuda

        measure_cuda(fn, 3)
        return statistics.median(measure_cuda(fn, 10).samples_ms)

    # The six GEMMs of one block (name, M, N, K, a's fp8 dtype), each alone. bf16 is timed
    # with both operands K-major; cuBLAS's bf16 speed barely depends on the layout.
    gemms = [("fwd x·W1ᵀ", t, h, d, E4M3), ("fwd a·W2ᵀ", t, d, h, E4M3),
             ("dgrad dy·W2", t, h, d, E5M2), ("wgrad dyᵀ·a", d, h, t, E5M2),
             ("dgrad dh·W1", t, d, h, E5M2), ("wgrad dhᵀ·x", h, d, t, E5M2)]
    gemm_rows, bf16_total, fp8_total = [], 0.0, 0.0
    for name, m, n, k, a_dtype in gemms:
        a = torch.randn(m, k, generator=gen, device="cuda").bfloat16()
        b = (torch.randn(n, k, generator=gen, device="cuda") / math.sqrt(k)).bfloat16()
        a8, sa = quantize(a, a_dtype)
        b8, sb = quantize(b, E4M3)
        ref = a @ b.t()
        rel = float((mm_fp8(a8, b8.t(), sa, sb).float() - ref.float()).norm() / ref.float().norm())
        if not rel < 0.1:
            raise AssertionError(f"fp8 GEMM {name}: relative error {rel:.3f}")
        bf16_ms, fp8_ms = ms(lambda: a @ b.t()), ms(lambda: mm_fp8(a8, b8.t(), sa, sb))
        bf16_total, fp8_total = bf16_total + bf16_ms, fp8_total + fp8_ms
        tf = 2 * m * n * k / 1e9
        gemm_rows.append([f"{name} [{m}x{k}]·[{k}x{n}] {label[a_dtype]}", f"{bf16_ms:.3f}",
                          f"{tf / bf16_ms:.0f}", f"{fp8_ms:.3f}", f"{tf / fp8_ms:.0f}",
                          f"{bf16_ms / fp8_ms:.2f}x"])
    gemm_rows.append([f"all six x {BLOCKS} blocks", f"{BLOCKS * bf16_total:.2f}", "",
                      f"{BLOCKS * fp8_total:.2f}", "", f"{bf16_total / fp8_total:.2f}x"])

    # Each tensor one block quantizes: the amax pass, the cast-transpose kernel (2 bytes read,
    # 2 written per element), and the first version's eager transpose of an fp8 copy.
    tensors = [("x", t, d, E4M3), ("W1", h, d, E4M3), ("a = gelu(x·W1ᵀ)", t, h, E4M3),
               ("W2", d, h, E4M3), ("dy", t, d, E5M2), ("dh", t, h, E5M2)]
    quant_rows, quant_total, transpose_total = [], 0.0, 0.0
    for name, r, c, dtype in tensors:
        v = torch.randn(r, c, generator=gen, device="cuda").bfloat16()
        q8, q8t, s = quantize_t(v, dtype)
        q_ref, s_ref = quantize(v, dtype)
        step = q_ref.float().abs() * 2.0 ** -(3 if dtype == E4M3 else 2) + 2.0 ** -16  # one fp8 step
        if not (torch.equal(q8t.view(torch.uint8), q8.t().contiguous().view(torch.uint8))
                and torch.allclose(s, s_ref, rtol=1e-6, atol=0)
                and bool(((q8.float() - q_ref.float()).abs() <= step).all())):
            raise AssertionError(f"cast-transpose of {name}: differs from torch's quantize + transpose")
        amax_ms = ms(lambda: torch.linalg.vector_norm(v, float("inf")))
        cast_ms = ms(lambda: quantize_t(v, dtype)) - amax_ms
        tr_ms = ms(lambda: q8.t().contiguous())
        quant_total, transpose_total = quant_total + amax_ms + cast_ms, transpose_total + tr_ms
        n_el = r * c
        quant_rows.append([f"{name} [{r}x{c}] {label[dtype]}", f"{amax_ms:.3f}",
                           f"{2 * n_el / (amax_ms * 1e6):.0f}", f"{cast_ms:.3f}",
                           f"{4 * n_el / (cast_ms * 1e6):.0f}", f"{tr_ms:.3f}",
                           f"{2 * n_el / (tr_ms * 1e6):.0f}"])
    quant_rows.append([f"all six x {BLOCKS} blocks", "", "", f"{BLOCKS * quant_total:.2f} (with amax)",
                       "", f"{BLOCKS * transpose_total:.2f}", ""])

    # The whole forward + backward per side, and the optimized side with the first version's
    # transposes put back (each quantization also copies q8.t().contiguous(), as it did).
    ctx = BenchContext(seed=0, device="cuda")
    sides = {}
    for cls in (Bf16Mlp, Fp8Mlp):
        bench = cls()
        bench.ctx = ctx
        bench.setup(ctx)
        sides[cls] = bench
    base, fp8 = sides[Bf16Mlp], sides[Fp8Mlp]
    inputs = base.make_inputs(1)
    for got, expected in zip(fp8.run(inputs), base.run(inputs)):
        close(got, expected, "fp8 MLP against bf16", FP8_TRAINING_TOLERANCE.rtol, FP8_TRAINING_TOLERANCE.atol)

    def eager_transposes(v: torch.Tensor, dtype: torch.dtype) -> tuple[torch.Tensor, ...]:
        q8, _, s = quantize_t(v, dtype)
        return q8, q8.t().contiguous(), s

    whole = {"bf16 (baseline)": ms(lambda: base.run(inputs)),
             "fp8, cast-transpose (optimized)": ms(lambda: fp8.run(inputs))}
    fp8.quant = eager_transposes
    whole["fp8, plus an eager .t().contiguous() per quantization"] = ms(lambda: fp8.run(inputs))
    whole_rows = [[name, f"{v:.2f}", f"{whole['bf16 (baseline)'] / v:.2f}x"] for name, v in whole.items()]
    whole_rows.append(["parts (fp8 side): GEMMs + quantization, the rest is GELU, adds, autograd",
                       f"{BLOCKS * (fp8_total + quant_total):.2f}", ""])
    return "\n\n".join([
        table(["GEMM of one block", "bf16 ms", "TFLOP/s", "fp8 ms", "TFLOP/s", "fp8 gain"], gemm_rows),
        table(["quantized tensor", "amax ms", "GB/s", "cast-transpose ms", "GB/s",
               "eager fp8 transpose ms", "GB/s"], quant_rows),
        table([f"fwd+bwd, {BLOCKS} blocks, {t} tokens", "ms", "x of bf16"], whole_rows)])


# ----------------------------------------------------------------------------- ncu driver

def profile_one(target: str) -> None:
    """One warm call per side between cudaProfilerStart/Stop (ncu --profile-from-start off)."""
    import importlib

    from core.benchmark import BenchContext
    from core.profiling import nvtx_range

    pair, _, only = target.partition(":")
    sides = [only] if only else ["baseline", "optimized"]
    ctx = BenchContext(seed=0, device="cuda")
    benches = {}
    for side in sides:
        bench = importlib.import_module(f"ch13.{side}_{pair}").get_benchmark()
        bench.ctx = ctx
        bench.setup(ctx)
        benches[side] = bench
    inputs = next(iter(benches.values())).make_inputs(1)
    for bench in benches.values():
        for _ in range(3):
            bench.run(inputs)
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    for side, bench in benches.items():
        with nvtx_range(f"{pair}_{side}"):
            bench.run(inputs)
        torch.cuda.synchronize()
    torch.cuda.profiler.stop()


NCU_COLUMNS = {  # ncu metric -> short column (the first one present of a group wins)
    "gpu__time_duration.sum": "us",
    "launch__grid_size": "grid",
    "dram__throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
    "gpu__dram_throughput.avg.pct_of_peak_sustained_elapsed": "dram%",
    "dram__bytes_read.sum": "MB_read",
    "lts__t_sector_hit_rate.pct": "L2hit%",
    "sm__throughput.avg.pct_of_peak_sustained_elapsed": "sm%",
    "sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active": "wgmma%",
    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active": "mma%",
    "sm__inst_executed_pipe_alu.avg.pct_of_peak_sustained_active": "alu%",
    "sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active": "xu%",
    "sm__warps_active.avg.pct_of_peak_sustained_active": "occupancy%",
    "smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct": "stall_mem%",
}


def ncu_summary(label: str, text: str, top: int = 12) -> str:
    """ncu `--csv --page raw` (header row, units row, one row per kernel) -> a short CSV:
    kernels grouped by name, durations summed, percentages averaged weighted by duration."""
    lines = [ln for ln in text.splitlines() if ln.startswith('"')]  # drop ==PROF== and app lines
    rows = list(csv.reader(io.StringIO("\n".join(lines))))
    if len(rows) < 3:
        return f"{label}: no kernels profiled\n"
    header, units, data = rows[0], rows[1], rows[2:]
    columns = {}
    for metric, short in NCU_COLUMNS.items():
        if metric in header and short not in columns:
            columns[short] = (header.index(metric), units[header.index(metric)])
    groups: dict[str, dict[str, float]] = {}
    for row in data:
        name = row[header.index("Kernel Name")][:60].replace(",", ";")
        values = {}
        for short, (i, unit) in columns.items():
            try:
                value = float(row[i].replace(",", ""))
            except ValueError:
                continue
            if short == "us":
                value *= {"nsecond": 1e-3, "usecond": 1.0, "msecond": 1e3}.get(unit, 1e-3)
            if short == "MB_read":
                value *= {"byte": 1e-6, "Kbyte": 1e-3, "Mbyte": 1.0, "Gbyte": 1e3}.get(unit, 1e-6)
            values[short] = value
        g = groups.setdefault(name, {"calls": 0.0})
        g["calls"] += 1
        us = values.get("us", 0.0)
        for short, value in values.items():
            if short in ("us", "MB_read"):
                g[short] = g.get(short, 0.0) + value
            elif short == "grid":
                g[short] = value
            else:
                g[short] = g.get(short, 0.0) + value * us
    shorts = [s for s in dict.fromkeys(NCU_COLUMNS.values()) if s in columns]
    out = io.StringIO()
    out.write("side,kernel,calls," + ",".join(shorts) + "\n")
    ranked = sorted(groups.items(), key=lambda kv: kv[1].get("us", 0.0), reverse=True)
    for name, g in ranked[:top]:
        us = g.get("us", 0.0) or 1.0
        cells = []
        for s in shorts:
            v = g.get(s)
            if v is None:
                cells.append("")
            elif s in ("us", "MB_read", "grid"):
                cells.append(f"{v:.1f}" if s != "grid" else f"{v:.0f}")
            else:
                cells.append(f"{v / us:.1f}")
        out.write(f"{label},{name},{g['calls']:.0f}," + ",".join(cells) + "\n")
    if len(ranked) > top:
        rest = sum(g.get("us", 0.0) for _, g in ranked[top:])
        out.write(f"{label},({len(ranked) - top} more kernels),,{rest:.1f}\n")
    return out.getvalue()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--part", nargs="+", choices=("quantization", "dynamic", "fp8"),
                        default=["quantization", "dynamic", "fp8"])
    parser.add_argument("--profile-one", metavar="PAIR[:SIDE]",
                        help="ncu driver: one warm call per side of ch13's PAIR, nothing on stdout")
    parser.add_argument("--ncu-summary", nargs=2, metavar=("LABEL", "CSV"),
                        help="summarize the file CSV, ncu --csv --page raw output, as LABEL")
    args = parser.parse_args()
    if args.ncu_summary:
        label, path = args.ncu_summary
        with open(path, encoding="utf-8", errors="replace") as f:
            sys.stdout.write(ncu_summary(label, f.read()))
        return
    if not torch.cuda.is_available():
        sys.exit("sweep_quantization: needs a CUDA GPU")
    if args.profile_one:
        profile_one(args.profile_one)
        return
    copy = copy_gbps()
    print(f"{torch.cuda.get_device_name()}: copy {copy:.0f} GB/s (1 GiB copy_, read + write)\n")
    parts = {"quantization": sweep_weight_only, "dynamic": sweep_dynamic, "fp8": sweep_fp8}
    for part in args.part:
        print(f"## {part}\n\n{parts[part](copy)}\n", flush=True)
        torch.cuda.empty_cache()


if __name__ == "__main__":
    main()
