"""Optimized (teaching pair): `mla_decode`'s absorbed step, against per-step decompression."""
from __future__ import annotations

from ch18.optimized_mla_decode import AbsorbedMla

get_benchmark = AbsorbedMla

if __name__ == "__main__":
    from core.single import main
    main(AbsorbedMla)
