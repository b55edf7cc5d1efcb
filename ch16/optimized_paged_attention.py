"""Optimized: FlexAttention reads the KV pool in place, through the block table.

The pool of one layer, [blocks, block_size, kv_heads, D], is viewed as a single KV sequence
[1, kv_heads, blocks * block_size, D] (a strided view, no copy; Flex needs only the last
dimension contiguous). Each step builds a BlockMask from the block table and lengths: row b
lists sequence b's physical blocks, as partial blocks whose mask_mod keeps the sequence's
own keys below its length. Flex's decode kernel (chosen for a one-token query; GQA handled
in the kernel with `enable_gqa=True`) walks those blocks only, each row cut into SPLIT_KV = 4
tiles (KERNEL_OPTIONS; why partial blocks and 4 splits: _paged_attention_common): each KV
byte of the batch is read once, and nothing is copied or padded.

vLLM's PagedAttention kernel and FlashInfer's paged decode do this with hand-written CUDA;
here torch.compile generates the Triton kernel (compiled and warmed up in setup()).
On the CPU, Flex runs eagerly (a reference implementation) at the tiny sizes.
"""
from __future__ import annotations

import torch

from ch16._paged_attention_common import KERNEL_OPTIONS, PagedBlockMask, PagedDecodeBench


class FlexPagedDecode(PagedDecodeBench):
    def prepare(self) -> None:
        from torch.nn.attention.flex_attention import flex_attention

        kv = self.kv
        nb, bs, hkv, d = kv.k.shape[1:]
        # [1, kv_heads, blocks * block_size, D] views of layer 0's pool
        self.k_flat = kv.k[0].view(1, nb * bs, hkv, d).transpose(1, 2)
        self.v_flat = kv.v[0].view(1, nb * bs, hkv, d).transpose(1, 2)
        self.block_mask = PagedBlockMask(bs, nb, len(self.lengths_list), self.ctx.device)
        self.flex = torch.compile(flex_attention, dynamic=False) if self.ctx.is_cuda else flex_attention
        if self.ctx.is_cuda:
            self.run(self.make_inputs(self.ctx.seed))  # compile and warm up, not timed

    def run(self, q: torch.Tensor) -> torch.Tensor:
        table = self.kv.block_table[self.slots]          # this step's rows of the block table
        mask = self.block_mask(table, self.lengths)
        out = self.flex(q[:, :, None], self.k_flat, self.v_flat, block_mask=mask, enable_gqa=True,
                        kernel_options=KERNEL_OPTIONS)
        return out[:, :, 0]                               # [B, H, D]


get_benchmark = FlexPagedDecode

if __name__ == "__main__":
    from core.single import main
    main(FlexPagedDecode)
