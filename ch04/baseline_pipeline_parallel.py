"""GPipe: every micro-batch's forward, then every backward (fill, then drain).

Simple, and the bubble is the same as 1F1B's, but each stage keeps the activations of all 8
micro-batches alive until its backward passes begin.
"""
from torch.distributed.pipelining import ScheduleGPipe

from ch04._pipeline_common import PipelineStep


class GPipe(PipelineStep):
    def schedule_class(self):
        return ScheduleGPipe


get_benchmark = GPipe

if __name__ == "__main__":
    from core.single import main
    main(GPipe)
