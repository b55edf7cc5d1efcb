"""Not vectorized: 4-byte accesses, but four independent loads per thread before any store.

The same 16 bytes in flight per thread as the float4 copy with four times its load
instructions. If it matches float4, the gain comes from bytes in flight, not wider
instructions (README: what the H200 needs).
"""
import torch

from ch07._copy_common import CopyBench


class ScalarIlp4Copy(CopyBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_scalar_ilp4(src, self.dst, src.numel())
        return self.dst


get_benchmark = ScalarIlp4Copy

if __name__ == "__main__":
    from core.single import main
    main(ScalarIlp4Copy)
