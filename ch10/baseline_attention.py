"""Eager attention: the textbook formula, with the S x S scores written to and read from HBM."""
import math

import torch

from ch10._attention_common import D, AttentionBench


class EagerAttention(AttentionBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        scores = torch.matmul(q, k.transpose(-2, -1)) / math.sqrt(D)  # 2 GiB, twice
        probs = torch.softmax(scores, dim=-1)  # fp32 math inside, bf16 out: another 2 GiB
        return torch.matmul(probs, v)


get_benchmark = EagerAttention

if __name__ == "__main__":
    from core.single import main
    main(EagerAttention)
