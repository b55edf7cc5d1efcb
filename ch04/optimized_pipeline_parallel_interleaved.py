"""Interleaved 1F1B: each rank holds two non-adjacent stages (blocks 0-1 and 4-5 on rank 0,
2-3 and 6-7 on rank 1), so a micro-batch visits each GPU twice.

With v stages per rank the idle fill and drain shrink to 1/v of GPipe's; the price is v times
as many stage-to-stage transfers and more, smaller steps for the host to schedule.
"""
from torch.distributed.pipelining import ScheduleInterleaved1F1B

from ch04._pipeline_common import PipelineStep


class Interleaved(PipelineStep):
    virtual_stages = 2

    def schedule_class(self):
        return ScheduleInterleaved1F1B


get_benchmark = Interleaved

if __name__ == "__main__":
    Interleaved.main()
