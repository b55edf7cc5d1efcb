"""Double buffering with cp.async: the next tile streams in while this one is filtered."""
import torch

from ch07._async_prefetch_common import N, TAPS, FilterBench


class DoubleBuffered(FilterBench):
    kernel = 1  # its own residency sets its grid
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_filter_double_buffered(x, self.y, N, TAPS, self.ctas)
        return self.y


get_benchmark = DoubleBuffered

if __name__ == "__main__":
    from core.single import main
    main(DoubleBuffered)
