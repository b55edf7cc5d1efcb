"""Eager attention: the textbook formula, with the S x S scores written to and read from HBM."""
import math

import torch

from ch10._attention_common import D, AttentionBench


class EagerAttention(AttentionBench):
    def run(self) -> torch.Tensor:
        scores = torch.matmul(self.q, self.k.transpose(-2, -1)) / math.sqrt(D)  # 2 GiB, twice
        probs = torch.softmax(scores, dim=-1)  # fp32 math inside, bf16 out: another 2 GiB
        return torch.matmul(probs, self.v)


def get_benchmark() -> EagerAttention:
    return EagerAttention()


if __name__ == "__main__":
    from core.single import main
    main(get_benchmark)
