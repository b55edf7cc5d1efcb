"""Optimized (teaching pair): `gqa_decode`'s `enable_gqa=True` call, against the copy.

Against `repeat_kv` it is a gain, not a tie, so the parity declaration is dropped here.
"""
from __future__ import annotations

from ch18.optimized_gqa_decode import SdpaEnableGqa


class SdpaEnableGqaNoCopy(SdpaEnableGqa):
    negative_result = ""


get_benchmark = SdpaEnableGqaNoCopy

if __name__ == "__main__":
    from core.single import main
    main(SdpaEnableGqaNoCopy)
