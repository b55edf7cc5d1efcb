"""Baseline: an equal count of rows per warp: one warp per row (the CSR-vector kernel).

The natural first kernel: rows are split evenly, each warp sums its row with coalesced loads
and a shuffle reduction. Most rows are short and done at once; the hub rows are not: one warp
streams ~6·10^5 values alone, long after every other warp has finished, and that tail sets
the kernel's time.
"""
from ch12._uneven_partition_common import ROWS, Inputs, RowSumsBench


class RowPerWarp(RowSumsBench):
    def run(self, inputs: Inputs):
        offsets, vals = inputs
        self.lib.launch_rows_per_warp(offsets, vals, self.y, ROWS)
        return self.y


get_benchmark = RowPerWarp

if __name__ == "__main__":
    from core.single import main
    main(RowPerWarp)
