"""Row softmax over a mix of shapes with one launch configuration for all of them.

The configuration is the one with the lowest total time over the whole mix, found by the
same search the optimized side runs (in setup(), untimed): the best any fixed launch can do
on this mix, so the pair isolates what choosing per shape buys.
"""
from ch06._autotuning_common import SoftmaxMixBench, Table, best_single


class OneConfigSoftmax(SoftmaxMixBench):
    def choose(self, table: Table) -> None:
        config = best_single(table)
        self.config_for = {shape: config for shape in self.shapes}


get_benchmark = OneConfigSoftmax

if __name__ == "__main__":
    from core.single import main
    main(OneConfigSoftmax)
