"""Independent CTAs: each loads all 64 KB of W from global memory for its own 8 rows."""
import torch

from ch10._cluster_dsmem_common import ROWS, SharedWeightsBench


class WeightsPerCta(SharedWeightsBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_weights_per_cta(x, self.w, self.y, ROWS)


get_benchmark = WeightsPerCta

if __name__ == "__main__":
    from core.single import main
    main(WeightsPerCta)
