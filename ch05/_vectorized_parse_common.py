"""Shared by `vectorized_parse`: a batch of binary click-log records parsed into tensors.

The records have the layout of the Criteo click logs that DLRM-style recommenders train on,
packed with no padding, 157 bytes each, little-endian:

    label   uint8       1 if the ad was clicked
    dense   int32 × 13  counts (-1 where the value is missing)
    sparse  uint32 × 26 categorical features, already hashed to 32-bit ids

make_inputs(seed) gives the raw bytes of RECORDS records as a uint8 tensor, as they arrive
from a file or a socket. run() returns what the model consumes:

    label   float32 [N]
    dense   float32 [N, 13]  log(1 + max(count, 0)), the usual transform of the counts
    sparse  int64   [N, 26]  each id modulo its embedding table's rows (the hashing trick)

Both sides share `features()` (the transform, vectorized in torch). They differ only in how
the bytes become integer arrays: one Python tuple per record, or one NumPy view of all of
them. Everything runs on the host (a CPU-only machine runs the pair too).
"""
from __future__ import annotations

import struct

import numpy as np
import torch

from core.benchmark import Benchmark, Workload

DENSE, SPARSE = 13, 26
RECORD = np.dtype([("label", "u1"), ("dense", "<i4", (DENSE,)), ("sparse", "<u4", (SPARSE,))])
RECORD_FORMAT = struct.Struct(f"<B{DENSE}i{SPARSE}I")  # the same layout, for struct
assert RECORD.itemsize == RECORD_FORMAT.size == 157
RECORDS = 16384  # one training batch of a DLRM-style recommender
TABLE_ROWS = 1 << 20  # rows of each categorical feature's embedding table


def features(label: torch.Tensor, dense: torch.Tensor,
             sparse: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """Integer fields (any integer dtype) → the model's inputs."""
    return (label.to(torch.float32),
            torch.log1p(dense.clamp_min(0).to(torch.float32)),
            sparse.to(torch.int64) % TABLE_ROWS)


class ParseRecords(Benchmark):
    supports_cpu = True
    cpu_bound = "parsing runs on the host, in Python or NumPy"

    def make_inputs(self, seed: int) -> torch.Tensor:
        """The raw bytes of RECORDS records (a 1-D uint8 tensor on the host)."""
        rng = np.random.default_rng(seed)
        records = np.zeros(RECORDS, dtype=RECORD)
        records["label"] = rng.random(RECORDS) < 0.03  # click-through rates are a few percent
        counts = rng.geometric(0.02, size=(RECORDS, DENSE)) - 1  # heavy-tailed counts
        counts[rng.random((RECORDS, DENSE)) < 0.2] = -1  # a fifth of the values are missing
        records["dense"] = counts
        records["sparse"] = rng.integers(0, 2**32, size=(RECORDS, SPARSE), dtype=np.uint32)
        return torch.from_numpy(records.view(np.uint8).copy())

    def workload(self) -> Workload:
        return Workload(units=RECORDS, unit_name="records")
