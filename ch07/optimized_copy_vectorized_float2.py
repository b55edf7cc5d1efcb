"""The copy with 8-byte float2 accesses: half-way between the scalar and the float4 copy.

With the scalar and float4 variants it gives the curve of bandwidth against bytes in flight
per thread (4, 8, 16), which is where the H100 and the H200 differ (README).
"""
import torch

from ch07._copy_common import CopyBench


class Float2Copy(CopyBench):
    def run(self, src: torch.Tensor) -> torch.Tensor:
        self.lib.launch_copy_float2(src, self.dst, src.numel())
        return self.dst


get_benchmark = Float2Copy

if __name__ == "__main__":
    from core.single import main
    main(Float2Copy)
