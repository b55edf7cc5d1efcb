"""Causal flash attention through cuDNN: the library's Hopper kernel behind the same SDPA call.

As `optimized_attention_cudnn.py` is to `optimized_attention.py`: the cuDNN backend pinned
instead of PyTorch's FlashAttention-2 kernel; its sm_90 fused attention uses wgmma and TMA.
"""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ch10._attention_long_context_common import LongContextAttentionBench


class CudnnCausalAttention(LongContextAttentionBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        # Pinned: if cuDNN cannot take these inputs, SDPA raises instead of quietly falling
        # back to another kernel, and the variant fails with the reason.
        with sdpa_kernel(SDPBackend.CUDNN_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)


get_benchmark = CudnnCausalAttention

if __name__ == "__main__":
    from core.single import main
    main(CudnnCausalAttention)
