"""One launch per expert, one CTA per tile: 128 launches, each too short to fill the GPU."""
import torch

from ch10._persistent_common import EXPERTS, GroupedProjectionBench


class LaunchPerExpert(GroupedProjectionBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_expert_tiles(x, self.w, self.y, self.tile_offsets_host, EXPERTS)


get_benchmark = LaunchPerExpert

if __name__ == "__main__":
    from core.single import main
    main(LaunchPerExpert)
