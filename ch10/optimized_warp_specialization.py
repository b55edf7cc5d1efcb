"""A producer warp keeps a 4-stage TMA ring full; 8 consumer warps only compute."""
import torch

from ch10._warp_specialization_common import OUT_ROWS, StencilBench


class WarpSpecialized(StencilBench):
    kernel = 1  # its own residency sets its grid
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_stencil_warp_specialized(x, self.taps, self.y, OUT_ROWS, self.ctas)


get_benchmark = WarpSpecialized

if __name__ == "__main__":
    from core.single import main
    main(WarpSpecialized)
