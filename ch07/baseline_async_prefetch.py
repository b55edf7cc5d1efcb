"""Load a tile, wait for it, compute on it, repeat: DRAM latency is exposed on every tile."""
import torch

from ch07._async_prefetch_common import N, TAPS, FilterBench


class LoadThenCompute(FilterBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_filter_load_then_compute(x, self.y, N, TAPS, self.ctas)
        return self.y


get_benchmark = LoadThenCompute

if __name__ == "__main__":
    from core.single import main
    main(LoadThenCompute)
