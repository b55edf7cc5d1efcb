"""Parse every record at once: `np.frombuffer` with a structured dtype.

The dtype spells out the record layout (field names, types, byte order, no padding), so
`np.frombuffer` turns the whole buffer into an array of records without copying a byte, and
each field is a strided view across all of them. Converting a field to the dtype the model
wants is one vectorized copy; no Python object is made per record or per field. For records
in a file, `np.memmap(path, dtype=RECORD)` gives the same view of the file's pages.
"""
import numpy as np
import torch

from ch05._vectorized_parse_common import RECORD, ParseRecords, features


class StructuredDtype(ParseRecords):
    def run(self, raw: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        records = np.frombuffer(raw.numpy(), dtype=RECORD)  # a view of the bytes: no copy
        return features(torch.from_numpy(records["label"].astype(np.int64)),
                        torch.from_numpy(records["dense"].astype(np.int64)),
                        torch.from_numpy(records["sparse"].astype(np.int64)))


get_benchmark = StructuredDtype

if __name__ == "__main__":
    from core.single import main
    main(StructuredDtype)
