"""One warp per row: index read once, row moved as float4 through the read-only path."""
import torch

from ch07._lookup_common import DIM, LOOKUPS, LookupBench


class ReadOnlyRowGather(LookupBench):
    def run(self, index: torch.Tensor) -> torch.Tensor:
        self.lib.launch_gather_rows_ldg(self.table, index, self.out, LOOKUPS, DIM)
        return self.out


get_benchmark = ReadOnlyRowGather

if __name__ == "__main__":
    from core.single import main
    main(ReadOnlyRowGather)
