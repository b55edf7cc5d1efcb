"""Optimized: dynamic parallelism: a parent grid launches each segment's grid from the GPU.

One host launch: a parent kernel with a thread per segment, each launching its segment's
child grid (fire-and-forget streams, so children run concurrently). The host's 1024 launches
become 1024 device-side launches, which are not free either: each costs the device runtime
a few µs of its own, in parallel. This file is built with `-rdc=true -lcudadevrt`.
"""
from ch12._dynamic_parallelism_common import SEGMENTS, Inputs, SegmentsBench
from core.benchmark import BenchContext


class DeviceLaunches(SegmentsBench):
    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        self.lib.set_pending_launch_limit(2 * SEGMENTS)  # room for every child at once

    def run(self, inputs: Inputs):
        x, _, offsets = inputs
        self.lib.launch_segments_device(x, self.y, self.w, offsets, SEGMENTS)
        return self.y


get_benchmark = DeviceLaunches

if __name__ == "__main__":
    from core.single import main
    main(DeviceLaunches)
