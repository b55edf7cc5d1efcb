"""Not capturable (graph mode): run() reads a value back to the host (`bool(tensor)`), which a
CUDA graph cannot hold; the pair fails with the reason instead of timing something else."""
import torch

from .baseline_graph import GraphTimed

EXPECT = "cannot be captured in a CUDA graph"


class ReadsBack(GraphTimed):
    def run(self, inputs):
        x, y = inputs
        if not bool(torch.isfinite(x).all()):  # the host waits for the GPU's answer here
            raise ValueError("non-finite input")
        return self.compute(x, y)


get_benchmark = ReadsBack
