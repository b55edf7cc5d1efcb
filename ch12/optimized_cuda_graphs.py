"""Optimized: the same step captured once as a CUDA graph and replayed.

setup() captures the ~100 launches into one graph with static input and output buffers.
run() copies the call's input into the static buffer and replays: one launch for the whole
step, so the GPU runs kernel after kernel with no host in between. The cost that remains is
the input copy, the graph launch, and the copy of the static output returned.
"""
from ch12._cuda_graphs_common import GraphReplay

get_benchmark = GraphReplay

if __name__ == "__main__":
    from core.single import main
    main(GraphReplay)
