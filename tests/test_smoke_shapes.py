"""Pairs that shrink under `bench run --mode smoke` on a GPU (BenchContext.smoke): the smoke
shape is picked only there, and is smaller than the measured one. (Whether those shapes verify
is checked on a GPU by a smoke run; nothing here touches CUDA.)"""
from __future__ import annotations

import importlib
from dataclasses import astuple

import pytest

from core.benchmark import BenchContext

SHRINKING = ["ch01.baseline_performance", "ch05.baseline_dataloader", "ch13.baseline_kv_cache",
             "ch13.baseline_training_standard", "ch13.baseline_memory_profiling",
             "ch20.baseline_multiple_unoptimized", "ch20.baseline_integrated_kv_cache"]
# what holds the shape, where it is not `cfg` (the ch15 serving pairs: tests/test_ch15_serving.py)
SHAPE_ATTRIBUTE = {"ch20.baseline_integrated_kv_cache": "shape"}


def _size(config) -> int:
    total = 1
    for value in astuple(config):
        for number in (value if isinstance(value, tuple) else (value,)):
            if isinstance(number, int):
                total *= max(number, 1)
    return total


@pytest.mark.parametrize("module", SHRINKING)
def test_smoke_shape_only_under_smoke_on_a_gpu(module):
    bench = importlib.import_module(module).get_benchmark()
    shapes = {}
    for device, mode in [("cuda", "full"), ("cuda", "smoke"), ("cpu", "full"), ("cpu", "smoke")]:
        bench.ctx = BenchContext(device=device, mode=mode)
        shapes[device, mode] = getattr(bench, SHAPE_ATTRIBUTE.get(module, "cfg"))
    assert shapes["cuda", "smoke"] != shapes["cuda", "full"]
    assert _size(shapes["cuda", "smoke"]) < _size(shapes["cuda", "full"])
    assert shapes["cpu", "smoke"] == shapes["cpu", "full"]  # CI's shapes are already small
