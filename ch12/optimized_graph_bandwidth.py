"""Optimized (expected ≈1x): the wide decode step captured as a CUDA graph and replayed.

Same capture as optimized_cuda_graphs.py. Here the GPU, not the host, is the bottleneck:
the step streams its weights from HBM for far longer than the host needs to launch it, so
there is no launch gap for the graph to remove.
"""
from ch12._graph_bandwidth_common import WideGraphReplay


class WideStepGraph(WideGraphReplay):
    negative_result = ("the control pair: a step bound by HBM, not by launches, has no launch "
                       "gap for a graph to remove (expected and measured ≈1x)")


get_benchmark = WideStepGraph

if __name__ == "__main__":
    from core.single import main
    main(WideStepGraph)
