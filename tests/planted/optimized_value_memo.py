"""CHEAT (issue 33): a memo keyed on eight sampled values of each input; a hit returns the
stored answer without the work (20 passes). While the harness refilled the inputs only once
per batch and once just before the one checked call, every checked call missed and computed
and every other call hit, so it paid in proportion to the calls per batch (at the planted
suite's 6 fixed samples, rounds of 3 calls, it measured 1.01x [0.83-11.2] on the CPU; batches
of 200 calls would skip ~99% of the work). STORED stands for such a speedup. Now every timed
call gets values no earlier call had (core.fresh): it never hits, so it pays nothing, and the
stored 5.0x is a regression."""
from .baseline_value_memo import Repeated

# on a GPU its interval is tight: a regression; on a loaded CPU the planted suite's 6 fixed
# samples can leave the interval reaching the floor (inconclusive, 0.91x [0.68-9.73] in CI);
# either way tests/test_planted.py requires its median below half the stored 5.0x
EXPECT = "gate: regression|inconclusive"
STORED = {"speedup": 5.0, "declarations": {}}  # what it got through with before
TWIN = "optimized_value_memo_log"  # its honest twin: the same key and memo, computes every call


class SampledMemo(Repeated):
    def setup(self, ctx):
        self.memo = {}

    def run(self, inputs):
        key = tuple(tuple(t[:8].tolist()) for t in inputs)
        if key not in self.memo:
            self.memo = {key: self.compute(*inputs)}  # one entry: the last values seen
        return self.memo[key].clone()


get_benchmark = SampledMemo
