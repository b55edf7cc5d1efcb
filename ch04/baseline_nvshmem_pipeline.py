"""Host-issued NCCL send/recv per micro-batch (what a pipeline stage's loop looks like first).

For each micro-batch, stage s receives it from stage s-1 (`dist.recv` into a buffer made in
setup), applies its block, and sends the result to stage s+1 with `dist.isend`, so the next
micro-batch's block is enqueued while the send is in flight; the sends are waited at the end
of the call. With NCCL each recv and send is a kernel on one of NCCL's streams, ordered
against the compute stream by events: the block for micro-batch i starts after its recv's
kernel has finished, and each send's kernel after the block that produced its data.
"""
import torch
import torch.distributed as dist

from ch04._nvshmem_pipeline_common import PipelineForward, mlp_block


class SendRecvPipeline(PipelineForward):
    def setup(self, ctx):
        super().setup(ctx)
        self.inbox = torch.empty(self.shape(), dtype=torch.bfloat16, device=ctx.device)

    def run(self, x):
        out = torch.empty(self.shape(), dtype=torch.bfloat16, device=x.device)
        sends = []
        for i in range(self.cfg.microbatches):
            if self.prev is not None:
                dist.recv(self.inbox[i], src=self.prev)
            mlp_block(x[i] if self.prev is None else self.inbox[i], self.w1, self.w2, out=out[i])
            if self.next is not None:
                sends.append(dist.isend(out[i], dst=self.next))
        for send in sends:
            send.wait()
        return out


get_benchmark = SendRecvPipeline

if __name__ == "__main__":
    from core.single import main
    main(SendRecvPipeline)
