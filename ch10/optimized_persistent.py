"""One persistent launch: resident CTAs pull tiles of every expert from an atomic counter."""
import torch

from ch10._persistent_common import EXPERTS, TOTAL_TILES, GroupedProjectionBench


class PersistentTiles(GroupedProjectionBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_expert_tiles_persistent(x, self.w, self.y, self.tile_offsets,
                                                EXPERTS, TOTAL_TILES)


get_benchmark = PersistentTiles

if __name__ == "__main__":
    from core.single import main
    main(PersistentTiles)
