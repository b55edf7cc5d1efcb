"""Optimized (teaching pair): `gqa_decode`'s `enable_gqa=True` call, against the copy."""
from __future__ import annotations

from ch18.optimized_gqa_decode import SdpaEnableGqa

get_benchmark = SdpaEnableGqa

if __name__ == "__main__":
    from core.single import main
    main(SdpaEnableGqa)
