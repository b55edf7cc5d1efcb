"""One thread per element: 32768 blocks of 256 threads spread the same loop over the GPU."""
import torch

from ch06._add_common import N, AddBench


class PerThreadAdd(AddBench):
    teaching = True  # its other half: the speedup over one thread is the lesson, not a result

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        self.lib.launch_add_per_thread(a, b, self.c, N)
        return self.c


get_benchmark = PerThreadAdd

if __name__ == "__main__":
    from core.single import main
    main(PerThreadAdd)
