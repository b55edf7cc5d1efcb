"""One persistent launch: resident CTAs pull tiles of every expert from an atomic counter."""
from ch10._persistent_common import EXPERTS, TOTAL_TILES, GroupedProjectionBench


class PersistentTiles(GroupedProjectionBench):
    def launch(self) -> None:
        self.lib.launch_expert_tiles_persistent(self.x, self.w, self.y, self.tile_offsets,
                                                EXPERTS, TOTAL_TILES)


def get_benchmark() -> PersistentTiles:
    return PersistentTiles()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
