"""One thread per element, 4-byte loads: the optimized side of `add` is the baseline here."""
import torch

from ch06._add_vectorized_common import N, AddBench


class ScalarAdd(AddBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        self.lib.launch_add_per_thread(a, b, self.c, N)
        return self.c


get_benchmark = ScalarAdd

if __name__ == "__main__":
    from core.single import main
    main(ScalarAdd)
