"""Chapter 12 on a CPU: the power-law workload generators, the host-side mirrors of the
kernels' partition logic, the references the GPU sides are checked against, and the eager
decode step the cuda_graphs sides capture.

The .cu files compile in tests/test_cuda_build.py; every pair imports and SKIPs cleanly on a
CPU in tests/test_real_pairs.py. The kernels themselves need a GPU.
"""
from __future__ import annotations

import math

import pytest
import torch

from ch12._atomics_batched_common import zipf_keys
from ch12._cuda_graphs_common import BF16_STEP_TOLERANCE, DecodeConfig, DecodeStack
from ch12._power_law import power_law_counts, power_law_offsets
from core.benchmark import BenchContext
from core.verify import compare

SMALL = DecodeConfig(batch=2, hidden=256, heads=4, ffn=512, layers=2, cache_len=16)


def gen(seed: int) -> torch.Generator:
    return torch.Generator().manual_seed(seed)


# ---------------------------------------------------------------- workload generators

def test_power_law_offsets_cut_the_total_into_heavy_tailed_segments():
    offsets = power_law_offsets(1 << 20, 4096, 1.2, gen(0))
    lengths = offsets.diff()
    assert offsets.dtype == torch.int64 and offsets.shape == (4097,)
    assert offsets[0] == 0 and offsets[-1] == 1 << 20
    assert bool((lengths >= 0).all())
    assert lengths.max() > 50 * lengths.float().median()  # a hub, not a uniform split


def test_power_law_generators_are_deterministic_per_seed():
    assert torch.equal(power_law_offsets(10_000, 100, 1.2, gen(3)), power_law_offsets(10_000, 100, 1.2, gen(3)))
    assert not torch.equal(power_law_offsets(10_000, 100, 1.2, gen(3)), power_law_offsets(10_000, 100, 1.2, gen(4)))
    counts = power_law_counts(1 << 16, 1.5, 16, 2048, gen(5))
    assert torch.equal(counts, power_law_counts(1 << 16, 1.5, 16, 2048, gen(5)))
    assert counts.dtype == torch.int32 and counts.min() >= 16 and counts.max() <= 2048
    # the tail the work_queue baseline suffers from: a warp's worst item is far above the mean
    assert counts.view(-1, 32).max(1).values.float().mean() > 4 * counts.float().mean()


def test_zipf_keys_are_in_range_and_skewed():
    keys = zipf_keys(1 << 20, 4096, 1.0, gen(0))
    assert keys.dtype == torch.int32 and keys.min() >= 0 and keys.max() < 4096
    hottest = torch.bincount(keys.long(), minlength=4096)[0].item() / keys.numel()
    harmonic = sum(1.0 / k for k in range(1, 4097))
    assert hottest == pytest.approx(1.0 / harmonic, rel=0.02)


# ---------------------------------------------------------------- partition logic mirrors

def first_row_of_slice(offsets: list[int], begin: int) -> int:
    """uneven_partition.cu nnz_per_warp's binary search: the last row starting at or before
    `begin` (skipping empty rows)."""
    lo, hi = 0, len(offsets) - 2
    while lo < hi:
        mid = (lo + hi + 1) // 2
        if offsets[mid] <= begin:
            lo = mid
        else:
            hi = mid - 1
    return lo


def nnz_split_row_sums(offsets: list[int], vals: list[float], slice_len: int) -> list[float]:
    """The optimized kernel's walk, one slice at a time (store or add per row part)."""
    rows, nnz = len(offsets) - 1, offsets[-1]
    y = [0.0] * rows  # the launcher's memset
    for begin in range(0, nnz, slice_len):
        end = min(begin + slice_len, nnz)
        r = first_row_of_slice(offsets, begin)
        while r < rows and offsets[r] < end:
            lo, hi = max(offsets[r], begin), min(offsets[r + 1], end)
            if lo < hi:
                part = sum(vals[lo:hi])
                whole = offsets[r] >= begin and offsets[r + 1] <= end
                y[r] = part if whole else y[r] + part
            r += 1
    return y


@pytest.mark.parametrize("seed", range(5))
def test_nnz_split_covers_every_value_once(seed):
    offsets = power_law_offsets(3000, 200, 1.2, gen(seed)).tolist()  # many empty rows too
    vals = torch.randint(0, 100, (3000,), generator=gen(seed)).double().tolist()
    expected = [sum(vals[offsets[r]:offsets[r + 1]]) for r in range(200)]
    for slice_len in (1, 7, 64, 1024, 5000):
        assert nnz_split_row_sums(offsets, vals, slice_len) == expected


def test_binary_search_skips_empty_rows():
    offsets = [0, 0, 0, 5, 5, 9, 9, 9]  # rows 0, 1, 3, 5, 6 are empty
    assert [first_row_of_slice(offsets, b) for b in range(9)] == [2, 2, 2, 2, 2, 4, 4, 4, 4]


def test_flat_kernel_search_finds_each_elements_segment():
    """dynamic_parallelism.cu flat_kernel: the last s with offsets[s] <= i."""
    offsets = power_law_offsets(500, 40, 1.2, gen(1))
    owner = torch.repeat_interleave(torch.arange(40), offsets.diff())
    for i in range(500):
        lo, hi = 0, 39
        while lo < hi:
            mid = (lo + hi + 1) // 2
            lo, hi = (mid, hi) if offsets[mid] <= i else (lo, mid - 1)
        assert lo == owner[i]


# ---------------------------------------------------------------- references

def test_jacobi_reference_solves_the_tridiagonal_system():
    from ch12._graph_conditional_common import DIAG, ConditionalBench

    b = torch.randn(5000, generator=gen(0))
    x = ConditionalBench().reference(b)
    ax = DIAG * x
    ax[1:] -= x[:-1]
    ax[:-1] -= x[1:]
    assert (ax - b.double()).abs().max() < 1e-10


def test_work_queue_reference_matches_fp32_rotations():
    from ch12._work_queue_common import ROT_PER_STEP, WorkQueueBench

    angles = torch.rand(2048, generator=gen(0)) * 2 - 1
    iters = power_law_counts(2048, 1.5, 16, 512, gen(1))
    c, s = torch.cos(angles), torch.sin(angles)
    rotations = torch.stack([c, s], 1)
    a, b = torch.ones(2048), torch.zeros(2048)
    for k in range(int(iters.max()) * ROT_PER_STEP):  # work_queue.cu's loop, in fp32
        live = k < iters * ROT_PER_STEP
        a, b = torch.where(live, a * c - b * s, a), torch.where(live, a * s + b * c, b)
    bench = WorkQueueBench()
    check = compare(bench.reference((rotations, iters)), torch.stack([a, b], 1),
                    bench.reference_tolerance, same_dtype=False)
    assert check.ok, check.message
    # one step fewer anywhere is caught
    short = bench.reference((rotations, (iters - 1).clamp(min=0)))
    assert not compare(bench.reference((rotations, iters)), short.float(), bench.reference_tolerance,
                       same_dtype=False).ok


def test_kernel_fusion_sides_agree_on_cpu():
    from ch12.baseline_kernel_fusion import ItemBetweenOps
    from ch12.optimized_kernel_fusion_device_scale import DeviceScale

    sides = [ItemBetweenOps(), DeviceScale()]
    for side in sides:
        side.ctx = BenchContext(seed=0, device="cpu")
        side.setup(side.ctx)
    x = sides[0].make_inputs(1)
    item, device = (side.run(x) for side in sides)
    assert compare(item, device).ok
    assert compare(sides[0].reference(x), item, same_dtype=False).ok
    assert float(item.abs().max()) == pytest.approx(1.0, abs=1e-2)


# ---------------------------------------------------------------- the decode step

@pytest.fixture(scope="module")
def stack():
    return DecodeStack(SMALL, gen(0), "cpu")


@torch.no_grad()
def test_decode_step_matches_float64_reference(stack):
    x = torch.randn(SMALL.batch, SMALL.hidden, generator=gen(1)).bfloat16()
    out = stack(x)
    assert out.shape == (SMALL.batch, SMALL.hidden) and out.dtype == torch.bfloat16
    ref = stack.step(x.double(), lambda t: t.double())
    check = compare(ref, out, BF16_STEP_TOLERANCE, same_dtype=False)
    assert check.ok, check.message


@torch.no_grad()
def test_decode_step_depends_only_on_this_calls_input(stack):
    """The new token's K/V overwrite the cache's last slot: no state carries over."""
    x1 = torch.randn(SMALL.batch, SMALL.hidden, generator=gen(1)).bfloat16()
    x2 = torch.randn(SMALL.batch, SMALL.hidden, generator=gen(2)).bfloat16()
    first = stack(x1)
    second = stack(x2)
    assert not torch.equal(first, second)
    assert torch.equal(stack(x1), first)


@torch.no_grad()
def test_reference_leaves_the_cache_alone(stack):
    before = stack.k_cache.clone()
    stack.step(torch.randn(SMALL.batch, SMALL.hidden, generator=gen(3)).double(), lambda t: t.double())
    assert torch.equal(stack.k_cache, before)


def test_decode_config_counts_weights():
    cfg = DecodeConfig()
    h, f = cfg.hidden, cfg.ffn
    assert cfg.weight_params() == cfg.layers * (4 * h * h + 3 * h * f + 2 * h) + h
    assert math.isclose(cfg.weight_params() * 2 / 1e6, 411.6, rel_tol=0.01)  # MB of bf16 weights
