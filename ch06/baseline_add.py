"""One GPU thread adds all 1M pairs in a loop (<<<1, 1>>>): the book's first, naive kernel."""
import torch

from ch06._add_common import N, AddBench


class SerialAdd(AddBench):
    teaching = True  # the book's deliberately naive <<<1, 1>>> loop: kept out of headlines

    def run(self) -> torch.Tensor:
        self.lib.launch_add_serial(self.a, self.b, self.c, N)
        return self.c


def get_benchmark() -> SerialAdd:
    return SerialAdd()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
