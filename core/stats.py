"""Robust statistics for timing samples: the median is the headline, never the mean."""
from __future__ import annotations

import math
from dataclasses import asdict, dataclass, field

import numpy as np


@dataclass
class SampleStats:
    n: int
    median: float
    mean: float
    min: float
    max: float
    p10: float
    p90: float
    q1: float
    q3: float
    median_ci: tuple[float, float]  # ~95% distribution-free interval of the median
    samples: list[float] = field(repr=False, default_factory=list)

    @property
    def iqr(self) -> float:
        return self.q3 - self.q1

    @property
    def rel_ci_halfwidth(self) -> float:
        """Half the median's interval over the median: 0.01 means ±1%."""
        lo, hi = self.median_ci
        return (hi - lo) / 2 / self.median if self.median > 0 else math.inf

    def to_dict(self, with_samples: bool = True) -> dict:
        out = asdict(self)
        out["median_ci"] = list(self.median_ci)
        out["iqr"] = self.iqr
        if not with_samples:
            out.pop("samples")
        return out


def median_ci(sorted_samples: np.ndarray, z: float = 1.96) -> tuple[float, float]:
    """Order-statistic interval of the median (no normality assumption).

    The ranks n/2 ± z·√n/2 bracket the true median with ~95% probability for any
    continuous distribution; timing samples are skewed, so this beats mean ± 2σ.
    """
    n = len(sorted_samples)
    if n < 6:
        return float(sorted_samples[0]), float(sorted_samples[-1])
    half = z * math.sqrt(n) / 2
    lo = max(0, int(math.floor(n / 2 - half)))
    hi = min(n - 1, int(math.ceil(n / 2 + half)) - 1)
    return float(sorted_samples[lo]), float(sorted_samples[hi])


def summarize(samples: list[float] | np.ndarray) -> SampleStats:
    if len(samples) == 0:
        raise ValueError("no samples to summarize")
    arr = np.sort(np.asarray(samples, dtype=float))
    p10, q1, median, q3, p90 = np.percentile(arr, [10, 25, 50, 75, 90])
    return SampleStats(
        n=len(arr), median=float(median), mean=float(arr.mean()), min=float(arr[0]),
        max=float(arr[-1]), p10=float(p10), p90=float(p90), q1=float(q1), q3=float(q3),
        median_ci=median_ci(arr), samples=[float(x) for x in samples],
    )


def speedup_interval(baseline: list[float], optimized: list[float], resamples: int = 2000,
                     confidence: float = 0.95, seed: int = 0,
                     rounds: tuple[list[int], list[int]] | None = None) -> tuple[float, float]:
    """Bootstrap interval of median(baseline) / median(optimized).

    `rounds`: how many of each side's samples each timing round holds, when the sides were
    timed in alternating rounds (core.timing). With at least MIN_ROUNDS rounds the rounds are
    resampled as units, each bringing its samples of both sides: drift that slows both sides
    in the same round (a busy host, a clock change) then stays out of the ratio, as the
    interleaving intends, and samples of one round are not taken for independent ones.
    Otherwise (few rounds, or rounds that do not line up) the samples are resampled
    independently.
    """
    rng = np.random.default_rng(seed)
    b = np.asarray(baseline, dtype=float)
    o = np.asarray(optimized, dtype=float)
    tail = (1 - confidence) / 2 * 100
    if rounds is not None and _paired_rounds(rounds, len(b), len(o)):
        ratios = _round_bootstrap(b, o, rounds, resamples, rng)
    else:
        b_medians = np.median(rng.choice(b, size=(resamples, len(b))), axis=1)
        o_medians = np.median(rng.choice(o, size=(resamples, len(o))), axis=1)
        ratios = b_medians / o_medians
    lo, hi = np.percentile(ratios, [tail, 100 - tail])
    return float(lo), float(hi)


MIN_ROUNDS = 10  # fewer rounds than this are too few units to resample


def _paired_rounds(rounds: tuple[list[int], list[int]], nb: int, no: int) -> bool:
    b_sizes, o_sizes = rounds
    return (len(b_sizes) == len(o_sizes) >= MIN_ROUNDS and sum(b_sizes) == nb
            and sum(o_sizes) == no and min(b_sizes) > 0 and min(o_sizes) > 0)


def _round_bootstrap(b: np.ndarray, o: np.ndarray, rounds: tuple[list[int], list[int]],
                     resamples: int, rng: np.random.Generator) -> np.ndarray:
    picks = rng.integers(0, len(rounds[0]), size=(resamples, len(rounds[0])))
    return _medians_of_picks(b, rounds[0], picks) / _medians_of_picks(o, rounds[1], picks)


def _medians_of_picks(x: np.ndarray, sizes: list[int], picks: np.ndarray) -> np.ndarray:
    """For each row of `picks` (round indices), the median of those rounds' samples."""
    if len(set(sizes)) == 1:  # the usual case: a side's calls per round are fixed
        per_round = x.reshape(len(sizes), sizes[0])
        step = max(1, 4_000_000 // per_round.size)  # bound the temporary to ~32 MB
        return np.concatenate([np.median(per_round[picks[i:i + step]].reshape(
            len(picks[i:i + step]), -1), axis=1) for i in range(0, len(picks), step)])
    split = np.split(x, np.cumsum(sizes)[:-1])
    return np.array([np.median(np.concatenate([split[j] for j in pick])) for pick in picks])
