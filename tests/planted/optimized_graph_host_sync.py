"""Not capturable (graph mode): run() reads a value back to the host (.item()), which a
CUDA graph cannot hold; the pair fails with the reason instead of timing something else."""
from .baseline_graph import GraphTimed

EXPECT = "cannot be captured in a CUDA graph"


class ReadsBack(GraphTimed):
    def run(self, inputs):
        x, y = inputs
        scale = float(y.abs().max().item())
        return self.compute(x, y / scale) * scale


get_benchmark = ReadsBack
