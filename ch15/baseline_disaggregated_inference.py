"""Baseline: two monolithic replicas, one per GPU, each prefilling and decoding.

Each GPU holds a copy of the model and runs a continuous-batching engine of 16 decode rows
(3 on the CPU): every iteration prefills the requests admitted into its free rows, then runs
one decode step that includes them. A dispatcher sends each arriving request to the replica
holding fewer requests. The prompts (512-2048 tokens) are queued on the same GPU ahead of
that replica's next decode step, so every request running there waits for them: prefill
interference shows in the time per output token. One thread drives both GPUs: it queues an
iteration on each replica before reading either one's tokens back, so the replicas overlap.
"""
from ch15._disaggregated_inference_common import Monolithic

get_benchmark = Monolithic

if __name__ == "__main__":
    from core.single import main
    main(Monolithic)
