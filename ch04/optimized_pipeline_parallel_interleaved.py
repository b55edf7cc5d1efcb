"""Interleaved 1F1B: each rank r of p holds two non-adjacent stages, r and r + p (on 2 GPUs
blocks 0-1 and 4-5 on rank 0, 2-3 and 6-7 on rank 1), so a micro-batch visits each GPU twice.

With v stages per rank the idle fill and drain shrink to 1/v of GPipe's; the price is v times
as many stage-to-stage transfers and more, smaller steps for the host to schedule.
"""
from torch.distributed.pipelining import ScheduleInterleaved1F1B

from ch04._pipeline_common import PipelineStep


class Interleaved(PipelineStep):
    virtual_stages = 2
    negative_result = ("at 2 GPUs and 8 micro-batches GPipe's and 1F1B's bubble is already only "
                       "1/9 of the step; interleaving halves it but doubles the stage-to-stage "
                       "transfers and the schedule's host work: 0.96x at 8 x 4096 tokens, 0.75x "
                       "at 16 x 1024 (host-bound) on 2xH200 (ch04/README.md)")

    def schedule_class(self):
        return ScheduleInterleaved1F1B


get_benchmark = Interleaved

if __name__ == "__main__":
    from core.single import main
    main(Interleaved)
