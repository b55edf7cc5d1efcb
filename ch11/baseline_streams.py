"""Baseline: every chunk's copy in, compute and copy out, one after another on one stream.

The copies are asynchronous (pinned memory, `non_blocking=True`), so the host enqueues all
eight chunks at once, but one stream runs its work in order: while a chunk is copied in, the
SMs and the D2H engine wait, and so on. The time is the sum of the three stages. (Not
chunking at all gives the same sum: chunks buy nothing on one stream.)
"""
import torch

from ch11._streams_common import StreamsBench, mlp


class OneStream(StreamsBench):
    def run(self, x: torch.Tensor) -> torch.Tensor:
        for i, (start, stop) in enumerate(self.bounds):
            d_in, d_out = self.slot(i, start, stop)
            d_in.copy_(x[start:stop], non_blocking=True)
            mlp(d_in, self.w1, self.w2, d_out)
            self.out[start:stop].copy_(d_out, non_blocking=True)
        torch.cuda.current_stream().synchronize()  # the answer is in host memory: wait for it
        return self.out


get_benchmark = OneStream

if __name__ == "__main__":
    from core.single import main
    main(OneStream)
