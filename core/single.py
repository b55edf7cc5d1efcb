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


def main(get_benchmark: Callable[[], Benchmark], seed: int = 0) -> None:
    import torch

    origin = sys.argv[0]
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
