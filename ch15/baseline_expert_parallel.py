"""Expert parallelism with `dist.all_to_all` over Python lists padded to a fixed capacity.

The GShard/first-implementation way: every destination rank gets a [capacity, d] buffer,
capacity = 1.25 × the balanced load (N·k/world rows), filled with the rows bound for it and
zero padding; the expert ids travel the same way (padding id -1) in a second all-to-all.
Every step allocates the send and receive lists afresh, the receiver drops the padding with
a boolean mask, runs its experts, scatters the outputs back into padded buffers and a third
all-to-all returns them. The host learns the per-destination counts (one sync) to slice the
send lists, and the mask costs another. A row count above capacity would be dropped by
GShard; here it is an error, so both sides compute the same thing (random routing stays
within 7% of balanced at these sizes, up to 8 ranks; the CPU's tiny router gets 2×).
"""
import math

import torch
import torch.distributed as dist

from ch15._expert_parallel_common import (CAPACITY_FACTOR, CPU_CAPACITY_FACTOR, ExpertParallelBench,
                                          local_experts, split_sizes)


class PaddedListAllToAll(ExpertParallelBench):
    description = ("expert parallel MoE (8 experts over every GPU, 8192 tokens/rank, bf16): "
                   "all_to_all of per-step padded Python lists (capacity 1.25x)")

    def setup(self, ctx):
        super().setup(ctx)
        factor = CAPACITY_FACTOR if ctx.is_cuda else CPU_CAPACITY_FACTOR  # the CPU's router is less even
        self.capacity = math.ceil(factor * self.rows / self.world)

    def exchange(self, rows, ids, counts):
        world, cap, d = self.world, self.capacity, rows.shape[1]
        send_counts = split_sizes(counts, world).tolist()  # host sync: slices the send lists
        if max(send_counts) > cap:
            raise RuntimeError(f"{max(send_counts)} rows for one rank exceed the capacity {cap}")
        send_rows, send_ids, start = [], [], 0
        for n in send_counts:
            buf = rows.new_zeros(cap, d)
            buf[:n] = rows[start:start + n]
            tag = ids.new_full((cap,), -1)
            tag[:n] = ids[start:start + n]
            send_rows.append(buf)
            send_ids.append(tag)
            start += n
        recv_rows = [rows.new_empty(cap, d) for _ in range(world)]
        recv_ids = [ids.new_empty(cap) for _ in range(world)]
        dist.all_to_all(recv_rows, send_rows)
        dist.all_to_all(recv_ids, send_ids)
        got, got_ids = torch.cat(recv_rows), torch.cat(recv_ids)
        valid = got_ids >= 0
        y = local_experts(got[valid], got_ids[valid] - self.rank * self.e_local,  # mask: sync
                          self.w_gate_up_t, self.w_down_t)
        back = torch.zeros_like(got)
        back[valid] = y
        returned = [rows.new_empty(cap, d) for _ in range(world)]
        dist.all_to_all(returned, list(back.split(cap)))
        return torch.cat([r[:n] for r, n in zip(returned, send_counts)])


get_benchmark = PaddedListAllToAll

if __name__ == "__main__":
    from core.single import main
    main(PaddedListAllToAll)
