"""Gather one float per thread with plain loads (index re-read by every thread of a row)."""
import torch

from ch07._lookup_common import DIM, LOOKUPS, LookupBench


class ScalarGather(LookupBench):
    def run(self) -> torch.Tensor:
        self.lib.launch_gather_scalar(self.table, self.index, self.out, LOOKUPS, DIM)
        return self.out


def get_benchmark() -> ScalarGather:
    return ScalarGather()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
