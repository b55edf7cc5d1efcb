"""DistributedDataParallel: one process per GPU, each with its own model and optimizer.

No per-step model copy and no Python threads: each rank trains on its share of the batch, and
the gradients are averaged by NCCL all-reduces overlapped with backward (ddp_overlap's
optimized side, 25 MB buckets).
"""
from ch04.optimized_ddp_overlap import OverlappedDdp

get_benchmark = OverlappedDdp

if __name__ == "__main__":
    from core.single import main
    main(OverlappedDdp)
