"""One launch per expert, one CTA per tile: 128 launches, each too short to fill the GPU."""
from ch10._persistent_common import EXPERTS, GroupedProjectionBench


class LaunchPerExpert(GroupedProjectionBench):
    def launch(self) -> None:
        self.lib.launch_expert_tiles(self.x, self.w, self.y, self.tile_offsets_host, EXPERTS)


def get_benchmark() -> LaunchPerExpert:
    return LaunchPerExpert()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
