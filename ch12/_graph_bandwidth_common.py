"""Shared by the `graph_bandwidth` pair: the cuda_graphs decode step at 70B-class widths.

One layer at hidden 8192, FFN 28672, batch 4: the step reads ~1.7 GB of bf16 weights through
a few large GEMVs (~0.1-0.3 ms each on an H100), next to ~20 small kernels. The GPU's time per
step is several times the host's time to launch it, so the host runs ahead and the launches
overlap the work. Capturing the step in a graph then removes launches nobody was waiting for.
"""
from ch12._cuda_graphs_common import DecodeBench, DecodeConfig, GraphReplay

WIDE = DecodeConfig(batch=4, hidden=8192, heads=64, ffn=28672, layers=1, cache_len=256)


class WideDecodeBench(DecodeBench):
    config = WIDE


class WideGraphReplay(GraphReplay):
    config = WIDE
