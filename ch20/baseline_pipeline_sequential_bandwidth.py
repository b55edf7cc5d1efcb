"""Baseline, transfer-bound regime: the sequential pipeline on large frames and a small model.

The same loop as baseline_pipeline_sequential.py, on 32 frames of 512x512 per batch (25 MB)
and a one-block model with 32x32 patches: the host-to-device copy is most of each batch's
time, and the SMs idle through it.
"""
from __future__ import annotations

from ch20._pipeline_sequential_common import TRANSFER_BOUND
from ch20.baseline_pipeline_sequential import SequentialPipeline


class SequentialTransferBound(SequentialPipeline):
    cuda_config = TRANSFER_BOUND


get_benchmark = SequentialTransferBound

if __name__ == "__main__":
    from core.single import main
    main(SequentialTransferBound)
