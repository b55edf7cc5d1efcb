"""Variant: each stage's last kernel stores its output straight into the next GPU's slot.

The same put + signal protocol as `optimized_nvshmem_pipeline`, without its copy: the
block's residual add writes micro-batch i into slot i of the next stage's inbox (a tensor
over that GPU's memory: the add kernel's stores cross NVLink), and put_signal follows it in
stream order. A copy into a peer is a copy-engine operation of its own on the critical
path, once per micro-batch; here the hand-off adds only the flag kernels. This stage's own
copy of its outputs (what run() returns, for verification) is read back from the next
GPU once per call, after the last micro-batch, off the per-micro-batch path.
"""
import torch

from ch04._nvshmem_pipeline_common import mlp_block
from ch04.optimized_nvshmem_pipeline import TIMEOUT_MS, PutSignalPipeline


class StoreIntoNextStage(PutSignalPipeline):
    def run(self, x):
        out = torch.empty(self.shape(), dtype=torch.bfloat16, device=x.device)
        for i in range(self.cfg.microbatches):
            if self.prev is not None:  # micro-batch i has landed in slot i
                self.handle.wait_signal(self.prev, channel=i, timeout_ms=TIMEOUT_MS)
            inp = x[i] if self.prev is None else self.inbox[i]
            if self.next is None:
                mlp_block(inp, self.w1, self.w2, out=out[i])
                continue
            if i == 0:  # the next stage has read the previous call's slots
                self.handle.wait_signal(self.next, channel=self.free, timeout_ms=TIMEOUT_MS)
            mlp_block(inp, self.w1, self.w2, out=self.next_inbox[i])  # stores cross NVLink
            self.handle.put_signal(self.next, channel=i, timeout_ms=TIMEOUT_MS)
        if self.next is not None:
            # what this stage produced, read back before the next call may overwrite it (the
            # next stage only reads its inbox; our next call's writes wait for its hand-back)
            out.copy_(self.next_inbox)
        if self.prev is not None:  # every slot read: hand the inbox back
            self.handle.put_signal(self.prev, channel=self.free, timeout_ms=TIMEOUT_MS)
        return out


get_benchmark = StoreIntoNextStage

if __name__ == "__main__":
    from core.single import main
    main(StoreIntoNextStage)
