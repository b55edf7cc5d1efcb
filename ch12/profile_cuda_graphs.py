"""Where the cuda_graphs step's time goes: kernels per step, GPU busy time vs wall time.

    python -m ch12.profile_cuda_graphs [--steps 20] [--stem cuda_graphs|graph_bandwidth]

For each side (eager, graph replay, compiled) it profiles `steps` back-to-back run() calls
with torch.profiler and prints the kernels per step, the GPU's busy time per step (the union
of kernel and copy intervals) and the wall time per step; the difference is the time the GPU
sat idle waiting for the host. Needs a CUDA GPU (and Triton for the compiled side).
"""
from __future__ import annotations

import argparse
import importlib
import time

import torch
from torch.autograd import DeviceType
from torch.profiler import ProfilerActivity, profile

from core.benchmark import BenchContext


def busy_us(intervals: list[tuple[float, float]]) -> float:
    """Length of the union of [start, end) intervals."""
    total, end = 0.0, float("-inf")
    for start, stop in sorted(intervals):
        if stop > end:
            total += stop - max(start, end)
            end = stop
    return total


def profile_side(module: str, steps: int) -> tuple[float, float, float]:
    """(kernels per step, GPU busy µs per step, wall µs per step) for one side's run()."""
    bench = importlib.import_module(module).get_benchmark()
    bench.ctx = BenchContext(seed=0, device="cuda")
    bench.setup(bench.ctx)
    x = bench.make_inputs(1)
    for _ in range(5):
        bench.run(x)
    torch.cuda.synchronize()
    start = time.perf_counter()  # wall time without the profiler, which slows the host
    for _ in range(steps):
        bench.run(x)
    torch.cuda.synchronize()
    wall = (time.perf_counter() - start) * 1e6
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA]) as prof:
        for _ in range(steps):
            bench.run(x)
        torch.cuda.synchronize()
    gpu = [e for e in prof.events() if e.device_type == DeviceType.CUDA]
    kernels = sum(1 for e in gpu if "memcpy" not in e.name.lower() and "memset" not in e.name.lower())
    busy = busy_us([(e.time_range.start, e.time_range.end) for e in gpu])
    bench.teardown()
    return kernels / steps, busy / steps, wall / steps


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=20)
    parser.add_argument("--stem", default="cuda_graphs", choices=("cuda_graphs", "graph_bandwidth"))
    args = parser.parse_args()
    sides = [f"ch12.baseline_{args.stem}", f"ch12.optimized_{args.stem}"]
    if args.stem == "cuda_graphs":
        sides.append("ch12.optimized_cuda_graphs_compiled")
    print(f"{'side':40} {'kernels/step':>12} {'GPU busy µs':>12} {'wall µs':>10} {'idle %':>7}")
    for module in sides:
        kernels, busy, wall = profile_side(module, args.steps)
        print(f"{module:40} {kernels:12.1f} {busy:12.1f} {wall:10.1f} {100 * (1 - busy / wall):6.1f}%")


if __name__ == "__main__":
    main()
