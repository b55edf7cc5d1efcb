"""Flash attention through cuDNN: the library's Hopper kernel behind the same SDPA call.

The same `F.scaled_dot_product_attention` as `optimized_attention.py`, with the cuDNN backend
pinned instead of PyTorch's own flash kernel (FlashAttention-2, written for Ampere). cuDNN's
fused attention on sm_90 is built on the Hopper instructions FlashAttention-3 uses: wgmma
tensor-core matmuls and TMA loads, with producer and consumer warps. It is the library answer
to the chapter's "FA3-style attention" without writing one. Same inputs, same rounding story
(scores and softmax in fp32 on chip, bf16 out), same tolerance.
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ch10._attention_common import AttentionBench


class CudnnAttention(AttentionBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        # Pinned: if cuDNN cannot take these inputs, SDPA raises instead of quietly falling
        # back to another kernel, and the variant fails with the reason.
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v)


get_benchmark = CudnnAttention

if __name__ == "__main__":
    from core.single import main
    main(CudnnAttention)
