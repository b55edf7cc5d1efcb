"""int8 GEMV, one warp per row: byte-sized weight loads into one FMA chain per lane.

What most people write first: lane k of a warp takes weights k, k + 32, ..., converts each
to fp32 and accumulates w·x into a single register, then the warp reduces. Every FMA waits
on the one before, and each warp-wide load brings in 32 bytes of weights.
"""
import torch

from ch06._quantization_ilp_common import COLS, ROWS, Int8GemvBench


class OneAccumulatorGemv(Int8GemvBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_gemv_int8_one_acc(self.q, self.scale, x, self.y, ROWS, COLS)
        return self.y


get_benchmark = OneAccumulatorGemv

if __name__ == "__main__":
    from core.single import main
    main(OneAccumulatorGemv)
