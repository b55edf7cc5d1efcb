"""HONEST (memory), the twin of `memory_first_answer`: its first call after setup() differs
from the later ones too (it builds its hidden-layer workspace there and reuses it after), and
it computes on every call. The
workspace is state the side keeps between calls, so core.memory counts it as held: no saving,
and nothing to catch."""
import torch

from ._planted_common import TwoLayer

EXPECT = "pass"


class LazyWorkspace(TwoLayer):
    goal = "memory"

    def setup(self, ctx):
        super().setup(ctx)
        self.hidden_buffer = None

    def run(self, x):
        if self.hidden_buffer is None:
            self.hidden_buffer = torch.empty(self.rows, self.hidden, device=x.device)
        torch.matmul(x, self.w1, out=self.hidden_buffer)
        return self.hidden_buffer.relu_() @ self.w2


get_benchmark = LazyWorkspace
