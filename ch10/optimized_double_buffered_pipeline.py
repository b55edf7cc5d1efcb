"""Two-stage cuda::pipeline: cuda::memcpy_async brings tile t+1 while tile t is computed."""
import torch

from ch10._double_buffered_pipeline_common import ROWS, ProjectionBench


class TwoStagePipeline(ProjectionBench):
    kernel = 1  # its own residency sets its grid
    def launch(self, x: torch.Tensor) -> None:
        self.lib.launch_project_pipelined(x, self.w, self.y, ROWS, self.ctas)


get_benchmark = TwoStagePipeline

if __name__ == "__main__":
    from core.single import main
    main(TwoStagePipeline)
