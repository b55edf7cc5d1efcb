"""Our Triton attention at each launch configuration, against SDPA's flash and cuDNN kernels.

    python -m ch10.sweep_attention_triton          # needs a Hopper GPU; ~1 min with compiles

For the two pairs' shapes (`attention`: 4 x 16 heads x 4096 x 128, non-causal;
`attention_long_context`: 1 x 16 x 32768 x 128, causal), bf16, one table row per kernel: the
median ms of one call over `--rounds` rounds in which every row takes `--samples` back-to-back
calls in turn (eager, CUDA events), the range of the rounds' medians, TFLOP/s of the useful work (the causal pass
counts half the scores, as the pairs' workloads do), % of cuDNN's TFLOP/s on the same inputs
(issue 38's yardstick: >= 90%), and the largest difference from cuDNN's output. Rows:
`sdpa flash` (PyTorch's FlashAttention-2), `cudnn`, `triton tuned` (the autotuner's pick, what
the pairs time) and `triton <config>` for every configuration of `CONFIGS` the installed
Triton compiles and that fits the shape; the ones it cannot compile are listed with why.

The pairs' own numbers come from `bench run`, which alternates each side with the baseline;
the sweep's back-to-back calls can run at other clocks. On an H200 (2026-11-28) the sweep's
causal cuDNN calls took 7.4-7.6 ms where the harness measured 6.5-6.7 ms, so read the % of
cuDNN here as a ranking of our configs, and the pair's table for the headline.
"""
from __future__ import annotations

import argparse
import math
import statistics
import sys
from typing import Any, Callable

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from core.timing import measure_cuda

SHAPES = {"attention": ((4, 16, 4096, 128), False),
          "attention_long_context": ((1, 16, 32768, 128), True)}


def median_ms(fn: Callable[[], Any], samples: int) -> float:
    measure_cuda(fn, 3)  # warm-up: compiles, autotuning, cuDNN's plan cache
    return statistics.median(measure_cuda(fn, samples).samples_ms)


def timed_in_rounds(calls: dict[str, Callable[[], Any]], samples: int, rounds: int,
                    time_ms: Callable[[Callable[[], Any], int], float] = median_ms
                    ) -> dict[str, list[float]]:
    """Each call's median ms per round. Every call takes `samples` calls per round, in turn, so
    a drift of the GPU's clock (power, heat) over the sweep falls on every row alike instead
    of on the rows timed last."""
    times: dict[str, list[float]] = {name: [] for name in calls}
    for _ in range(rounds):
        for name, call in calls.items():
            times[name].append(time_ms(call, samples))
    return times


def sdpa(backend: SDPBackend, causal: bool) -> Callable[..., torch.Tensor]:
    def call(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
        with sdpa_kernel(backend):
            return F.scaled_dot_product_attention(q, k, v, is_causal=causal)
    return call


def config_label(config: Any) -> str:
    kw = config.kwargs
    ws = " ws" if kw.get("WARP_SPECIALIZE") else ""
    return f"M{kw['BLOCK_M']} N{kw['BLOCK_N']} w{config.num_warps} s{config.num_stages}{ws}"


def sweep(samples: int, rounds: int) -> list[str]:
    from ch10._attention_triton_kernel import (CONFIGS, DROPPED, attention_forward,
                                               attention_fwd_tuned)
    rows = ["| pair | kernel | ms | rounds' range | TFLOP/s | % of cuDNN | max abs diff vs cuDNN |",
            "|---|---|---|---|---|---|---|"]
    for pair, ((b, h, s, d), causal) in SHAPES.items():
        gen = torch.Generator(device="cuda").manual_seed(0)
        q, k, v = (torch.randn(b, h, s, d, generator=gen, device="cuda", dtype=torch.bfloat16)
                   for _ in range(3))
        flops = 4.0 * b * h * s * s * d / (2 if causal else 1)
        kernels: dict[str, Callable[..., torch.Tensor]] = {
            "cudnn": sdpa(SDPBackend.CUDNN_ATTENTION, causal),
            "sdpa flash": sdpa(SDPBackend.FLASH_ATTENTION, causal),
            "triton tuned": lambda q, k, v: attention_forward(q, k, v, causal=causal)}
        # every config the tuner would consider here, pinned one at a time
        for config in CONFIGS:
            kw = config.kwargs
            if s % kw["BLOCK_N"] or (causal and (kw["WARP_SPECIALIZE"] or kw["BLOCK_M"] % kw["BLOCK_N"])):
                continue
            pinned = {**kw, "num_warps": config.num_warps, "num_stages": config.num_stages}
            kernels[f"triton {config_label(config)}"] = (
                lambda q, k, v, pinned=pinned: attention_forward(q, k, v, causal, config=pinned))
        reference = kernels["cudnn"](q, k, v)
        diffs, failed = {}, {}
        for name, fn in kernels.items():  # each once: compiles, tunes, and its output's check
            try:
                diffs[name] = (fn(q, k, v).float() - reference.float()).abs().max().item()
            except Exception as err:  # noqa: BLE001 - a config that fails is a row, not a stop
                failed[name] = f"{type(err).__name__}: {str(err).splitlines()[0][:120]}"
        times = timed_in_rounds({name: (lambda fn=kernels[name]: fn(q, k, v)) for name in diffs},
                                samples, rounds)
        cudnn_tflops = flops / (statistics.median(times["cudnn"]) * 1e-3) / 1e12
        for name in kernels:
            if name in failed:
                rows.append(f"| {pair} | {name} | failed: {failed[name]} | | | | |")
                continue
            ms = statistics.median(times[name])
            tflops = flops / (ms * 1e-3) / 1e12
            rows.append(f"| {pair} | {name} | {ms:.3f} | {min(times[name]):.3f}-{max(times[name]):.3f} "
                        f"| {tflops:.0f} | {100 * tflops / cudnn_tflops:.0f}% | {diffs[name]:.1e} |")
            print(rows[-1], file=sys.stderr, flush=True)  # progress; the table follows on stdout
        best = getattr(attention_fwd_tuned, "best_config", None)
        rows.append(f"| {pair} | (tuner's pick: {config_label(best) if best else '?'}) | | | | | |")
    for config, why in DROPPED.items():
        rows.append(f"\nnot compiled by this Triton: {config}: {why}")
    rows.append(f"\n{torch.cuda.get_device_name()}, torch {torch.__version__}, "
                f"triton {__import__('triton').__version__}, {rounds} rounds of {samples} calls per row; "
                f"log2(e)/sqrt(128) = {math.log2(math.e) / math.sqrt(128):.4f}")
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--samples", type=int, default=10, help="timed calls per row and round")
    parser.add_argument("--rounds", type=int, default=5, help="rounds over every row")
    args = parser.parse_args()
    if not torch.cuda.is_available() or torch.cuda.get_device_capability() < (9, 0):
        sys.exit("sweep_attention_triton needs a Hopper (sm_90) or newer GPU")
    print("\n".join(sweep(args.samples, args.rounds)))


if __name__ == "__main__":
    main()
