"""Gather one float per thread with plain loads (index re-read by every thread of a row)."""
import torch

from ch07._lookup_common import DIM, LOOKUPS, LookupBench


class ScalarGather(LookupBench):
    def run(self, index: torch.Tensor) -> torch.Tensor:
        self.lib.launch_gather_scalar(self.table, index, self.out, LOOKUPS, DIM)
        return self.out


get_benchmark = ScalarGather

if __name__ == "__main__":
    from core.single import main
    main(ScalarGather)
