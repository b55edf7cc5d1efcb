"""Independent CTAs: each copies all 64 KB of W with one bulk copy (TMA) for its own 8 rows."""
import torch

from ch10._cluster_multicast_common import ROWS, BulkWeightsBench


class BulkCopyPerCta(BulkWeightsBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_weights_bulk(x, self.w, self.y, ROWS)


get_benchmark = BulkCopyPerCta

if __name__ == "__main__":
    from core.single import main
    main(BulkCopyPerCta)
