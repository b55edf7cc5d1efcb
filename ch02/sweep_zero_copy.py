"""Where zero-copy stops paying: both sides of the `zero_copy` pair from 4 KiB to 256 MiB.

    python -m ch02.sweep_zero_copy [--max-mib 256]

For each size it builds both sides at that size, checks that they agree, and times them as
`bench run` does (core.timing: CUDA-graph replay, both sides in alternating rounds until each
median is known to ±1% or a side has had 1 s). It prints a markdown table with the time per
step, the speedup of zero-copy over copy + kernel, each side's host → device GB/s, and the
crossover. The pair itself is timed at one size (256 KiB) by `bench run`; this table is the
context that places that size.
"""
from __future__ import annotations

import argparse
import sys

import torch

from ch02.baseline_zero_copy import CopyThenKernel
from ch02.optimized_zero_copy import ZeroCopyKernel
from core.benchmark import BenchContext
from core.stats import summarize
from core.timing import StopPolicy, Timed, graph_replay, interleaved

KIB = 1024
SIZES = [4 * KIB * 4**i for i in range(9)]  # 4 KiB, 16 KiB, ..., 256 MiB


def size_label(nbytes: int) -> str:
    return f"{nbytes // 2**20} MiB" if nbytes >= 2**20 else f"{nbytes // KIB} KiB"


def time_both(nbytes: int, seed: int = 0) -> dict[str, float]:
    """Median µs per step of each side at `nbytes`, after checking that they agree."""
    sides = {"copy": CopyThenKernel(), "zero_copy": ZeroCopyKernel()}
    for bench in sides.values():
        bench.floats = nbytes // 4
        bench.ctx = BenchContext(seed=seed, device="cuda")
        bench.setup(bench.ctx)
    params = sides["copy"].make_inputs(seed)
    expected = sides["copy"].run(params).clone()
    if not torch.equal(expected, sides["zero_copy"].run(params)):
        raise SystemExit(f"{size_label(nbytes)}: the zero-copy output differs from copy + kernel's")
    timed = {}
    for name, bench in sides.items():
        call, calls = graph_replay(lambda bench=bench: bench.run(params))
        timed[name] = Timed(call, calls=calls)
    measurement = interleaved(timed, StopPolicy(max_time_s=1.0), "cuda")
    return {name: summarize(samples).median * 1e3
            for name, samples in measurement.samples_ms.items()}


def crossover(rows: list[tuple[int, dict[str, float]]]) -> str:
    """One sentence: up to which size zero-copy is faster, and from which size it is slower."""
    slower = [nbytes for nbytes, us in rows if us["zero_copy"] >= us["copy"]]
    if not slower:
        return "zero-copy was faster at every size measured"
    first_loss = slower[0]
    faster_before = [nbytes for nbytes, _ in rows if nbytes < first_loss]
    if not faster_before:
        return f"zero-copy was slower at every size from {size_label(first_loss)} up"
    text = (f"zero-copy was faster up to {size_label(faster_before[-1])} and slower from "
            f"{size_label(first_loss)}")
    again = [nbytes for nbytes, us in rows if nbytes > first_loss and nbytes not in slower]
    if again:
        text += f" (faster again at {', '.join(map(size_label, again))})"
    return text


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--max-mib", type=float, default=256, help="largest size, MiB")
    args = parser.parse_args(argv)
    if not torch.cuda.is_available():
        sys.exit("sweep_zero_copy needs a CUDA GPU; none is available on this machine")
    rows = []
    for nbytes in (n for n in SIZES if n <= args.max_mib * 2**20):
        rows.append((nbytes, time_both(nbytes)))
        print(f"{size_label(nbytes)} done", file=sys.stderr)
    print(f"{torch.cuda.get_device_name()}: copy + kernel vs zero-copy kernel, CUDA-graph replay\n")
    print("| size | copy + kernel µs | zero-copy µs | zero-copy speedup | copy + kernel GB/s "
          "| zero-copy GB/s |")
    print("|---|---|---|---|---|---|")
    for nbytes, us in rows:
        print(f"| {size_label(nbytes)} | {us['copy']:.2f} | {us['zero_copy']:.2f} | "
              f"{us['copy'] / us['zero_copy']:.2f}x | {nbytes / us['copy'] / 1e3:.1f} | "
              f"{nbytes / us['zero_copy'] / 1e3:.1f} |")
    print(f"\n{crossover(rows)}.")


if __name__ == "__main__":
    main()
