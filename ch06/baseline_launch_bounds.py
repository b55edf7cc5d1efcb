"""Register-heavy projection without launch bounds: ptxas takes 164 registers, 1 block per SM."""
import torch

from ch06._launch_bounds_common import K, N, OUT, ProjectBench


class UnboundedProjection(ProjectBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        self.lib.launch_project_unbounded(x, self.wt, self.y, N, K, OUT)
        return self.y


get_benchmark = UnboundedProjection

if __name__ == "__main__":
    from core.single import main
    main(UnboundedProjection)
