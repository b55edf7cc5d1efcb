"""Optimized: a 3-stage cp.async pipeline; tiles t+1 and t+2 stream into shared memory while tile t is computed.

`__pipeline_memcpy_async` (cp.async, LDGSTS in SASS) copies global memory straight into
shared memory without passing through registers and without blocking the thread; one commit
group per tile and `__pipeline_wait_prior(2)` let a thread wait only for the oldest tile.
Each CTA keeps up to three tiles (48 KB) of loads in flight instead of one, which is what
feeds HBM when only about two CTAs share an SM. 51 KB of dynamic shared memory per CTA.
"""
import torch

from ch19._kv_prefetch_overlap_common import BATCH, KV_HEADS, SEQ, Int8DecodeBench


class PipelinedTileLoads(Int8DecodeBench):
    def launch(self, q: torch.Tensor) -> None:
        self.lib.launch_kv_decode_pipelined(q, self.k, self.v, self.k_scale, self.v_scale, self.out,
                                            BATCH, KV_HEADS, SEQ, self.qk_scale)


get_benchmark = PipelinedTileLoads

if __name__ == "__main__":
    from core.single import main
    main(PipelinedTileLoads)
