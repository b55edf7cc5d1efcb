"""`python chNN/baseline_x.py`: run one benchmark in this process and print its numbers.

For a quick look while editing a kernel; `bench run` is the real measurement (child
process, verification against the baseline, integrity checks, interleaving, expectations).
"""
from __future__ import annotations

import sys
from typing import Callable

from core.benchmark import BenchContext, Benchmark, validate
from core.metrics import headline, rates
from core.pairfile import unmet_requirement
from core.stats import summarize
from core.timing import StopPolicy, interleaved


USAGE = """usage: python {origin} [--help]

Runs this one benchmark in this process and prints its median time and rate: a quick look
while editing a kernel. No verification, no baseline beside it, no integrity checks: for the
real measurement of the pair, run
    python -m cli.aisp bench run {target}"""


def main(get_benchmark: Callable[[], Benchmark], seed: int = 0) -> None:
    origin = sys.argv[0]
    args = sys.argv[1:]
    if args:  # --help, or anything else: say what this does instead of running it
        from pathlib import Path

        path = Path(origin)
        stem = path.stem.split("_", 1)[-1]
        usage = USAGE.format(origin=origin, target=f"{path.parent.name}:{stem}")
        if args[0] in ("-h", "--help"):
            print(usage)
            sys.exit(0)
        print(f"{origin}: unknown argument {args[0]!r}\n{usage}", file=sys.stderr)
        sys.exit(2)
    import torch

    bench = get_benchmark()
    validate(bench, origin)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    why = unmet_requirement(bench, device)
    if why:
        print(f"{origin}: skipped: {why}")
        sys.exit(0)
    bench.ctx = BenchContext(seed=seed, device=device)
    bench.setup(bench.ctx)
    inputs = bench.make_inputs(seed)
    measurement = interleaved({"run": lambda: bench.run(inputs)}, StopPolicy(), device)
    stats = summarize(measurement.samples_ms["run"])
    r = rates(bench.workload(), stats.median, {})
    print(f"{origin} on {device}: median {stats.median:.4f} ms "
          f"(p10 {stats.p10:.4f}, p90 {stats.p90:.4f}, n={stats.n}), {headline(r)}")
