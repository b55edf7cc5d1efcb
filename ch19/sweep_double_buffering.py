"""Batch-size sweep of the `memory_double_buffering` pair: where does overlapping copy and compute pay?

    python -m ch19.sweep_double_buffering --tokens 512 2048 8192 12288 32768

Prints, per batch size (tokens), the median ms of: the layers' host-to-device copies alone,
the layers' compute alone (weights already on the GPU), copy-then-compute (the baseline),
double-buffered (the optimized side), and the speedup. Double buffering approaches
(copy + compute) / max(copy, compute): near 2x where the two columns are equal, near 1x
where either dominates. The README uses this table to place the pair's batch size.
"""
from __future__ import annotations

import argparse
import statistics
import sys
from typing import Any, Callable

import torch

from ch19._memory_double_buffering_common import OffloadedStackBench, mlp_layer
from ch19.baseline_memory_double_buffering import CopyThenCompute
from ch19.optimized_memory_double_buffering import DoubleBuffered
from core.benchmark import BenchContext
from core.timing import measurer


def median_ms(fn: Callable[[], Any], device: str, samples: int) -> float:
    measure = measurer(device)
    measure(fn, 3)  # warm-up: allocator, cuBLAS heuristics
    return statistics.median(measure(fn, samples).samples_ms)


def side(cls: type[OffloadedStackBench], tokens: int, device: str) -> OffloadedStackBench:
    bench = cls()
    bench.tokens = tokens
    bench.ctx = BenchContext(seed=0, device=device)
    bench.setup(bench.ctx)
    return bench


def row(tokens: int, device: str, samples: int) -> str:
    """One table row: both sides, and copies and compute on their own, at `tokens` tokens."""
    base, opt = side(CopyThenCompute, tokens, device), side(DoubleBuffered, tokens, device)
    x = base.make_inputs(1)

    def copies() -> None:
        for w1, w2 in zip(base.host_w1, base.host_w2):
            base.w1.copy_(w1, non_blocking=True)
            base.w2.copy_(w2, non_blocking=True)

    def compute() -> torch.Tensor:
        y = x
        for _ in base.host_w1:
            y = mlp_layer(y, base.w1, base.w2)
        return y

    cells = [median_ms(f, device, samples) for f in (copies, compute, lambda: base.run(x), lambda: opt.run(x))]
    return f"| {tokens} | " + " | ".join(f"{ms:.3f} ms" for ms in cells) + f" | {cells[2] / cells[3]:.2f}x |"


def sweep(tokens_list: list[int], device: str, samples: int = 20) -> list[str]:
    rows = ["| tokens | copies alone | compute alone | copy then compute | double-buffered | speedup |",
            "|---" * 6 + "|"]
    for tokens in tokens_list:
        rows.append(row(tokens, device, samples))  # each size's sides are freed before the next
        print(rows[-1], file=sys.stderr, flush=True)  # progress; the table follows on stdout
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", type=int, nargs="+", default=[512, 2048, 8192, 12288, 32768])
    parser.add_argument("--samples", type=int, default=20)
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("\n".join(sweep(args.tokens, device, args.samples)))


if __name__ == "__main__":
    main()
