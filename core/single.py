"""`python chNN/baseline_x.py`: run one benchmark in this process and print its numbers.

For a quick look while editing a kernel; `bench run` is the real measurement (child
process, verification against the baseline, interleaving, expectations).
"""
from __future__ import annotations

import sys
from typing import Callable

from core.benchmark import BenchContext, validate
from core.child import unmet_requirement
from core.metrics import headline, rates
from core.stats import summarize
from core.timing import StopPolicy, interleaved


def main(get_benchmark: Callable[[], object], seed: int = 0) -> None:
    import torch

    origin = sys.argv[0]
    bench = get_benchmark()
    validate(bench, origin)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    why = unmet_requirement(bench, device)
    if why:
        print(f"{origin}: skipped: {why}")
        sys.exit(0)
    bench.setup(BenchContext(seed=seed, device=device))
    measurement = interleaved({"run": bench.run}, StopPolicy(), device)
    stats = summarize(measurement.samples_ms["run"])
    w = bench.workload()
    r = rates({"bytes": w.bytes, "flops": w.flops, "flops_dtype": w.flops_dtype, "units": w.units,
               "unit_name": w.unit_name, "bound": w.bound}, stats.median, {})
    print(f"{origin} on {device}: median {stats.median:.4f} ms "
          f"(p10 {stats.p10:.4f}, p90 {stats.p90:.4f}, n={stats.n}), {headline(r)}")
