"""GPU 0 → pinned host buffer → GPU 1: the path a copy takes without peer access.

Without peer access between two GPUs (peer access off, a PCIe topology that does not allow
it, a container without P2P) the driver stages a device-to-device copy through host memory.
This side does the staging explicitly, with a pinned buffer allocated once: a D2H copy on
GPU 0's stream, then an H2D copy on GPU 1's current stream that waits for it. GPU 0's stream waits
for the H2D in turn, so the timing on GPU 0 covers the whole transfer.

Tagged teaching: with NVLink and peer access available, a competent engineer writes
`x.to("cuda:1")` (the optimized side); this is the machine without P2P that chapter 2
contrasts it with.
"""
import torch

from ch02._p2p_transfer_common import SIZE, PeerTransfer


class ThroughHost(PeerTransfer):
    teaching = True

    def prepare(self):
        self.staging = torch.empty(SIZE // 4, pin_memory=True)

    def transfer(self, x):
        self.staging.copy_(x, non_blocking=True)  # D2H on GPU 0's current stream
        copied_out = torch.cuda.Event()
        copied_out.record()
        target_stream = torch.cuda.current_stream(self.target_gpu)
        target_stream.wait_event(copied_out)
        with torch.cuda.device(self.target_gpu):  # H2D on GPU 1's current stream
            out = torch.empty(SIZE // 4, device=self.target_gpu)
            out.copy_(self.staging, non_blocking=True)
        arrived = torch.cuda.Event()
        arrived.record(target_stream)
        torch.cuda.current_stream().wait_event(arrived)  # GPU 0's timeline covers both copies
        return out


get_benchmark = ThroughHost

if __name__ == "__main__":
    from core.single import main
    main(ThroughHost)
