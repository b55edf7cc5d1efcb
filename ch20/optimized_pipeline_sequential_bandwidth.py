"""Optimized, transfer-bound regime: the overlapped schedule on large frames and a small model.

Here the H2D copy sets the pace: expected, the pipeline runs at about the copy's rate, with
preprocess, model, postprocess and the D2H copies hidden under the next batch's transfer
(the table's link column shows how close it comes to the measured pinned H2D ceiling).
"""
from __future__ import annotations

from ch20._overlapped_pipeline import OverlappedPipeline
from ch20._pipeline_sequential_common import TRANSFER_BOUND


class StreamedTransferBound(OverlappedPipeline):
    cuda_config = TRANSFER_BOUND


get_benchmark = StreamedTransferBound

if __name__ == "__main__":
    from core.single import main
    main(StreamedTransferBound)
