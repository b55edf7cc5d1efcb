"""Chapter 11 on a CPU: the pieces of the stream pairs that do not need a GPU.

The chunk planner of `streams`, the stage model and plan chooser of `adaptive_streams`, the
decode step of `stream_ordered_kv_cache` against its float64 reference and a naive loop, and
the requirements that make every ch11 pair a clean SKIP here. The pairs' imports and contract
are covered by tests/test_real_pairs.py; their timing and overlap need a GPU.
"""
from __future__ import annotations

import importlib
import math

import pytest
import torch

from ch11._adaptive_streams_common import Phase, choose_plan, predicted_ms
from ch11._stream_ordered_kv_cache_common import decode_step, reference_step
from ch11._streams_common import chunk_bounds
from core.discovery import discover_chapter
from core import REPO_ROOT
from core.pairfile import unmet_requirement

CH11 = REPO_ROOT / "ch11"


# ---------------------------------------------------------------- streams: the chunk planner

@pytest.mark.parametrize("rows, chunks", [(32768, 8), (10, 3), (7, 7), (5, 9), (1, 1), (1000, 16)])
def test_chunks_cover_every_row_once_in_order(rows, chunks):
    bounds = chunk_bounds(rows, chunks)
    assert bounds[0][0] == 0 and bounds[-1][1] == rows
    assert all(a[1] == b[0] for a, b in zip(bounds, bounds[1:]))  # contiguous, no overlap
    sizes = [stop - start for start, stop in bounds]
    assert min(sizes) >= 1 and max(sizes) - min(sizes) <= 1  # near-equal, none empty
    assert len(bounds) == min(rows, chunks)


def test_chunk_planner_rejects_nonsense():
    with pytest.raises(ValueError):
        chunk_bounds(0, 4)
    with pytest.raises(ValueError):
        chunk_bounds(16, 0)


# ---------------------------------------------------------------- adaptive_streams: model and chooser

def test_phase_fit_recovers_a_line():
    phase = Phase.fit(full_ms=2.0 + 0.01, part_ms=2.0 / 8 + 0.01, fraction=1 / 8)
    assert phase.fixed_ms == pytest.approx(0.01) and phase.whole_ms == pytest.approx(2.0)
    assert phase.chunk_ms(4) == pytest.approx(0.51)
    # noise that puts the part above its share of nothing-fixed is clamped, never negative
    noisy = Phase.fit(full_ms=1.0, part_ms=1.5, fraction=0.5)
    assert noisy.whole_ms == 0.0 and noisy.fixed_ms == pytest.approx(1.0)
    with pytest.raises(ValueError):
        Phase.fit(1.0, 0.5, 1.0)


def test_one_stream_is_the_sum_and_streams_approach_the_slowest_stage():
    copy, compute = Phase(0.0, 3.0), Phase(0.0, 3.0)
    assert predicted_ms(copy, compute, copy, 1, 1) == pytest.approx(9.0)
    assert predicted_ms(copy, compute, copy, 8, 1) == pytest.approx(9.0)  # chunks alone buy nothing
    # 3 balanced stages, 8 chunks on 3 streams: (3 + 7) chunk-stages of 3/8 ms
    assert predicted_ms(copy, compute, copy, 8, 3) == pytest.approx(10 * 3 / 8)
    # 2 streams cannot keep 3 stages busy: each stream runs its 4 chunks' stages in turn
    assert predicted_ms(copy, compute, copy, 8, 2) == pytest.approx(4 * 9 / 8)


def test_chooser_pipelines_a_large_balanced_job():
    copy, compute = Phase(0.01, 2.5), Phase(0.01, 2.7)
    chunks, streams = choose_plan(copy, compute, copy, rows=32768)
    assert chunks >= 8 and streams >= 3
    assert predicted_ms(copy, compute, copy, chunks, streams) < predicted_ms(copy, compute, copy, 4, 2)


def test_chooser_keeps_a_tiny_job_whole():
    # fixed costs dominate: every extra chunk costs more than the overlap saves
    copy, compute = Phase(0.010, 0.004), Phase(0.008, 0.004)
    assert choose_plan(copy, compute, copy, rows=1024) == (1, 1)


def test_chooser_never_splits_below_one_row_and_prefers_fewer_chunks_on_ties():
    nothing = Phase(0.0, 0.0)
    assert choose_plan(nothing, nothing, nothing, rows=1000) == (1, 1)  # all plans tie at 0
    chunks, _ = choose_plan(Phase(0.0, 1.0), Phase(0.0, 1.0), Phase(0.0, 1.0), rows=3)
    assert chunks <= 3


# ---------------------------------------------------------------- stream_ordered_kv_cache: the step

def _naive_attention(q, keys, values):
    """Per head, per key: the textbook loop."""
    heads, dim = q.shape[0], q.shape[-1]
    out = torch.zeros(heads, 1, dim, dtype=torch.float64)
    for h in range(heads):
        scores = [float(q[h, 0].double() @ keys[h, t].double()) / math.sqrt(dim)
                  for t in range(keys.shape[1])]
        top = max(scores)
        weights = [math.exp(s - top) for s in scores]
        total = sum(weights)
        for t, w in enumerate(weights):
            out[h, 0] += w / total * values[h, t].double()
    return out


def test_reference_step_matches_a_naive_loop():
    gen = torch.Generator().manual_seed(0)
    heads, length, dim = 3, 9, 8
    q, k_new, v_new = (torch.randn(heads, 1, dim, generator=gen) for _ in range(3))
    k_prefix, v_prefix = (torch.randn(heads, length, dim, generator=gen) for _ in range(2))
    expected = _naive_attention(q, torch.cat([k_prefix, k_new], 1), torch.cat([v_prefix, v_new], 1))
    assert torch.allclose(reference_step(q, k_new, v_new, k_prefix, v_prefix), expected, atol=1e-12)


def test_decode_step_appends_and_attends_like_the_reference():
    gen = torch.Generator().manual_seed(1)
    heads, capacity, dim, length = 4, 32, 16, 20
    k_cache, v_cache = (torch.randn(heads, capacity, dim, generator=gen) for _ in range(2))
    k_before, v_before = k_cache.clone(), v_cache.clone()
    q, k_new, v_new = (torch.randn(heads, 1, dim, generator=gen) for _ in range(3))
    out = decode_step(q, k_new, v_new, k_cache, v_cache, length)
    expected = reference_step(q, k_new, v_new, k_before[:, :length], v_before[:, :length])
    assert out.shape == (heads, 1, dim)
    assert torch.allclose(out.double(), expected, atol=1e-5)
    # the new token sits at `length`; nothing else in the cache moved
    assert torch.equal(k_cache[:, length:length + 1], k_new) and torch.equal(v_cache[:, length:length + 1], v_new)
    untouched = [i for i in range(capacity) if i != length]
    assert torch.equal(k_cache[:, untouched], k_before[:, untouched])
    # a different new key changes the answer: the step attends over the appended token
    other = decode_step(q, k_new + 1.0, v_new, k_cache, v_cache, length)
    assert not torch.allclose(other, out)


# ---------------------------------------------------------------- the chapter's pairs on a CPU

def _benches():
    chapter = discover_chapter(CH11)
    for pair in chapter.pairs:
        for path in (pair.baseline, *(e.optimized for e in pair.examples)):
            yield path, importlib.import_module(f"ch11.{path.stem}").get_benchmark()


def test_every_ch11_pair_is_a_clean_skip_on_a_cpu_with_the_reason():
    seen = 0
    for path, bench in _benches():
        why = unmet_requirement(bench, "cpu")
        assert why is not None and why.startswith("needs a CUDA GPU"), (path.name, why)
        seen += 1
    assert seen >= 17  # 8 stems, a baseline and an optimized side each, and the prealloc variant


def test_stream_ordered_is_teaching_with_a_preallocated_floor():
    from ch11.baseline_stream_ordered import get_benchmark as malloc
    from ch11.optimized_stream_ordered_prealloc import get_benchmark as prealloc
    from core.declarations import Declarations

    # the synchronizing allocator is the book's naive example: kept out of the headlines
    assert malloc().teaching
    # the preallocated side is a variant of stream_ordered, not of stream_ordered_kv_cache
    pairs = {p.stem: p for p in discover_chapter(CH11).pairs}
    assert "prealloc" in {e.variant for e in pairs["stream_ordered"].examples}
    assert not any(e.variant for e in pairs["stream_ordered_kv_cache"].examples)
    assert Declarations.of(malloc(), prealloc()).teaching
    # same kernels, same order of summation: every side is exact against the baseline
    assert prealloc().tolerance == malloc().tolerance and malloc().tolerance.rtol == 0.0


def test_stream_ordered_launchers_exist_in_the_source():
    source = (CH11 / "stream_ordered.cu").read_text()
    for name in ("launch_tasks_malloc", "launch_tasks_pool", "launch_tasks_prealloc"):
        assert f'extern "C" AISP_API int {name}(' in source


def test_pdl_needs_hopper_and_nvcc_and_two_gpu_pair_needs_two():
    from ch11.baseline_distributed_streams import get_benchmark as distributed
    from ch11.optimized_pdl import get_benchmark as pdl

    assert pdl().requires.min_compute_capability == (9, 0) and pdl().requires.nvcc
    assert distributed().requires.gpus == 2 and distributed().requires.scales  # 2 or more
