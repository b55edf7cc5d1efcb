"""The eight eager passes fused into one: the hand-written Triton kernel of `triton_norm`.

The same side as optimized_triton_norm.py (one program per row, the row read once and
written once); timed here against the unfused eager spelling to show what fusion alone buys.
"""
from ch14.optimized_triton_norm import TritonRMSNorm

get_benchmark = TritonRMSNorm

if __name__ == "__main__":
    from core.single import main
    main(TritonRMSNorm)
