"""Power-law workloads shared by the ch12 pairs on uneven work.

Real uneven work is heavy-tailed: a few graph hubs own most edges, a few requests carry most
tokens, a few documents are most of a corpus. The sizes here are Pareto *quantiles*, the same
multiset for every seed, in an order the seed shuffles. Random Pareto draws would make the
largest item (which sets the baseline's time: a hub row, a longest segment) change by several
times from seed to seed, and the harness draws fresh inputs every round, so timings would
be noise. Shapes are fixed too (the harness refills inputs in place).
"""
from __future__ import annotations

import torch


def pareto(count: int, alpha: float, gen: torch.Generator) -> torch.Tensor:
    """The `count` quantiles i/(count+1), i = 1..count, of Pareto(alpha) (P(X > t) = t^-alpha,
    X ≥ 1), float64 on `gen`'s device, in an order drawn from `gen`."""
    tail = torch.arange(count, 0, -1, device=gen.device, dtype=torch.float64) / (count + 1)
    order = torch.randperm(count, generator=gen, device=gen.device)
    return tail.pow(-1.0 / alpha)[order]


def power_law_offsets(total: int, segments: int, alpha: float, gen: torch.Generator) -> torch.Tensor:
    """Offsets (int64, segments + 1) that cut `total` items into `segments` consecutive
    segments with Pareto-distributed lengths: offsets[0] = 0, offsets[-1] = total,
    non-decreasing (a length may round to 0: an empty segment)."""
    weights = pareto(segments, alpha, gen)
    ends = torch.round(torch.cumsum(weights, 0) / weights.sum() * total).long()
    ends[-1] = total  # the rounding of the last sum may miss by one
    return torch.cat([ends.new_zeros(1), ends])


def power_law_counts(count: int, alpha: float, low: int, high: int, gen: torch.Generator
                     ) -> torch.Tensor:
    """Per-item costs (int32): floor(low · Pareto(alpha)), capped at `high`."""
    return (pareto(count, alpha, gen) * low).floor().clamp_(max=high).to(torch.int32)
