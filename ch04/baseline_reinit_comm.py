"""A new communicator for every step: `new_group` + its first all-reduce (which builds the
NCCL communicator: rendezvous, topology search, buffers) + destroy, around a 4 MiB message."""
import torch.distributed as dist

from ch04._collective_common import AllReduceSum


class CommunicatorPerStep(AllReduceSum):
    teaching = True  # the book's anti-pattern
    cpu_bound = ("building an NCCL communicator is host work (a TCP rendezvous through the "
                 "store, topology search, buffer setup): 0.7-0.9 s a step on 2 and 4 H200s, whose "
                 "spread (±10-12%) is the host's")
    # 4 s held ~6 steps and an interval just over ±12% (not stored, 2xH200 2026-11-28)
    time_cap_s = 12.0
    slow_because = ("a step builds a communicator (0.7-0.9 s of host work), so the 12 s a side "
                    "its host spread needs to store holds ~15 steps, and every round's check "
                    "re-runs a baseline step: 50-56 s on 2 and 4 H200s (2026-11-28: timing "
                    "17-18 s, checks 23-25 s, verify 3 s)")
    elements = 1 << 20  # 4 MiB of fp32

    def run(self, messages):
        group = dist.new_group(ranks=list(range(dist.get_world_size())))
        out = messages[dist.get_rank()].clone()
        dist.all_reduce(out, group=group)
        dist.destroy_process_group(group)
        return out


get_benchmark = CommunicatorPerStep

if __name__ == "__main__":
    from core.single import main
    main(CommunicatorPerStep)
