"""Baseline: one plan for every job, 4 chunks round-robin over 2 streams.

A sensible default, and the one most code ships with: two streams already overlap one chunk's
copies with the other's compute, and four chunks keep each copy large (1 MiB even for the
smallest job here). It is right for no job in particular: the small job pays four chunks'
fixed costs for little overlap, and the large ones leave much of the pipeline's fill and
drain exposed, with at most two chunks in flight for three stages.
"""
from ch11._adaptive_streams_common import JOBS, AdaptiveStreamsBench

FIXED_PLAN = (4, 2)  # (chunks, streams)


class FixedPlan(AdaptiveStreamsBench):
    def plans(self) -> list[tuple[int, int]]:
        return [FIXED_PLAN] * len(JOBS)


get_benchmark = FixedPlan

if __name__ == "__main__":
    from core.single import main
    main(FixedPlan)
