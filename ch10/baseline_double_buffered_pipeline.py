"""Single stage: load a tile, __syncthreads, compute, __syncthreads; loads and math take turns."""
import torch

from ch10._double_buffered_pipeline_common import ROWS, ProjectionBench


class SingleStage(ProjectionBench):
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_single_stage(x, self.w, self.y, ROWS, self.ctas)


get_benchmark = SingleStage

if __name__ == "__main__":
    from core.single import main
    main(SingleStage)
