"""Row softmax over a mix of shapes, each launched with its measured fastest configuration.

setup() times every candidate configuration on every shape once (untimed, like
triton.autotune's first call) and caches the winner in a dict keyed by (rows, cols); run()
looks each shape up and launches. The kernel and the work are the baseline's; only how the
configuration is chosen differs: measured here, predicted from the row length there.
"""
from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable
from typing import TYPE_CHECKING

import torch

from ch06._autotuning_common import Scratch, Shape, SoftmaxMixBench, candidates

if TYPE_CHECKING:
    from ch06._autotuning_kernel import LaunchConfig

Table = dict[tuple[Hashable, Hashable], float]  # {(shape, config): milliseconds}


def time_table(shapes: Iterable[Hashable], configs: Iterable[Hashable],
               time_one: Callable[[Hashable, Hashable], float]) -> Table:
    """{(shape, config): milliseconds} for every shape and configuration."""
    configs = tuple(configs)
    return {(shape, config): time_one(shape, config) for shape in shapes for config in configs}


def best_per_shape(table: Table) -> dict[Hashable, Hashable]:
    """The fastest configuration for each shape: {shape: config}."""
    best: dict[Hashable, Hashable] = {}
    for (shape, config), ms in table.items():
        if shape not in best or ms < table[(shape, best[shape])]:
            best[shape] = config
    return best


class AutotunedSoftmax(SoftmaxMixBench):
    negative_result = ("parity: at these three shapes the row-length rule already picks the "
                       "fastest launch (H100 and H200 1.00x); measuring pays where no simple "
                       "rule reaches the best setting (README)")

    def choose(self, scratch: Scratch) -> dict[Shape, LaunchConfig]:
        self.table = time_table(scratch, candidates(),
                                lambda shape, cfg: self.time_config(*scratch[shape], cfg))
        return best_per_shape(self.table)

    def time_config(self, x: torch.Tensor, y: torch.Tensor, config: LaunchConfig) -> float:
        """Milliseconds for one launch (median of do_bench's samples); tests replace it."""
        import triton.testing

        self.softmax_rows(x, y, config)  # compile outside the timing
        return triton.testing.do_bench(lambda: self.softmax_rows(x, y, config), warmup=10,
                                       rep=50, return_mode="median")


get_benchmark = AutotunedSoftmax

if __name__ == "__main__":
    from core.single import main
    main(AutotunedSoftmax)
