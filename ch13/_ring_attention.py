"""Ring attention's two pieces: attention over one K/V block with its logsumexp, and the
online-softmax merge of partial results (the same rule FlashAttention applies across tiles).

For one query, attention over keys split into blocks B1, B2 with per-block results
(o_i, lse_i), o_i = softmax-weighted mean of B_i's values, lse_i = log sum_j exp(s_j):

    lse = log(exp(lse_1) + exp(lse_2))
    o   = exp(lse_1 - lse) o_1 + exp(lse_2 - lse) o_2

written as o ← o - sigmoid(lse_2 - lse_1)(o - o_2), lse ← lse_1 - logsigmoid(lse_1 - lse_2)
(no exp of a large number; torch's own context-parallel code merges this way).
"""
from __future__ import annotations

import torch


def attend_block(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor
                 ) -> tuple[torch.Tensor, torch.Tensor]:
    """Non-causal attention of q [B, H, Sq, D] over one block k, v [B, H, Sk, D]:
    (output [B, H, Sq, D] in q's dtype, logsumexp [B, H, Sq] fp32), flash kernels."""
    if q.is_cuda:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention(q, k, v)[:2]
    else:
        out, lse = torch.ops.aten._scaled_dot_product_flash_attention_for_cpu(q, k, v)
    return out, lse[..., :q.shape[2]].float()  # some kernels pad lse's last dim


def merge(acc: tuple[torch.Tensor, torch.Tensor] | None, out: torch.Tensor, lse: torch.Tensor
          ) -> tuple[torch.Tensor, torch.Tensor]:
    """Fold one block's (out, lse) into the running (out fp32, lse fp32) accumulator."""
    if acc is None:
        return out.float(), lse
    acc_out, acc_lse = acc
    acc_out = acc_out - torch.sigmoid(lse - acc_lse).unsqueeze(-1) * (acc_out - out.float())
    acc_lse = acc_lse - torch.nn.functional.logsigmoid(acc_lse - lse)
    return acc_out, acc_lse
