"""Every warp loads, then every warp computes: one tile in flight, loads and math take turns."""
from ch10._warp_specialization_common import OUT_ROWS, StencilBench


class LoadThenCompute(StencilBench):
    def launch(self) -> None:
        self.lib.launch_stencil_load_then_compute(self.x, self.taps, self.y, OUT_ROWS, self.ctas)


def get_benchmark() -> LoadThenCompute:
    return LoadThenCompute()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
