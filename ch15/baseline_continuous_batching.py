"""Baseline: static batching.

Up to 16 requests (4 on the CPU) form a batch; the batch is prefilled, then decoded together
until its longest request is done. Rows whose request finished early stay idle, and requests
that arrive meanwhile wait in the queue until the whole batch has drained: their time to
first token includes the rest of someone else's batch. This is what `model.generate()` on a
list of prompts does, and what a first serving loop usually looks like.
"""
from ch15._continuous_batching_common import Static

get_benchmark = Static

if __name__ == "__main__":
    from core.single import main
    main(Static)
