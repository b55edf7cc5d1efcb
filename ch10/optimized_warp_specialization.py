"""A producer warp keeps a 4-stage TMA ring full; 8 consumer warps only compute."""
from ch10._warp_specialization_common import OUT_ROWS, StencilBench


class WarpSpecialized(StencilBench):
    def launch(self) -> None:
        self.lib.launch_stencil_warp_specialized(self.x, self.taps, self.y, OUT_ROWS, self.ctas)


def get_benchmark() -> WarpSpecialized:
    return WarpSpecialized()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
