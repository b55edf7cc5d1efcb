"""Baseline: the host launches one grid per segment, each sized to its segment.

launch_segments_host (C++) walks the segment table in host memory and launches 1024 grids,
from 15 blocks to several thousand. The GPU's work is ~50 µs at HBM speed; the host's
launches (a few µs each) take far longer, so the step is launch-bound.

It is the book's baseline, and `teaching`: an engineer writing this first would launch one
flat grid over all elements that finds each element's segment by binary search
(optimized_dynamic_parallelism_flat.py), which beats the device-side launches about 2x.
"""
from ch12._dynamic_parallelism_common import SEGMENTS, Inputs, SegmentsBench


class HostLaunches(SegmentsBench):
    teaching = True
    def run(self, inputs: Inputs):
        x, host_offsets, _ = inputs
        self.lib.launch_segments_host(x, self.y, self.w, host_offsets, SEGMENTS)
        return self.y


get_benchmark = HostLaunches

if __name__ == "__main__":
    from core.single import main
    main(HostLaunches)
