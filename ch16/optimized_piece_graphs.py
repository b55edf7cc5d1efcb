"""Optimized: piecewise CUDA graphs (vLLM's default cudagraph mode), attention eager between.

Per bucket, setup() captures n_layers + 1 graphs: piece 0 = embedding, RoPE angles, the
visibility mask and layer 0's norm/QKV/RoPE; piece i = layer i-1's output projection,
residual, norm, MLP, residual and layer i's norm/QKV/RoPE; the last piece = the last layer's
tail, the final norm and the LM head. run() loads the bucket's static buffers, then
alternates: replay piece i, run layer i's attention eagerly (KV write, KV read, SDPA, about
ten launches), copy its output into piece i+1's static input. Launches per step drop from
~250 to ~50; attention stays free to change shape and metadata every step, which is why
vLLM splits there.
"""
from __future__ import annotations

import torch

from ch16._piece_graphs_common import (GraphedDecodeBench, StaticBatch, attention, bucket_for,
                                       post_attention, pre_attention)


class PiecewiseGraphs(GraphedDecodeBench):
    def capture(self, sb: StaticBatch) -> None:
        model, cfg = self.model, self.cfg
        n = sb.size
        attn_in = [torch.zeros(n, 1, cfg.n_heads, cfg.head_dim, dtype=cfg.dtype, device=self.ctx.device)
                   for _ in range(cfg.n_layers)]
        graphs, qkv = [], []
        with torch.no_grad():
            g = torch.cuda.CUDAGraph()
            with torch.cuda.graph(g, pool=self.pool):
                pos = sb.positions[:, None]
                cos = model.rope_cos[pos][:, :, None]
                sin = model.rope_sin[pos][:, :, None]
                visible = (torch.arange(self.kv_len, device=pos.device) <= pos)[:, None, :]
                x = model.embed[sb.tokens][:, None]
                qkv.append(pre_attention(model.blocks[0], x, cos, sin))
            graphs.append(g)
            for layer in range(cfg.n_layers):
                g = torch.cuda.CUDAGraph()
                with torch.cuda.graph(g, pool=self.pool):
                    x = post_attention(model.blocks[layer], x, attn_in[layer])
                    if layer + 1 < cfg.n_layers:
                        qkv.append(pre_attention(model.blocks[layer + 1], x, cos, sin))
                    else:
                        logits = model._logits(x[:, 0])
                graphs.append(g)
        sb.graphs, sb.qkv, sb.attn_in, sb.visible, sb.logits = graphs, qkv, attn_in, visible, logits
        sb.rope = (cos, sin)  # read by every piece: keep them out of the pool's free list

    def run(self, tokens: torch.Tensor) -> torch.Tensor:
        n = tokens.shape[0]
        sb = self.static[bucket_for(n, self.buckets)]
        sb.load(tokens, self.slots, self.positions)
        pos = sb.positions[:, None]
        with torch.no_grad():
            sb.graphs[0].replay()
            for layer in range(self.cfg.n_layers):
                q, k, v = sb.qkv[layer]
                out = attention(self.kv, layer, q, k, v, sb.slots, pos, self.kv_len, sb.visible)
                sb.attn_in[layer].copy_(out)
                sb.graphs[layer + 1].replay()
        return sb.logits[:n].clone()


get_benchmark = PiecewiseGraphs

if __name__ == "__main__":
    from core.single import main
    main(PiecewiseGraphs)
