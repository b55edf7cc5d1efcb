"""1F1B: after a short warm-up, each stage alternates one forward and one backward.

A micro-batch's activations are freed by its backward soon after its forward, so rank 0
keeps at most p micro-batches' activations on p GPUs (the number of stages: 2 on 2 GPUs)
instead of 8. The bubble is GPipe's, so the time is about the same: the goal is memory, and
the gate judges the peak device memory it saves (8/p: none left on 8 GPUs, where the warm-up
alone holds every micro-batch).
"""
from torch.distributed.pipelining import Schedule1F1B

from ch04._pipeline_common import PipelineStep


class OneForwardOneBackward(PipelineStep):
    goal = "memory"

    def schedule_class(self):
        return Schedule1F1B


get_benchmark = OneForwardOneBackward

if __name__ == "__main__":
    from core.single import main
    main(OneForwardOneBackward)
