"""Single stage: load a tile, __syncthreads, compute, __syncthreads; loads and math take turns."""
from ch10._double_buffered_pipeline_common import ROWS, ProjectionBench


class SingleStage(ProjectionBench):
    def launch(self) -> None:
        self.lib.launch_project_single_stage(self.x, self.w, self.y, ROWS, self.ctas)


def get_benchmark() -> SingleStage:
    return SingleStage()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
