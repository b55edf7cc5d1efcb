"""Two-stage cuda::pipeline: cuda::memcpy_async brings tile t+1 while tile t is computed."""
from ch10._double_buffered_pipeline_common import ROWS, ProjectionBench


class TwoStagePipeline(ProjectionBench):
    def launch(self) -> None:
        self.lib.launch_project_pipelined(self.x, self.w, self.y, ROWS, self.ctas)


def get_benchmark() -> TwoStagePipeline:
    return TwoStagePipeline()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
