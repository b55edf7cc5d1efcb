"""Parse records one at a time: `struct.iter_unpack`, then one NumPy array from the tuples.

A careful first version in pure Python (tagged teaching: NumPy's structured-dtype parse is
the library call): the record layout written once as a struct format, `iter_unpack` walking the buffer without slicing it, and NumPy building a single
int64 array of all the fields. No per-byte loop, no per-field slicing. Still, every record
becomes a Python tuple of 40 int objects that NumPy then converts back one by one:
interpreter work per field, on 16,384 records per batch.
"""
import numpy as np
import torch

from ch05._vectorized_parse_common import DENSE, RECORD_FORMAT, ParseRecords, features


class StructUnpack(ParseRecords):
    # NumPy's own parse of the layout (np.frombuffer with a structured dtype) is the library
    # call an engineer could use; the per-record tuples are the lesson (an audit, 2026-11-28)
    teaching = True
    # measured on an H200 (2026-11-28): 20.7 s for the pair, 17 of them timing
    slow_because = ("the per-record Python parse takes ~75 ms a call and the host's spread "
                    "keeps the timer going to its cap")

    def run(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        rows = np.array(list(RECORD_FORMAT.iter_unpack(raw.numpy())), dtype=np.int64)
        label, dense, sparse = rows[:, 0], rows[:, 1:1 + DENSE], rows[:, 1 + DENSE:]
        return features(torch.from_numpy(label), torch.from_numpy(dense), torch.from_numpy(sparse))


get_benchmark = StructUnpack

if __name__ == "__main__":
    from core.single import main
    main(StructUnpack)
