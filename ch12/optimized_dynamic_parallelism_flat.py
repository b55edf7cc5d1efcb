"""Optimized (the alternative to compare with): no per-segment launch at all.

One grid over all 2^24 elements; each thread finds its segment by binary search of the
offsets (10 steps, hot in L1/L2) and applies that segment's weight. When per-segment work is
the same code with a different size, this is usually the answer, and it is the yardstick the
dynamic-parallelism variant should be judged against.
"""
from ch12._dynamic_parallelism_common import N, SEGMENTS, Inputs, SegmentsBench


class FlatGrid(SegmentsBench):
    def run(self, inputs: Inputs):
        x, _, offsets = inputs
        self.lib.launch_segments_flat(x, self.y, self.w, offsets, SEGMENTS, N)
        return self.y


get_benchmark = FlatGrid

if __name__ == "__main__":
    from core.single import main
    main(FlatGrid)
