"""A direct peer copy: `x.to("cuda:1")` over NVLink.

PyTorch enables peer access between the two GPUs and issues one device-to-device copy on
GPU 0's stream; the bytes go over NVLink without touching host memory.
"""
from ch02._p2p_transfer_common import PeerTransfer


class PeerCopy(PeerTransfer):
    def transfer(self, x):
        return x.to(self.target_gpu)


get_benchmark = PeerCopy

if __name__ == "__main__":
    from core.single import main
    main(PeerCopy)
