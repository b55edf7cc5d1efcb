"""Launch-parameter sweep of the `kv_quantization` decode kernels, against SDPA and a copy.

    python -m ch19.sweep_kv_decode            # needs a CUDA GPU; ~1 min with compiles

At the pair's GPU shape (32 sequences × 4096 tokens, 16 query / 4 KV heads of 128) it prints
one table row per (cache layout, launch configuration): the median µs of the decode call
alone (decode kernel + split merge; SDPA for the bf16 baseline), timed by CUDA-graph replay
as the pair is; GB/s = that layout's cache bytes / time; % of a measured copy (torch copy_
of a 1 GiB buffer, bytes read + written / time, the harness's `copy` ceiling); and the
largest error against fp32 attention over the same cache (every row is checked: a wrong
configuration stops the sweep). Layouts: `sdpa bf16` (the baseline's read), `triton bf16`
(our kernel on the same bf16 cache), `int8` (the optimized side), `int8+window` (the
dynamic side: int8, the last 256 tokens bf16). Around the default configuration (marked
*) one parameter moves at a time: BLOCK_N, num_warps, num_stages, splits, and the int8 ->
fp16 conversion ("asm": magic-number PTX, "bits": the same trick in Triton ops, "cast":
one I2F per value). A second table gives each side's whole step (run(): append + decode),
graph-replayed as the harness times it, and eager for reference.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any, Callable

import torch

from ch19._kv_quant_kernel import decode_attention, default_splits
from ch19._kv_quantization_common import KVCacheDecodeBench
from ch19.baseline_kv_quantization import Bf16KVCache
from ch19.optimized_kv_quantization import Int8KVCache
from ch19.optimized_kv_quantization_dynamic import Int8KVCacheRecentBf16
from core.benchmark import BenchContext
from core.timing import graph_replay, measure_cuda

# Kernel output vs fp32 attention over the same cache: the kernel's fp16 query/probability
# rounding and the bf16 output (~2^-9 of |out| <= 0.12) stay below 3e-4 here; a misplaced
# tile or scale moves outputs by O(|out|) ~ 0.02-0.1.
CHECK_ATOL, CHECK_RTOL = 1e-3, 1e-2
DEFAULT = dict(block_n=64, num_warps=4, num_stages=3, convert="asm")


def graph_us(fn: Callable[[], Any], samples: int) -> float:
    """Median GPU µs of one fn() call: fn captured K times in a CUDA graph, one replay a sample."""
    replay, calls = graph_replay(fn)
    return statistics.median(measure_cuda(replay, samples).samples_ms) / calls * 1e3


def eager_us(fn: Callable[[], Any], samples: int) -> float:
    measure_cuda(fn, 3)
    return statistics.median(measure_cuda(fn, samples).samples_ms) * 1e3


def copy_gbs(samples: int) -> float:
    """torch copy_ of a 1 GiB buffer: (read + written bytes) / time, in GB/s."""
    src = torch.empty(1 << 30, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    us = eager_us(lambda: dst.copy_(src), samples)
    return 2 * (1 << 30) / (us * 1e-6) / 1e9  # the buffers are freed as this returns


def side(cls: type[KVCacheDecodeBench]) -> KVCacheDecodeBench:
    bench = cls()
    bench.ctx = BenchContext(seed=0, device="cuda")
    bench.setup(bench.ctx)
    return bench


def configs(splits: int, moves: tuple[str, ...]) -> list[tuple[str, dict[str, Any]]]:
    """The default, then one parameter moved at a time (compiles dominate the sweep's time)."""
    base = {**DEFAULT, "splits": splits}
    values = dict(block_n=(32, 128), num_warps=(8,), num_stages=(2, 4),
                  splits=(splits // 2, 2 * splits, 4 * splits), convert=("bits", "cast"))
    return [("*", base)] + [(f"{k}={v}", {**base, k: v}) for k in moves for v in values[k]
                            if v and v != base[k]]


# what moves for each layout: everything for the int8 side, less where it repeats a lesson
MOVES = {"triton bf16": ("block_n", "num_warps"),
         "int8": ("block_n", "num_warps", "num_stages", "splits", "convert"),
         "int8+window": ("block_n", "splits")}

# Launches that move several parameters at once toward more bytes in flight per SM (larger
# tiles with the warps to load them, deeper rings, fewer splits): what the H200's 4.8 TB/s
# needs beyond the H100's one-at-a-time optimum (int8 side only; "+" marks these rows).
# (BLOCK_N, warps, stages, splits as a fraction of the default)
COMBINED = [(128, 8, 3, 1.0), (128, 8, 4, 1.0), (128, 4, 4, 1.0), (128, 8, 3, 0.5),
            (256, 8, 2, 1.0), (256, 8, 3, 0.5), (64, 4, 5, 0.5), (64, 8, 4, 0.5)]


def combined(splits: int) -> list[tuple[str, dict[str, Any]]]:
    return [("+", {**DEFAULT, "block_n": n, "num_warps": w, "num_stages": st,
                   "splits": max(1, round(splits * f))}) for n, w, st, f in COMBINED]


def label(mark: str, launch: dict[str, Any], int8: bool = True) -> str:
    """'BLOCK_N 64, 4 warps, 3 stages, 8 splits, asm *' (* the default)."""
    return (f"BLOCK_N {launch['block_n']}, {launch['num_warps']} warps, {launch['num_stages']} stages, "
            f"{launch['splits']} splits" + (f", {launch['convert']}" if int8 else "")
            + (f" {mark}" if mark in ("*", "+") else ""))


def checked(name: str, out: torch.Tensor, ref: torch.Tensor) -> float:
    err = float((out.float() - ref).abs().max())
    try:
        torch.testing.assert_close(out.float(), ref, atol=CHECK_ATOL, rtol=CHECK_RTOL)
    except AssertionError as exc:
        raise SystemExit(f"sweep_kv_decode: {name} disagrees with fp32 attention over its cache:\n{exc}")
    return err


def layout_rows(name: str, bench: KVCacheDecodeBench, calls: list[tuple[str, Callable[[], torch.Tensor]]],
                ref: torch.Tensor, copy: float, samples: int) -> list[str]:
    rows = []
    for config, fn in calls:
        err = checked(f"{name} {config}", fn(), ref)
        us = graph_us(fn, samples)
        gbs = bench.cache_bytes() / (us * 1e-6) / 1e9
        rows.append(f"| {name} | {config} | {us:.1f} | {gbs:.0f} | {100 * gbs / copy:.0f}% | {err:.1e} |")
        print(rows[-1], file=sys.stderr, flush=True)  # progress; the tables follow on stdout
    return rows


def layout(cls: type[KVCacheDecodeBench], name: str, copy: float, samples: int) -> tuple[list[str], str]:
    """One side's cache: its decode-call rows, and its whole step (run()) as one row."""
    bench = side(cls)
    inputs = bench.make_inputs(1)
    ref = bench.reference(inputs)  # appends the step's token, as every decode below sees it
    q, seq = inputs[0], bench.shape["seq"]
    if name == "bf16":
        rows = layout_rows("sdpa bf16", bench, [("F.scaled_dot_product_attention", lambda: bench.decode(q))],
                           ref, copy, samples)
        rows += layout_rows("triton bf16", bench, [
            (label(mark, launch, int8=False), lambda launch=launch: decode_attention(
                q, None, None, None, None, bench.k_b, bench.v_b, seq, 0, **launch))
            for mark, launch in configs(bench_splits(bench), MOVES["triton bf16"])], ref, copy, samples)
    else:
        rows = layout_rows(name, bench, [
            (label(mark, launch), lambda launch=launch: bench.decode(q, **launch))
            for mark, launch in configs(bench.splits, MOVES[name])
            + (combined(bench.splits) if name == "int8" else [])], ref, copy, samples)
    checked(f"{name} run()", bench.run(inputs), ref)
    graph, eager = (f(lambda: bench.run(inputs), samples) for f in (graph_us, eager_us))
    return rows, f"| {cls.__name__} ({name}) | {bench.cache_bytes() / 2**20:.1f} | {graph:.1f} | {eager:.1f} |"


def sweep(samples: int = 30) -> list[str]:
    copy = copy_gbs(samples)
    rows = [f"copy ceiling (torch copy_ of 1 GiB, read + write): {copy:.0f} GB/s", "",
            "| layout | launch | µs | GB/s | % of copy | max err |", "|---" * 6 + "|"]
    steps = ["", "| side | cache MiB | step µs (graph) | step µs (eager) |", "|---" * 4 + "|"]
    for cls, name in ((Bf16KVCache, "bf16"), (Int8KVCache, "int8"), (Int8KVCacheRecentBf16, "int8+window")):
        decode_rows, step = layout(cls, name, copy, samples)  # one side's cache at a time
        rows += decode_rows
        steps.append(step)
        torch.cuda.empty_cache()
    return rows + steps


def bench_splits(bench: KVCacheDecodeBench) -> int:
    """The int8 sides' default split count, for our kernel on the baseline's bf16 cache."""
    s = bench.shape
    return default_splits(s["batch"] * s["kv_heads"], s["seq"], bench.sm_count())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=30, help="graph replays per row")
    args = parser.parse_args()
    if not torch.cuda.is_available():
        raise SystemExit("sweep_kv_decode: needs a CUDA GPU (the kernels run on the CPU only "
                         "under TRITON_INTERPRET=1; tests/test_ch19.py checks them there)")
    print("\n".join(sweep(args.samples)))


if __name__ == "__main__":
    main()
