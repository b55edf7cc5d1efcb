"""Optimized: disaggregated prefill and decode, GPU 0 prefills, GPU 1 decodes.

GPU 0 prefills one prompt at a time (admitted when a decode row is free) and copies its
K/V, layer by layer and only the prompt's positions, into that row's cache slot on GPU 1
(peer to peer over NVLink, queued behind the prefill; GPU 1 waits for it only in the step
that first reads it). GPU 1 decodes two groups of 16 rows, the baseline's 32 rows at the
same width, queued one after the other, so a decode step never waits for a prompt. The one
thread that drives both GPUs queues the next prefill and both groups' steps before reading
any tokens back. DistServe and Splitwise; NVIDIA Dynamo, vLLM's disaggregated prefill and
SGLang's PD disaggregation run this at scale. Goal: goodput.
"""
from ch15._disaggregated_inference_common import Disaggregated

get_benchmark = Disaggregated

if __name__ == "__main__":
    from core.single import main
    main(Disaggregated)
