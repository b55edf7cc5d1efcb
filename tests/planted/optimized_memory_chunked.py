"""HONEST memory saving: 512 rows at a time, so only a 32 MiB slice of the hidden layer
exists at once (peak ~2.3x lower with the weights counted). core.memory must see it."""
import torch

from ._planted_common import TwoLayer

EXPECT = "pass"


class Chunked(TwoLayer):
    goal = "memory"

    def run(self, x):
        out = torch.empty(x.shape[0], self.width, device=x.device)
        for rows in range(0, x.shape[0], 512):
            out[rows:rows + 512] = (x[rows:rows + 512] @ self.w1).relu_() @ self.w2
        return out


get_benchmark = Chunked
