"""Causal flash attention via SDPA: scores stay on chip, tiles above the diagonal are skipped."""
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

from ch10._attention_long_context_common import LongContextAttentionBench


class FlashCausalAttention(LongContextAttentionBench):
    def run(self, inputs: tuple[torch.Tensor, torch.Tensor, torch.Tensor]) -> torch.Tensor:
        q, k, v = inputs
        # Pin the flash backend: SDPA would otherwise pick one itself (and fall back silently).
        with sdpa_kernel(SDPBackend.FLASH_ATTENTION):
            return F.scaled_dot_product_attention(q, k, v, is_causal=True)


get_benchmark = FlashCausalAttention

if __name__ == "__main__":
    from core.single import main
    main(FlashCausalAttention)
