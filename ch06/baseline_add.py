"""One GPU thread adds all 8M pairs in a loop (<<<1, 1>>>): the book's first, naive kernel."""
import torch

from ch06._add_common import N, AddBench


class SerialAdd(AddBench):
    teaching = True  # the book's deliberately naive <<<1, 1>>> loop: kept out of headlines

    def run(self, inputs: tuple[torch.Tensor, torch.Tensor]) -> torch.Tensor:
        a, b = inputs
        self.lib.launch_add_serial(a, b, self.c, N)
        return self.c


get_benchmark = SerialAdd

if __name__ == "__main__":
    from core.single import main
    main(SerialAdd)
