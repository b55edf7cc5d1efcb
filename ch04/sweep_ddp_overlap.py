"""Where `ddp_overlap`'s bucketed all-reduce starts to pay: the pair's sides over tokens per rank.

    torchrun --nproc-per-node N -m ch04.sweep_ddp_overlap [--tokens 256,512,1024,2048,4096] [--steps 20]
    torchrun --nproc-per-node N -m ch04.sweep_ddp_overlap --profile-host [TOKENS]
    torchrun --nproc-per-node 2 -m ch04.sweep_ddp_overlap --cpu     # gloo smoke check, CPU sizes

The sides are the pair's own classes with the pair's Config, only `tokens` replaced: the
baseline (backward, then one all-reduce of the flat gradient buffer), DDP with 25 MB buckets
(the optimized side) and with 100 MB (`ddp_overlap_bucket100`). Rank 0 prints a row per value:
- all-reduce: the baseline's flat gradient buffer (805 MB at the pair's size) all-reduced
  alone: ms, and bus GB/s (2(n-1)/n of the bytes per rank, as nccl-tests counts);
- compute: the baseline's step without its all-reduce, what a perfect overlap would leave;
- each side's ms per step: CUDA events around `--steps` back-to-back steps after warm-up,
  median of `--windows` windows, the sides' windows interleaved so drift hits all alike; in
  brackets the host's ms to issue one step from an empty queue (the least of 5, as the
  harness's host probe); `!` marks a host-bound side (host >= core.record.HOST_BOUND x step);
- each DDP side's speedup over the baseline, and the perfect-overlap bound, baseline /
  max(compute, all-reduce). Each number is the slowest rank's; on the CPU, perf_counter's.

--profile-host runs torch.profiler (CPU, plus CUDA where present) over 5 warm steps of the
baseline and of DDP 25 MB at one tokens value (default: the pair's) and prints rank 0's top 15
ops by self CPU time: where the host's time per step goes (autograd, DDP's reducer hooks and
bucket copies, NCCL launches, the fused optimizer).
"""
from __future__ import annotations

import argparse
import gc
import os
import statistics
import sys
import time
from contextlib import nullcontext
from dataclasses import replace
from typing import Callable

import torch
import torch.distributed as dist

from ch04._ddp_common import CPU_CONFIG, CUDA_CONFIG, Config, DataParallelStep
from ch04.baseline_ddp_overlap import AllReduceAfterBackward
from ch04.optimized_ddp_overlap import OverlappedDdp
from ch04.optimized_ddp_overlap_bucket100 import BigBuckets
from core.benchmark import BenchContext
from core.ranks import Ranks, from_environment
from core.record import HOST_BOUND

WARMUP = 3  # DDP rebuilds its buckets after the first step; three cover that and the allocator
HOST_CALLS = 5
PROFILE_STEPS = 5


class ComputeOnly(AllReduceAfterBackward):
    """The baseline without its all-reduce. The division stays: DDP divides every bucket too."""

    def average(self) -> None:
        self.flat.div_(dist.get_world_size())


SIDES: dict[str, type[DataParallelStep]] = {
    "baseline": AllReduceAfterBackward, "DDP 25 MB": OverlappedDdp, "DDP 100 MB": BigBuckets,
    "compute": ComputeOnly}


def build(cls: type[DataParallelStep], cfg: Config, ctx: BenchContext) -> DataParallelStep:
    """One side at `cfg`: the pair's class with its `cfg` property answering this Config. DDP's
    constructor broadcasts rank 0's weights, so every rank builds the sides in one order."""
    bench = type(cls.__name__, (cls,), {"cfg": property(lambda self: cfg)})()
    bench.ctx = ctx
    bench.setup(ctx)
    return bench


def sync(cuda: bool) -> None:
    if cuda:
        torch.cuda.synchronize()


def window_ms(fn: Callable[[], object], steps: int, cuda: bool, ranks: Ranks) -> float:
    """ms per call of `steps` calls back to back, every rank starting from an empty queue
    together (a host barrier), so no rank's window holds another's lag."""
    sync(cuda)
    ranks.barrier()
    if not cuda:
        t0 = time.perf_counter()
        for _ in range(steps):
            fn()
        return (time.perf_counter() - t0) * 1e3 / steps
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    start.record()
    for _ in range(steps):
        fn()
    end.record()
    end.synchronize()
    return start.elapsed_time(end) / steps


def host_ms(fn: Callable[[], object], cuda: bool, ranks: Ranks) -> float:
    """The host's time to issue one call from an empty queue: where it reaches the step's
    time, the GPU waits on the host."""
    times = []
    for _ in range(HOST_CALLS):
        sync(cuda)
        ranks.barrier()
        t0 = time.perf_counter()
        fn()
        times.append((time.perf_counter() - t0) * 1e3)
    sync(cuda)
    return min(times)


def measure(cfg: Config, ctx: BenchContext, args: argparse.Namespace, ranks: Ranks) -> dict[str, float]:
    """This rank's numbers at `cfg`: every side's step and host ms, and the all-reduce alone."""
    cuda = ctx.is_cuda
    sides = {name: build(cls, cfg, ctx) for name, cls in SIDES.items()}
    base = sides["baseline"]
    inputs = base.make_inputs(1)  # one global batch, handed to every side (the harness's way)
    calls = {name: (lambda b=bench: b.run(inputs)) for name, bench in sides.items()}
    base.flat.zero_()  # all-reduced repeatedly: zeros stay finite, and NCCL's time ignores values
    calls["all-reduce"] = lambda: dist.all_reduce(base.flat)
    for fn in calls.values():
        for _ in range(WARMUP):
            fn()
    windows: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(args.windows):  # interleaved: one window of each side per round
        for name, fn in calls.items():
            windows[name].append(window_ms(fn, args.steps, cuda, ranks))
    out = {name: statistics.median(w) for name, w in windows.items()}
    out.update({f"host {name}": host_ms(calls[name], cuda, ranks) for name in SIDES})
    out["bytes"] = base.flat.numel() * base.flat.element_size()
    del sides, base, calls
    gc.collect()  # DDP's reducer holds its buckets until collected
    if cuda:
        torch.cuda.empty_cache()
    return out


def row(tokens: int, r: dict[str, float], world: int) -> str:
    def step(name: str) -> str:
        flag = "!" if r[f"host {name}"] >= HOST_BOUND * r[name] else ""
        return f"{r[name]:.2f} ({r[f'host {name}']:.2f}){flag}"

    busbw = 2 * (world - 1) / world * r["bytes"] / (r["all-reduce"] * 1e-3) / 1e9
    base = r["baseline"]
    return (f"| {tokens} | {r['all-reduce']:.2f} ({busbw:.3g} GB/s) | {step('compute')} | "
            f"{100 * r['all-reduce'] / base:.0f}% | {step('baseline')} | {step('DDP 25 MB')} | "
            f"{step('DDP 100 MB')} | {base / r['DDP 25 MB']:.2f}x | {base / r['DDP 100 MB']:.2f}x | "
            f"{base / max(r['compute'], r['all-reduce']):.2f}x |")


HEADER = ("| tokens/rank | all-reduce ms | compute ms (host) | all-reduce / baseline | baseline ms (host) "
          "| DDP 25 MB ms (host) | DDP 100 MB ms (host) | 25 MB | 100 MB | perfect overlap |\n"
          + "|---" * 10 + "|")


def profile_host(cfg: Config, ctx: BenchContext, ranks: Ranks) -> None:
    """Rank 0's top ops by self CPU time over a few warm steps of the baseline and DDP 25 MB.
    Every rank runs the same steps (their collectives pair up); only rank 0 records."""
    from torch.profiler import ProfilerActivity, profile, record_function

    activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if ctx.is_cuda else [])
    for name in ("baseline", "DDP 25 MB"):
        bench = build(SIDES[name], cfg, ctx)
        inputs = bench.make_inputs(1)
        for _ in range(WARMUP):
            bench.run(inputs)
        sync(ctx.is_cuda)
        ranks.barrier()
        with (profile(activities=activities) if ranks.rank == 0 else nullcontext()) as prof:
            for _ in range(PROFILE_STEPS):
                with record_function(f"step: {name}"):  # its CPU total = the host's time per step
                    bench.run(inputs)
            sync(ctx.is_cuda)
        if ranks.rank == 0:
            print(f"\n## {name}, {cfg.tokens} tokens/rank, {PROFILE_STEPS} steps: top 15 ops by self CPU time\n")
            print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=15,
                                            max_name_column_width=60), flush=True)
        del bench
        gc.collect()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tokens", default="256,512,1024,2048,4096",
                        help="tokens per rank, comma-separated (the pair runs 2048; CPU: 16)")
    parser.add_argument("--steps", type=int, default=20, help="steps per timed window")
    parser.add_argument("--windows", type=int, default=5, help="timed windows per side (median)")
    parser.add_argument("--cpu", action="store_true", help="gloo ranks on the CPU at the CPU config")
    parser.add_argument("--profile-host", nargs="?", type=int, const=0, default=None, metavar="TOKENS",
                        help="profile the host at one tokens value (default: the pair's) instead")
    args = parser.parse_args()
    if int(os.environ.get("WORLD_SIZE", "1")) < 2:
        sys.exit("sweep_ddp_overlap: launch 2 or more ranks, "
                 "torchrun --nproc-per-node 2 -m ch04.sweep_ddp_overlap [--cpu]")
    if not args.cpu and not torch.cuda.is_available():
        sys.exit("sweep_ddp_overlap: no CUDA GPU here; --cpu runs the gloo smoke check")
    device = "cpu" if args.cpu else "cuda"
    ranks = from_environment(device)  # the harness's own join: NCCL on CUDA, gloo on the CPU
    ctx = BenchContext(seed=0, device=device)
    pair = CUDA_CONFIG if ctx.is_cuda else CPU_CONFIG
    if args.profile_host is not None:
        profile_host(replace(pair, tokens=args.profile_host or pair.tokens), ctx, ranks)
    else:
        if ranks.rank == 0:
            where = torch.cuda.get_device_name() if ctx.is_cuda else "CPU (gloo)"
            print(f"{ranks.world} x {where}; d {pair.d_model}, hidden {pair.hidden}, {pair.blocks} blocks; "
                  f"{args.steps} steps x {args.windows} windows per side\n\n{HEADER}", flush=True)
        for tokens in (int(t) for t in args.tokens.split(",")):
            mine = measure(replace(pair, tokens=tokens), ctx, args, ranks)
            every = ranks.all(mine)  # the slowest rank's number for each (host ms included)
            slowest = {key: max(r[key] for r in every) for key in mine}
            if ranks.rank == 0:
                print(row(tokens, slowest, ranks.world), flush=True)
    # Only after a clean run: a rank that raised just exits, and torchrun stops the others
    # (destroying an NCCL group whose peer is gone can wait for ever).
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
