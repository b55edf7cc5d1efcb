"""Row softmax over a mix of shapes, each launched with its own fastest configuration.

setup() times every candidate configuration on every shape once (untimed, like
triton.autotune's first call) and caches the winner in a dict keyed by (rows, cols); run()
looks each shape up and launches. The kernel and the work are the baseline's.
"""
from ch06._autotuning_common import SoftmaxMixBench, Table, best_per_shape


class PerShapeConfigSoftmax(SoftmaxMixBench):
    def choose(self, table: Table) -> None:
        self.config_for = best_per_shape(table)


get_benchmark = PerShapeConfigSoftmax

if __name__ == "__main__":
    from core.single import main
    main(PerShapeConfigSoftmax)
