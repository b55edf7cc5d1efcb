"""Chapter 20 on the CPU: the training job's flaws and fixes compute the same step, its
verification outputs catch a wrong step, the packed loader, the overlapped inference
pipeline against the sequential one and a one-shot reference, the int8 paged KV cache
against what was written, the decode loop against the decoder's no-cache forward, and every
ch20 pair through the harness."""
from __future__ import annotations

import json
import math

import pytest
import torch
import torch.nn.functional as F

from ch15.decoder import TINY, Decoder
from ch20 import _integrated_kv_cache_common as kvc
from ch20 import _multiple_unoptimized_common as train
from ch20._pipeline_sequential_common import TOP_K
from core.benchmark import BenchContext
from core.verify import compare

CPU = BenchContext(seed=0, device="cpu")


def ready(cls, seed: int = 0):
    bench = cls()
    bench.ctx = BenchContext(seed=seed, device="cpu")
    bench.setup(bench.ctx)
    return bench


# --- multiple_unoptimized ------------------------------------------------------------------
def test_unfused_elementwise_ops_equal_the_library_kernels():
    x = torch.randn(4, 7, 64, generator=torch.Generator().manual_seed(0)) * 3
    w = torch.rand(64, generator=torch.Generator().manual_seed(1)) + 0.5
    torch.testing.assert_close(train.rms_norm_unfused(x, w), F.rms_norm(x, (64,), w, eps=1e-5),
                               rtol=1e-5, atol=1e-6)
    torch.testing.assert_close(train.gelu_tanh_unfused(x), F.gelu(x, approximate="tanh"),
                               rtol=1e-5, atol=1e-6)


def test_corpus_packs_documents_with_separators_and_wraps():
    cfg = train.CPU_CONFIG
    corpus = train.PackedCorpus(cfg, seed=3)
    again = train.PackedCorpus(cfg, seed=3)
    assert torch.equal(corpus[5], again[5])  # the same corpus on every side
    lengths = corpus.starts[1:] - corpus.starts[:-1]
    for doc in (0, 17, cfg.documents - 1):  # the last one wraps to document 0
        sample = corpus[doc].numpy()
        assert sample.shape == (cfg.seq + 1,)
        expected, d = [], doc
        while len(expected) < cfg.seq + 1:
            d %= cfg.documents
            expected += corpus.tokens[corpus.starts[d]:corpus.starts[d + 1]].tolist() + [train.EOS]
            d += 1
        assert sample.tolist() == expected[:cfg.seq + 1]
        first = min(int(lengths[doc]), cfg.seq + 1)
        assert (sample[:first] != train.EOS).all()  # documents hold no EOS of their own


# the cumulative stages, in order: each the one before plus one fix; the last is the full file
TRAINING_SIDES = {
    "s1_bf16": ("optimized_multiple_unoptimized_s1_bf16", "Stage1Bf16"),
    "s2_fused_ops": ("optimized_multiple_unoptimized_s2_fused_ops", "Stage2FusedOps"),
    "s3_fused_optimizer": ("optimized_multiple_unoptimized_s3_fused_optimizer", "Stage3FusedOptimizer"),
    "s4_no_sync_logging": ("optimized_multiple_unoptimized_s4_no_sync_logging", "Stage4NoSyncLogging"),
    "all": ("optimized_multiple_unoptimized", "AllFixed"),
}
FIX_FLAGS = ("loader_workers", "amp", "fused_optimizer", "fused_ops", "sync_logging")


def _side(name: str):
    import importlib

    module, cls = TRAINING_SIDES[name]
    return getattr(importlib.import_module(f"ch20.{module}"), cls)


@pytest.fixture(scope="module")
def baseline_training():
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    bench = ready(UnoptimizedJob)
    plan = bench.make_inputs(11)
    yield bench, plan, bench.run(plan)
    bench.teardown()


@pytest.mark.parametrize("name", list(TRAINING_SIDES))
def test_each_stage_computes_the_baselines_steps(baseline_training, name):
    _, plan, expected = baseline_training
    side = ready(_side(name))
    try:
        got = side.run(plan)
    finally:
        side.teardown()
    assert compare(expected, got, side.tolerance).ok
    assert side.tolerance == train.BF16_TOLERANCE  # every stage from s1 on runs bf16
    # the precision change is real, and within what it declares
    assert not torch.equal(expected[0], got[0])
    assert not compare(expected, got, train.FP32_TOLERANCE).ok


def _fixed(cls) -> set[str]:
    """The fixes a class applies: the flags that differ from the baseline's."""
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    return {f for f in FIX_FLAGS if getattr(cls, f) != getattr(UnoptimizedJob, f)}


def test_stages_are_cumulative_one_fix_each_and_end_at_the_full_variant():
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    stages = [_side(name) for name in TRAINING_SIDES]
    assert _fixed(UnoptimizedJob) == set()
    previous = UnoptimizedJob
    for stage in stages:
        # built on the stage before (stage 1 on the job class, whose defaults are the baseline)
        assert stage.__bases__ == ((train.TrainingJob,) if previous is UnoptimizedJob else (previous,))
        added = _fixed(stage) - _fixed(previous)
        assert _fixed(stage) >= _fixed(previous) and len(added) == 1, (stage.__name__, added)
        # the flags the stage did not add keep the previous stage's values
        assert all(getattr(stage, f) == getattr(previous, f) for f in FIX_FLAGS if f not in added)
        previous = stage
    assert [(_fixed(b) - _fixed(a)).pop() for a, b in zip([UnoptimizedJob, *stages], stages)] == [
        "amp", "fused_ops", "fused_optimizer", "sync_logging", "loader_workers"]
    assert stages[-1] is _side("all") and _fixed(stages[-1]) == set(FIX_FLAGS)  # the last is the whole


def test_baseline_uses_torchs_default_adamw_and_stage3_the_fused_one():
    """The optimizer flaw is the one a first script has: AdamW as torch builds it by default
    (foreach on a GPU), not a per-parameter loop nobody picks."""
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    for cls in (UnoptimizedJob, _side("s2_fused_ops")):
        bench = ready(cls)
        defaults = bench.optimizer.defaults
        bench.teardown()
        assert defaults["foreach"] is None and not defaults["fused"], cls.__name__
    stage3 = ready(_side("s3_fused_optimizer"))
    stage3.teardown()
    assert stage3.optimizer.defaults["fused"] is True


def test_stage_gains_multiply_to_the_last_speedup():
    from ch20.stage_table import stage_gains

    speedups = [2.5, 2.9, 3.1, 3.8, 4.2]  # cumulative, made up
    gains = stage_gains(speedups)
    assert len(gains) == len(speedups)
    assert gains[0] == pytest.approx(speedups[0])  # stage 1 against the baseline
    assert gains[2] == pytest.approx(3.1 / 2.9)
    assert math.prod(gains) == pytest.approx(speedups[-1])
    assert stage_gains([0.9]) == [0.9]
    with pytest.raises(ValueError):
        stage_gains([])
    for bad in (0.0, -1.0, math.inf, math.nan):
        with pytest.raises(ValueError):
            stage_gains([2.0, bad])


def test_training_outputs_catch_a_skipped_update_and_other_data(baseline_training):
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    _, plan, expected = baseline_training

    class NoUpdate(UnoptimizedJob):
        def train_step(self, inputs, targets):
            self.optimizer.zero_grad(set_to_none=True)
            losses = self.model(inputs, targets)
            losses.mean().backward()
            return losses.detach()  # forgets optimizer.step()

    frozen = ready(NoUpdate).run(plan)
    assert not compare(expected, frozen, train.BF16_TOLERANCE).ok
    assert frozen[-1].abs().max() == 0  # moved nothing
    # one step moves each weight by ~lr per element; three accumulate to well above one lr
    assert (expected[-1] > 1.0).all()
    other = ready(UnoptimizedJob).run(ready(UnoptimizedJob).make_inputs(12))
    assert not compare(expected, other, train.BF16_TOLERANCE).ok


def test_device_side_logging_reads_the_mean_of_every_twenty_steps():
    from ch20.baseline_multiple_unoptimized import UnoptimizedJob

    class DeviceSideLogging(UnoptimizedJob):  # the logging fix alone: same fp32 arithmetic
        sync_logging = False

    synced, lazy = ready(UnoptimizedJob), ready(DeviceSideLogging)
    calls = -(-train.LOG_EVERY // train.CPU_CONFIG.steps)
    for seed in range(calls):
        plan = synced.make_inputs(seed)
        synced.run(plan)
        lazy.run(plan)
    assert len(synced.logged) == calls * train.CPU_CONFIG.steps
    assert len(lazy.logged) == 1  # one read in LOG_EVERY steps
    assert lazy.logged[0] == pytest.approx(sum(synced.logged[:train.LOG_EVERY]) / train.LOG_EVERY, rel=1e-5)


# --- pipeline_sequential --------------------------------------------------------------------
@pytest.mark.parametrize("stem", ["pipeline_sequential", "pipeline_sequential_bandwidth"])
def test_overlapped_pipeline_equals_sequential_and_a_one_shot_reference(stem):
    import importlib

    base = importlib.import_module(f"ch20.baseline_{stem}").get_benchmark()
    opt = importlib.import_module(f"ch20.optimized_{stem}").get_benchmark()
    for side in (base, opt):
        side.ctx = CPU
        side.setup(CPU)
    frames = base.make_inputs(4)
    assert frames.dtype == torch.uint8 and frames.shape[0] == base.cfg.batches
    probs, ids = base.run(frames)
    got = opt.run(frames)
    assert torch.equal(got[0], probs) and torch.equal(got[1], ids)
    # all frames at once through the model: the per-batch loops split nothing they shouldn't
    everything = frames.flatten(0, 1)
    images = (everything.float() - base.mean) / base.std
    with torch.no_grad():
        ref = base.model(images).softmax(-1).topk(TOP_K, dim=-1)
    torch.testing.assert_close(probs, ref.values, rtol=1e-5, atol=1e-6)
    assert torch.equal(ids, ref.indices)
    assert probs.shape == (everything.shape[0], TOP_K) and (probs[:, :-1] >= probs[:, 1:]).all()
    # the optimized side's results are fresh each call, not the previous call's buffers
    again = opt.run(base.make_inputs(5))
    assert not torch.equal(again[0], got[0]) and got[0].data_ptr() != again[0].data_ptr()


def test_pipeline_regimes_are_compute_and_transfer_bound():
    from ch20._pipeline_sequential_common import COMPUTE_BOUND, TRANSFER_BOUND

    def flop_per_byte(c):
        return c.flops_per_frame() / c.frame_bytes

    # H100: ~700 TFLOP/s bf16 against ~55 GB/s pinned H2D: the balance is ~13k FLOP per byte
    assert flop_per_byte(COMPUTE_BOUND) > 5 * 13_000
    assert flop_per_byte(TRANSFER_BOUND) < 13_000 / 5


# --- integrated_kv_cache --------------------------------------------------------------------
def test_int8_quantization_errs_by_at_most_half_a_step():
    x = torch.randn(3, 5, 2, 16, generator=torch.Generator().manual_seed(0)) * 4
    q, scale = kvc.quantize_int8(x)
    assert q.dtype == torch.int8 and scale.shape == x.shape[:-1]
    assert (q.float().abs().amax(-1) == 127).all()  # each row uses the full range
    err = (q.float() * scale[..., None] - x).abs()
    assert (err <= scale[..., None] / 2 + 1e-6).all()


def test_int8_paged_kv_reads_back_what_was_written_through_scattered_blocks():
    cfg = TINY
    kv = kvc.Int8PagedKV(cfg, num_blocks=20, max_seqs=3, block_size=4)
    slots = [kv.allocate(4) for _ in range(3)]
    for s in slots:  # grow round-robin: each sequence's blocks interleave with the others'
        kv.grow(s, 12)
    assert kv.blocks_of(0) != list(range(kv.blocks_of(0)[0], kv.blocks_of(0)[0] + 3))
    gen = torch.Generator().manual_seed(1)
    k = torch.randn(3, 10, cfg.n_kv_heads, cfg.head_dim, generator=gen)
    v = torch.randn(3, 10, cfg.n_kv_heads, cfg.head_dim, generator=gen)
    slot_t, positions = torch.tensor(slots), torch.arange(10).expand(3, 10)
    kv.write(1, slot_t, positions, k, v)
    got_k, got_v = kv.read(1, slot_t, 10)
    for got, want in ((got_k, k), (got_v, v)):
        step = want.abs().amax(-1, keepdim=True) / 127
        assert ((got - want).abs() <= step / 2 + 1e-6).all()
    assert kv.k.dtype == torch.int8


def test_cat_cache_grows_by_copy_and_reads_in_order():
    kv = kvc.CatKV(TINY, 2)
    slots = torch.arange(2)
    parts = [torch.randn(2, n, TINY.n_kv_heads, TINY.head_dim) for n in (3, 1, 1)]
    start = 0
    for p in parts:
        kv.write(0, slots, torch.arange(start, start + p.shape[1]).expand(2, -1), p, p)
        start += p.shape[1]
    k, _ = kv.read(0, slots, 5)
    assert torch.equal(k, torch.cat(parts, dim=1))


@pytest.fixture(scope="module")
def decode_sides():
    from ch20.baseline_integrated_kv_cache import CatCacheEager
    from ch20.optimized_integrated_kv_cache import PagedInt8Graphs
    from ch20.optimized_integrated_kv_cache_bf16_kv import PagedBf16Graphs

    sides = [ready(c) for c in (CatCacheEager, PagedBf16Graphs, PagedInt8Graphs)]
    stream = sides[0].make_inputs(9)
    return sides, stream, [s.run(stream) for s in sides]


def test_decode_loop_equals_the_no_cache_forward(decode_sides):
    sides, stream, outs = decode_sides
    s = kvc.CPU_SHAPE
    with torch.no_grad():
        logits = Decoder(TINY, seed=0)(stream[:, :s.total])  # every position, no cache
    logp = logits.log_softmax(-1)
    want = torch.stack([logp[:, s.prompt + t].gather(1, stream[:, s.prompt + t + 1, None])[:, 0]
                        for t in range(s.steps)])
    torch.testing.assert_close(outs[0][0], want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(outs[0][1], logits[:, s.total - 1], rtol=1e-5, atol=1e-5)


def test_paged_sides_match_and_int8_costs_what_it_declares(decode_sides):
    sides, _, (cat, paged, int8) = decode_sides
    torch.testing.assert_close(paged, cat, rtol=1e-5, atol=1e-5)  # the same K/V values
    assert compare(cat, int8, kvc.INT8_TOLERANCE).ok
    assert not torch.equal(int8[0], cat[0])  # int8 storage is really what the side reads
    kv = sides[2].kv
    assert kv.num_free_blocks == kv.num_blocks - 1  # every block handed back after the call
    s = kvc.CPU_SHAPE
    assert math.ceil(s.total / s.block) * s.batch + 1 == kv.num_blocks


# --- the harness -----------------------------------------------------------------------------
@pytest.mark.skipif(torch.cuda.is_available(), reason="asserts the CPU path")
@pytest.mark.parametrize("stem", ["multiple_unoptimized", "pipeline_sequential",
                                  "pipeline_sequential_bandwidth", "integrated_kv_cache"])
def test_every_ch20_pair_verifies_through_the_harness_on_cpu(stem):
    from core import REPO_ROOT
    from core.child import run_pair
    from tests.conftest import spec_for
    from core.discovery import discover

    chapter = next(c for c in discover(REPO_ROOT) if c.name == "ch20")
    pair = next(p for p in chapter.pairs if p.stem == stem)
    result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
    assert len(result.examples) == len(pair.examples) >= 1
    for example in result.examples:
        assert example.status == "ok", f"{example.id}: {example.reason}"
        assert example.verification.ok


def test_training_stage_table_comes_from_a_run(tmp_path):
    """The README's stage table is generated from results.json: gains are the ratios of the
    run's cumulative speedups, and a run missing a stage is refused with the fix."""
    from ch20.stage_table import TRAINING_STAGES, training_stage_table

    stem = "ch20:multiple_unoptimized"
    speedups = [2.0, 3.0, 4.5, 4.5, 9.0]
    examples = [{"id": stem + suffix, "speedup": s, "timing": {"stats": {"median": 100.0 / s}}}
                for (suffix, _), s in zip(TRAINING_STAGES, speedups)]
    record = {"pairs": [{"pair": stem, "baseline": {"stats": {"median": 100.0}}, "examples": examples}]}
    path = tmp_path / "results.json"
    path.write_text(json.dumps(record))
    table = training_stage_table(path)
    assert "| baseline | — | 100.0 | 1× | — |" in table
    assert "| 3 `_s3_fused_optimizer` | + `AdamW(fused=True)` | 22.2 | 4.50× | 1.50× |" in table
    assert "| 4 `_s4_no_sync_logging` | + device-side loss logging | 22.2 | 4.50× | 1.00× |" in table
    assert table.rstrip().endswith("| 11.1 | 9.00× | 2.00× |")
    record["pairs"][0]["examples"] = examples[:-1]
    path.write_text(json.dumps(record))
    with pytest.raises(ValueError, match="ch20:multiple_unoptimized\\b.*bench run"):
        training_stage_table(path)
