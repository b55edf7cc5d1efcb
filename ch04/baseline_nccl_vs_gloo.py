"""Gloo all-reduce of a 64 MiB GPU tensor: Gloo copies it to host memory, sums over TCP
between the processes, and copies back. The book's example of the wrong backend for GPUs."""
import torch.distributed as dist

from ch04._collective_common import AllReduceSum


class GlooAllReduce(AllReduceSum):
    teaching = True  # the book's wrong-backend example: a lesson, not a headline
    elements = 16 << 20  # 64 MiB of fp32 per rank
    slow_because = ("at 4 ranks a Gloo all-reduce of 64 MiB takes 50 ms, and every round's check "
                    "re-runs one: 23 s on 4xH200 (2026-11-28: checks 8.6 s, timing 5.2 s, "
                    "verify 1.6 s, the rest starting 4 ranks with an NCCL and a Gloo group); "
                    "17 s on 2")

    def setup(self, ctx):
        super().setup(ctx)
        self.gloo = dist.new_group(backend="gloo")  # created once: only the backend differs

    def run(self, messages):
        out = messages[dist.get_rank()].clone()
        dist.all_reduce(out, group=self.gloo)
        return out


get_benchmark = GlooAllReduce

if __name__ == "__main__":
    from core.single import main
    main(GlooAllReduce)
