"""Baseline: one thread per item in a normal grid (the kernel anyone writes first).

The hardware's block scheduler already balances whole blocks across SMs, so blocks are not
the problem: lanes are. A warp runs until the costliest of its 32 items is done, so with
these costs its lanes are busy ~13% of the time (mean 45 steps vs ~340 for the warp's worst).
"""
from ch12._work_queue_common import N, Inputs, WorkQueueBench


class OneThreadPerItem(WorkQueueBench):
    def run(self, inputs: Inputs):
        rotations, iters = inputs
        self.lib.launch_static(rotations, iters, self.out, N)
        return self.out


get_benchmark = OneThreadPerItem

if __name__ == "__main__":
    from core.single import main
    main(OneThreadPerItem)
