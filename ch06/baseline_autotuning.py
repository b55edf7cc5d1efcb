"""Row softmax over a mix of shapes, each launched with the configuration its row length implies.

The rule a hand-written softmax uses, no timing: a tile as wide as the row rounded up to a
power of two (Triton's fused-softmax tutorial), warps scaled with the tile so each thread
holds ~16 values (as ch14's RMSNorm kernel does), and two limits that let one rule cover the
whole mix. Rows wider than MAX_TILE are walked in tiles by the kernel's online softmax
instead of held whole (a 128k-column row would not fit in registers); rows narrower than
ROW_ELEMS share a program, as PyTorch's own softmax gives each warp two rows of <= 128
columns, so a program has work for its warps.
"""
from __future__ import annotations

from typing import TYPE_CHECKING

from ch06._autotuning_common import Scratch, Shape, SoftmaxMixBench

if TYPE_CHECKING:
    from ch06._autotuning_kernel import LaunchConfig

MAX_TILE = 16384  # fp32 columns per tile: 32 values per thread at 16 warps
ROW_ELEMS = 2048  # short rows: pack rows until a program holds this many values


def launch_for(cols: int) -> LaunchConfig:
    """The launch configuration for rows of `cols` columns."""
    import triton

    from ch06._autotuning_kernel import LaunchConfig

    block_c = min(triton.next_power_of_2(cols), MAX_TILE)
    block_r = max(1, ROW_ELEMS // block_c)
    num_warps = max(4, min(16, block_r * block_c // 512))  # ~16 values a thread, <= 16 warps
    return LaunchConfig(block_r, block_c, num_warps)


class RowLengthSoftmax(SoftmaxMixBench):
    def choose(self, scratch: Scratch) -> dict[Shape, LaunchConfig]:
        return {(rows, cols): launch_for(cols) for rows, cols in scratch}


get_benchmark = RowLengthSoftmax

if __name__ == "__main__":
    from core.single import main
    main(RowLengthSoftmax)
