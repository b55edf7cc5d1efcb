"""CHEAT (memory): the 256 MiB hidden layer moved into a workspace allocated in setup(), so
one call allocates almost nothing. It saves no memory: core.memory counts what setup() keeps,
and the measured ratio stays ~1 (tests/test_gpu.py asserts it). It computes honestly."""
import torch

from ._planted_common import TwoLayer

EXPECT = "pass"


class SetupWorkspace(TwoLayer):
    goal = "memory"

    def setup(self, ctx):
        super().setup(ctx)
        self.hidden_buffer = torch.empty(self.rows, self.hidden, device=ctx.device)

    def run(self, x):
        torch.matmul(x, self.w1, out=self.hidden_buffer)
        return self.hidden_buffer.relu_() @ self.w2


get_benchmark = SetupWorkspace
