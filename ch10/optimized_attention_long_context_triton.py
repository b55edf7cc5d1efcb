"""Causal flash attention written here: the Triton Hopper kernel of `attention_triton`, causal.

`_attention_triton_kernel.py` with causal=True: per block of 128 query rows, the K/V tiles
wholly in its past stream through the TMA ring without mask arithmetic, the diagonal block
is masked in a second loop, the tiles to its right are never loaded, and the longest rows
are launched first. Software-pipelined builds only (the warp-specialized one is kept to the
non-causal pass). Same rounding as the flash kernels, so the pair's tolerance. On an H200 (Triton 3.6):
81% of cuDNN's TFLOP/s on the same inputs; the README says what bounds it.
"""

from ch10._attention_long_context_common import LongContextAttentionBench
from ch10._attention_triton_side import TritonFlashSide


class TritonCausalAttention(TritonFlashSide, LongContextAttentionBench):
    causal = True


get_benchmark = TritonCausalAttention

if __name__ == "__main__":
    from core.single import main
    main(TritonCausalAttention)
