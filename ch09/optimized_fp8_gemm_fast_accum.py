"""Variant: the fp8 GEMM with `use_fast_accum=True`.

cuBLAS keeps the whole K loop in the fp8 tensor cores' own accumulator instead of
promoting partial sums to fp32 every few steps: fewer instructions per tile, so it can be
faster, and on Hopper a less precise sum (its fp8 MMA accumulator keeps ~14 bits, per the
DeepSeek-V3 report). Inference kernels often accept that; training recipes usually do not.
Same tolerance as the promoted variant (its 8-sigma atol leaves the room).
"""
from __future__ import annotations

from ch09._fp8_gemm_common import ScaledMmBench
from core.benchmark import Requirements


class Fp8GemmFastAccum(ScaledMmBench):
    requires = Requirements(min_compute_capability=(8, 9), modules=("triton",))
    fast_accum = True


get_benchmark = Fp8GemmFastAccum

if __name__ == "__main__":
    from core.single import main
    main(Fp8GemmFastAccum)
