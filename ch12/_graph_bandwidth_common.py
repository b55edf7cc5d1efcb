"""Shared by the `graph_bandwidth` pair: the cuda_graphs decode step at 70B-class widths.

One layer at hidden 8192, FFN 28672, batch 4: the step reads ~1.7 GB of bf16 weights through
a few large GEMVs (~0.1-0.3 ms each on an H100), next to ~20 small kernels. The GPU's time per
step is several times the host's time to launch it, so the host runs ahead and the launches
overlap the work. Capturing the step in a graph then removes launches nobody was waiting for.
"""
from ch12._cuda_graphs_common import BF16_STEP_TOLERANCE, DecodeBench, DecodeConfig, GraphReplay

WIDE = DecodeConfig(batch=4, hidden=8192, heads=64, ffn=28672, layers=1, cache_len=256)


class WideDecodeBench(DecodeBench):
    config = WIDE
    # At batch 4 these GEMVs reduce over K = 8192 and 28672: cuBLAS splits K, and on an H100
    # the same side's output moved by 2 bf16 ulps (-2.047 vs -2.078) between two calls on the
    # same inputs, replayed or eager. The default bf16 tolerance (1e-2) failed it on its own.
    tolerance = BF16_STEP_TOLERANCE


class WideGraphReplay(GraphReplay):
    config = WIDE
    tolerance = BF16_STEP_TOLERANCE
