"""One thread per element, 4-byte loads: the optimized side of `add` is the baseline here."""
import torch

from ch06._add_vectorized_common import N, AddBench


class ScalarAdd(AddBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_add_per_thread(self.a, self.b, self.c, N)
        return self.c


def get_benchmark() -> ScalarAdd:
    return ScalarAdd()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
