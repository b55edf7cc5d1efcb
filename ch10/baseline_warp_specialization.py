"""Every warp loads, then every warp computes: one tile in flight, loads and math take turns."""
import torch

from ch10._warp_specialization_common import OUT_ROWS, StencilBench


class LoadThenCompute(StencilBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_stencil_load_then_compute(x, self.taps, self.y, OUT_ROWS, self.ctas)


get_benchmark = LoadThenCompute

if __name__ == "__main__":
    from core.single import main
    main(LoadThenCompute)
