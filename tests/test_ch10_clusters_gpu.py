"""GPU-only (sm_90): the cluster kernels of ch10 read the W of *this* launch.

The harness's verification cannot see a CTA that computes before its share of W has landed:
every call of a pair loads the same W, and shared memory keeps what the previous kernel on that
SM left there, so a stale tile holds the right values by accident. Here W changes between
launches; a CTA that reads shared memory before its (multicast or DSMEM) copy completes would
compute with the previous launch's W and miss the reference by the size of the change."""
from __future__ import annotations

from pathlib import Path

import pytest
import torch

from core.benchmark import BenchContext
from core.pairfile import load_benchmark

CH10 = Path(__file__).resolve().parent.parent / "ch10"
pytestmark = pytest.mark.skipif(not torch.cuda.is_available()
                                or torch.cuda.get_device_capability() < (9, 0),
                                reason="needs a GPU with thread-block clusters (sm_90)")


@pytest.mark.parametrize("side", ["baseline_cluster_dsmem", "optimized_cluster_dsmem",
                                  "optimized_cluster_dsmem_x4", "baseline_cluster_multicast",
                                  "optimized_cluster_multicast", "optimized_cluster_multicast_x4"])
def test_each_launch_uses_its_own_weights(side):
    bench = load_benchmark(CH10 / f"{side}.py")
    bench.ctx = BenchContext(seed=0, device="cuda")
    bench.setup(bench.ctx)
    x = bench.make_inputs(1)
    tol = bench.reference_tolerance
    gen = torch.Generator(device="cuda").manual_seed(7)
    for launch in range(12):
        # a new W every launch, all positive on even launches and all negative on odd ones:
        # every element of a stale tile has the wrong sign
        new = torch.randn(bench.w.shape, generator=gen, device="cuda").abs() / bench.w.shape[0] ** 0.5
        bench.w.copy_(new if launch % 2 == 0 else -new)
        y = bench.run(x).clone()
        torch.cuda.synchronize()
        expected = bench.reference(x)
        assert torch.allclose(y.double(), expected, rtol=tol.rtol, atol=tol.atol), (
            f"{side}, launch {launch}: max error {(y.double() - expected).abs().max().item():.3g}")
