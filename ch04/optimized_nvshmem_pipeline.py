"""Device-initiated put + signal between stages, over PyTorch symmetric memory.

setup() allocates each stage's inbox, one slot per micro-batch ([16, 8, 4096] bf16), in
symmetric memory (`symm_mem.empty` + `rendezvous`): each GPU maps its neighbours' inboxes and
their signal pads (32-bit flags in GPU memory, one per channel and peer). In run() the GPUs
hand micro-batches over without the host or NCCL, NVSHMEM's put-with-signal model:

- put: stage s copies micro-batch i's output straight into slot i of stage s+1's inbox
  (`handle.get_buffer(s+1, ...)` is a tensor over that GPU's memory; the copy goes over
  NVLink), then `handle.put_signal(s+1, channel=i)` runs a one-thread kernel that sets this
  rank's flag for channel i in stage s+1's signal pad (a compare-and-swap 0 → 1 with release
  order at system scope, after the copy in stream order).
- wait: before its block reads slot i, stage s+1's `handle.wait_signal(s, channel=i)` spins on
  its GPU until that flag is set, and consumes it (an acquire compare-and-swap 1 → 0).
- reuse: the next call writes the same slots. Stage s+1 hands its whole inbox back once its
  last block has read it (a put on the channel after the micro-batches'), and stage s waits
  for that before its first copy of a call; setup() hands every inbox out once.

Every flag a call sets is consumed in the same call, so after each call the flags are as
setup() left them: the same kernels with the same arguments are right for every call, which
is what CUDA-graph replay needs (no per-call epoch to advance). The ops are PyTorch's CUDA
symmetric-memory backend (torch >= 2.6); they need no NVSHMEM bootstrap and are captured in
a graph like any kernel. Multicast (NVLS) is not used. The copy is its own small kernel; a
block whose last kernel stored straight into the next GPU's slot would save it.
"""
from dataclasses import replace
from types import ModuleType
from typing import Any

import torch
import torch.distributed as dist

from ch04._nvshmem_pipeline_common import PipelineForward, mlp_block

# A flag that never comes (ranks out of step) traps the kernel with a message naming the
# ranks and the channel, instead of hanging the pair until the harness's timeout.
TIMEOUT_MS = 60_000


def symmetric_memory() -> ModuleType:
    """torch.distributed._symmetric_memory with the device-side signal ops, or an error that
    names what is missing."""
    try:
        import torch.distributed._symmetric_memory as symm_mem
        from torch._C._distributed_c10d import _SymmetricMemory
    except ImportError as exc:
        raise RuntimeError(f"nvshmem_pipeline needs torch.distributed._symmetric_memory, "
                           f"which this torch {torch.__version__} lacks ({exc})") from exc
    ops = ("get_buffer", "put_signal", "wait_signal")
    missing = [op for op in ops if not hasattr(_SymmetricMemory, op)]
    if missing:
        raise RuntimeError(f"nvshmem_pipeline needs SymmetricMemory.{', .'.join(missing)} "
                           f"(torch >= 2.6); torch {torch.__version__} lacks them")
    return symm_mem


class PutSignalPipeline(PipelineForward):
    supports_cpu = False  # symmetric memory is CUDA memory
    requires = replace(PipelineForward.requires, one_node=True)  # NVLink-mapped peers: one machine
    negative_result = ("0.93x on 2 and on 4 H200s: each 64 KiB hand-off is a copy into the next "
                       "GPU's slot, a node of its own on every micro-batch's critical path, plus "
                       "two flag kernels, where NCCL's captured send and recv are one kernel each; "
                       "`nvshmem_pipeline_store`, whose block stores straight into the next GPU, "
                       "drops the copy and measures 1.12x (ch04/README.md)")

    def setup(self, ctx):
        super().setup(ctx)
        symm_mem = symmetric_memory()
        inbox = symm_mem.empty(*self.shape(), dtype=torch.bfloat16, device=ctx.device)
        backend = symm_mem.get_backend(inbox.device) if hasattr(symm_mem, "get_backend") else None
        if backend not in (None, "CUDA"):  # torch's NVSHMEM backend leaves put/wait_signal empty
            raise RuntimeError(f"nvshmem_pipeline needs the CUDA symmetric-memory backend for "
                               f"put_signal/wait_signal, not {backend!r} (unset TORCH_SYMMMEM)")
        self.connect(inbox, symm_mem.rendezvous(inbox, dist.group.WORLD.group_name))

    def connect(self, inbox: torch.Tensor, handle: Any) -> None:
        """Keep this stage's inbox and its handle, map the next stage's inbox, and hand this
        inbox to the previous stage for the first call."""
        self.inbox, self.handle = inbox, handle
        self.free = self.cfg.microbatches  # the channel after the micro-batches': "inbox read"
        if self.next is not None:
            self.next_inbox = handle.get_buffer(self.next, self.shape(), torch.bfloat16)
        if self.prev is not None:
            handle.put_signal(self.prev, channel=self.free, timeout_ms=TIMEOUT_MS)

    def run(self, x):
        out = torch.empty(self.shape(), dtype=torch.bfloat16, device=x.device)
        for i in range(self.cfg.microbatches):
            if self.prev is not None:  # micro-batch i has landed in slot i
                self.handle.wait_signal(self.prev, channel=i, timeout_ms=TIMEOUT_MS)
            inp = x[i] if self.prev is None else self.inbox[i]
            if self.next is None:
                mlp_block(inp, self.w1, self.w2, out=out[i])
                continue
            self.hand_over(i, inp, out)
            self.handle.put_signal(self.next, channel=i, timeout_ms=TIMEOUT_MS)
        self.read_back(out)
        if self.prev is not None:  # every slot read: hand the inbox back
            self.handle.put_signal(self.prev, channel=self.free, timeout_ms=TIMEOUT_MS)
        return out

    def hand_over(self, i: int, inp: torch.Tensor, out: torch.Tensor) -> None:
        """Micro-batch i's block, its output put into slot i of the next GPU's inbox."""
        mlp_block(inp, self.w1, self.w2, out=out[i])
        self.wait_until_inbox_free(i)
        self.next_inbox[i].copy_(out[i])  # put: into the next GPU's slot i

    def wait_until_inbox_free(self, i: int) -> None:
        if i == 0:  # the next stage has read the previous call's slots
            self.handle.wait_signal(self.next, channel=self.free, timeout_ms=TIMEOUT_MS)

    def read_back(self, out: torch.Tensor) -> None:
        """Nothing here: `out` holds this stage's outputs already."""


get_benchmark = PutSignalPipeline

if __name__ == "__main__":
    from core.single import main
    main(PutSignalPipeline)
