"""Rate sweep of a ch15 goodput pair: both sides replay a Poisson trace at each rate.

    python -m ch15.sweep_rates continuous_batching --rates 2 4 6 8 12
    python -m ch15.sweep_rates prefill_decode_split --rates 4 8 12 16
    python -m ch15.sweep_rates continuous_batching --width 64 --rates 8 16 24
    python -m ch15.sweep_rates ch17:prefill_decode_disagg --rates 10 15 20   # another chapter's stem

`--width` tries another engine width (decode rows per step) before it goes into the pair;
`--ttft 0.25 0.5` also judges every replay by those TTFT targets (same TPOT target), to find
an SLO that tells the sides apart without replaying anything again.

Prints, per rate, each side's share of requests meeting the pair's SLO, TTFT p50/p99, TPOT
p50 and tokens/s (--repeats real-time replays per side and rate, after one short warm-up
replay; each repeat's figures, joined by " · "): the table the README uses to choose the
pair's trace. The sides' order turns every other repeat, as in the harness's goodput rounds:
on 2xH200 the side that played first in its first full replay once met 8 of 64 SLOs and 64
after, so one replay per side, always the baseline first, can place the knee wrongly. Before each rate's
replays every side serves that rate's trace once, uncounted, with other prompt tokens: on
4xH200 a side's first replay of a trace's shape met 9-38% of the SLOs where its second met
100%, at every rate (the harness's warm-up round is the same). The trace keeps the pair's prompt and
output lengths; only the rate and the request count (rate x --seconds) change.
"""
from __future__ import annotations

import argparse
import dataclasses
import sys
from pathlib import Path
from typing import Callable, Sequence

import numpy as np
import torch

from core import goodput
from core.benchmark import BenchContext
from core.pairfile import load_benchmark


# A side's four cells per rate, each joining every repeat's figure with " · ".
CELLS: tuple[Callable[[goodput.GoodputStats], str], ...] = (
    lambda st: f"{st.attained:.0%}",
    lambda st: f"{st.ttft_p50_s * 1e3:.0f} / {st.ttft_p99_s * 1e3:.0f} ms",
    lambda st: f"{st.tpot_p50_s * 1e3:.1f} ms",
    lambda st: f"{st.tokens_per_s:.0f}")


def sweep(stem: str, rates: list[float], seconds: float, device: str,
          width: int | None = None, repeats: int = 2, ttft_targets: Sequence[float] = ()) -> list[str]:
    chapter, _, stem = stem.rpartition(":")  # "ch17:prefill_decode_disagg": that chapter's stem
    folder = Path(__file__).parent.parent / chapter if chapter else Path(__file__).parent
    if not (folder / f"baseline_{stem}.py").exists():
        sys.exit(f"no baseline_{stem}.py in {folder}: name a goodput pair's stem, e.g. "
                 f"continuous_batching or ch17:prefill_decode_disagg")
    sides = {}
    for side in ("baseline", "optimized"):
        bench = load_benchmark(folder / f"{side}_{stem}.py")
        if width is not None:  # this instance only: the pair file keeps its width
            bench.gpu = dataclasses.replace(bench.gpu, width=width)
            bench.cpu = dataclasses.replace(bench.cpu, width=width)
        bench.ctx = BenchContext(seed=0, device=device)
        bench.setup(bench.ctx)
        sides[side] = bench
    s, slo = sides["baseline"].sizes, sides["baseline"].slo
    for bench in sides.values():  # allocator and kernel warm-up, not counted
        goodput.replay(bench.engine(), goodput.poisson_trace(99, 8, 4.0, s.prompt_len, s.output_len, s.cfg.vocab))
    # other TTFT targets, judged on the same replays: the cells after each side's four
    others = [dataclasses.replace(slo, ttft_s=t) for t in ttft_targets]
    extra = "".join(f" | met at TTFT ≤ {o.ttft_s * 1e3:g} ms" for o in others)
    rows = [f"`{stem}`, width {s.width}, SLO {slo}, {seconds:g} s of arrivals per rate, "
            f"{repeats} replay(s) per side:", "",
            f"| requests/s | baseline: met SLO | TTFT p50 / p99 | TPOT p50 | tokens/s{extra} "
            f"| optimized: met SLO | TTFT p50 / p99 | TPOT p50 | tokens/s{extra} |",
            "|---" * (9 + 2 * len(others)) + "|"]
    for rate in rates:
        shape = (1000 + int(rate), max(8, int(rate * seconds)), rate, s.prompt_len, s.output_len,
                 s.cfg.vocab)
        trace = goodput.poisson_trace(*shape)
        for bench in sides.values():  # as the harness's warm-up round: this shape, other tokens
            goodput.replay(bench.engine(), goodput.warm_up_trace(goodput.poisson_trace(*shape, token_seed=7)))
        played: dict[str, list[list[goodput.RequestTiming]]] = {name: [] for name in sides}
        for repeat in range(repeats):
            order = list(sides) if repeat % 2 == 0 else list(reversed(sides))
            for name in order:
                played[name].append(goodput.replay(sides[name].engine(), trace))
        cells = []
        for replays in played.values():
            stats = [goodput.summarize(timings, slo) for timings in replays]
            cells += [" · ".join(cell(st) for st in stats) for cell in CELLS]
            cells += [" · ".join(f"{goodput.summarize(timings, other).attained:.0%}" for timings in replays)
                      for other in others]
        rows.append(f"| {rate:g} | " + " | ".join(cells) + " |")
        print(rows[-1], file=sys.stderr, flush=True)  # progress; the table follows on stdout
    return rows


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("stem", help="a ch15 goodput pair, e.g. continuous_batching, or another "
                        "chapter's whose sides have the same sizes (gpu/cpu with rate_rps), e.g. "
                        "ch17:prefill_decode_disagg")
    parser.add_argument("--rates", type=float, nargs="+", default=[2, 4, 8])
    parser.add_argument("--seconds", type=float, default=6.0, help="seconds of arrivals per rate")
    parser.add_argument("--repeats", type=int, default=2,
                        help="replays per side and rate, the order turned every other one")
    parser.add_argument("--width", type=int, default=None,
                        help="engine width (decode rows per step) on both sides; default: the pair's")
    parser.add_argument("--ttft", type=float, nargs="*", default=[], metavar="SECONDS",
                        help="other TTFT targets (s) to judge the same replays by, each a pair "
                             "of extra columns: where an SLO tells the sides apart")
    args = parser.parse_args()
    device = "cuda" if torch.cuda.is_available() else "cpu"
    print("\n".join(sweep(args.stem, args.rates, args.seconds, device, args.width, args.repeats,
                         args.ttft)))


if __name__ == "__main__":
    main()
