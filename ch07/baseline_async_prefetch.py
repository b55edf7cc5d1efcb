"""Load a tile, wait for it, compute on it, repeat: DRAM latency is exposed on every tile."""
import torch

from ch07._async_prefetch_common import N, TAPS, FilterBench


class LoadThenCompute(FilterBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_filter_load_then_compute(self.x, self.y, N, TAPS, self.ctas)
        return self.y


def get_benchmark() -> LoadThenCompute:
    return LoadThenCompute()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
