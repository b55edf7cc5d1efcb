"""Baseline: each int8 K/V tile is loaded into shared memory, then computed; loads and math take turns.

Every thread issues its four 16-byte loads of K and of V (all before the first store, so
they are in flight together), stores them to shared memory, the block synchronizes, and the
tile is attended to; only then do the next tile's loads start.
"""
import torch

from ch19._kv_prefetch_overlap_common import BATCH, KV_HEADS, SEQ, Int8DecodeBench


class SyncTileLoads(Int8DecodeBench):
    def launch(self, q: torch.Tensor) -> None:
        self.lib.launch_kv_decode_sync(q, self.k, self.v, self.k_scale, self.v_scale, self.out,
                                       BATCH, KV_HEADS, SEQ, self.qk_scale)


get_benchmark = SyncTileLoads

if __name__ == "__main__":
    from core.single import main
    main(SyncTileLoads)
