"""Optimized: iteration-level continuous batching (slot refill).

At every step finished sequences leave the batch and free their slot; queued requests are
prefilled into the free slots and join the very next decode step. No request waits for
another request's batch, and no decode row idles while work is queued. vLLM, SGLang and
TensorRT-LLM (in-flight batching) schedule this way. Goal: goodput, requests per second
that meet the SLO on the published Poisson trace.
"""
from ch15._continuous_batching_common import Continuous

get_benchmark = Continuous

if __name__ == "__main__":
    from core.single import main
    main(Continuous)
