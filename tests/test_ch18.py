"""Chapter 18 on the CPU: decode attention (SDPA, folded-query SDPA, Flex, repeat_interleave)
against a float64 reference, the MLA absorption identity and the tolerance's power to catch
MLA bugs, which pairs are `teaching`, the vLLM pair's SKIP, and every pair through the
harness (verify or SKIP with the reason)."""
from __future__ import annotations

import dataclasses
import warnings
from pathlib import Path

import pytest
import torch
import torch.nn.functional as F

from ch18.decode_attention import reference_decode
from core.benchmark import BenchContext, Tolerance
from core.pairfile import _missing_module, unmet_requirement
from tests.conftest import cpu_only

CPU = BenchContext(seed=0, device="cpu")


def ready(*sides):
    for s in sides:
        s.ctx = CPU
        s.setup(CPU)
    return sides


def close(a: torch.Tensor, b: torch.Tensor, tol: Tolerance) -> bool:
    return torch.allclose(a.double(), b.double(), rtol=tol.rtol, atol=tol.atol)


def test_reference_decode_maps_query_head_h_to_kv_head_h_over_group():
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(2, h, t, 8, generator=gen) for h, t in ((6, 1), (2, 40), (2, 40)))
    ref = reference_decode(q, k, v)
    for h in range(6):  # head by head, against SDPA on that head's own KV head
        one = F.scaled_dot_product_attention(q[:, h:h + 1], k[:, h // 3:h // 3 + 1], v[:, h // 3:h // 3 + 1])
        torch.testing.assert_close(ref[:, h:h + 1], one, rtol=1e-5, atol=1e-6)
    # interleaved (h // group), not tiled (h % hkv): head 1 must not read KV head 1
    wrong = F.scaled_dot_product_attention(q[:, 1:2], k[:, 1:2], v[:, 1:2])
    assert not torch.allclose(ref[:, 1:2], wrong, atol=1e-3)


def test_decode_shapes_are_the_shared_decoders_gqa_and_long():
    from ch18._flexdecoding_common import LongContextDecodeBench
    from ch18._gqa_decode_common import GroupedDecodeBench

    for shape in (LongContextDecodeBench.CUDA_SHAPE, GroupedDecodeBench.CUDA_SHAPE):
        assert (shape.n_heads, shape.n_kv_heads, shape.head_dim, shape.group) == (16, 4, 128, 4)
        assert shape.dtype == torch.bfloat16
    assert LongContextDecodeBench.CUDA_SHAPE.kv_len == 32768


@pytest.mark.parametrize("stem, names", [
    ("flexdecoding", ("baseline_flexdecoding.SdpaDecode", "optimized_flexdecoding.FlexDecode")),
    ("gqa_decode", ("baseline_gqa_decode.FoldedQuerySdpa", "optimized_gqa_decode.SdpaEnableGqa")),
    ("gqa_decode_repeat_kv", ("baseline_gqa_decode_repeat_kv.RepeatKvThenSdpa",
                              "optimized_gqa_decode_repeat_kv.SdpaEnableGqa")),
])
def test_decode_sides_match_each_other_and_the_float64_reference(stem, names):
    import importlib

    sides = [getattr(importlib.import_module(f"ch18.{n.split('.')[0]}"), n.split(".")[1])() for n in names]
    ready(*sides)
    q = sides[0].make_inputs(11)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # Flex without torch.compile on the CPU
        outs = [s.run(q) for s in sides]
    ref = sides[0].reference(q)
    for out in outs:
        assert out.shape == q.shape and out.dtype == q.dtype
        torch.testing.assert_close(out, ref, rtol=1e-5, atol=1e-5)
    # the output depends on every part of the cache: change the last key of one sequence
    sides[1].v[1, :, -1] += 10.0
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        moved = sides[1].run(q)
    assert not torch.allclose(moved[1], outs[1][1], atol=1e-4)
    torch.testing.assert_close(moved[0], outs[1][0])


def test_decode_tolerance_catches_a_dropped_kv_block_at_the_gpu_length():
    """The pair's tolerance, at 32k keys where outputs are small, still fails attention
    that skips one 1/16 slice of the cache (what a broken split-KV combine does)."""
    from ch18._flexdecoding_common import LongContextDecodeBench

    shape = dataclasses.replace(LongContextDecodeBench.CUDA_SHAPE, batch=1, n_heads=4, n_kv_heads=1,
                                dtype=torch.float32)
    gen = torch.Generator().manual_seed(3)
    q = torch.randn(1, 4, 1, 128, generator=gen)
    k, v = (torch.randn(1, 1, shape.kv_len, 128, generator=gen) for _ in range(2))
    full = reference_decode(q, k, v)
    cut = shape.kv_len // 16
    dropped = reference_decode(q, k[:, :, cut:], v[:, :, cut:])
    assert not close(dropped, full, LongContextDecodeBench.tolerance)
    bf16 = reference_decode(q.bfloat16(), k.bfloat16(), v.bfloat16())   # rounding alone passes
    assert close(bf16, full, LongContextDecodeBench.tolerance)


def test_flex_decode_is_called_with_a_full_block_mask_gqa_and_the_kernel_options():
    """The optimized side hands Flex a mask of kv_len / 128 full blocks (no partial block, so
    no mask_mod in the kernel), built once in setup, with enable_gqa and KERNEL_OPTIONS."""
    from ch18._flexdecoding_common import KERNEL_OPTIONS, KV_BLOCK
    from ch18.optimized_flexdecoding import FlexDecode

    (flex,) = ready(FlexDecode())
    n = flex.shape().kv_len // KV_BLOCK
    mask = flex.block_mask
    assert mask.shape == (1, 1, 1, flex.shape().kv_len) and mask.BLOCK_SIZE == (128, KV_BLOCK)
    assert mask.kv_num_blocks.flatten().tolist() == [0]
    assert mask.full_kv_num_blocks.flatten().tolist() == [n]
    assert mask.full_kv_indices.flatten().tolist() == list(range(n))
    calls = []
    real = flex.flex
    flex.flex = lambda *a, **kw: calls.append(kw) or real(*a, **kw)
    q = flex.make_inputs(4)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        out = flex.run(q)
    (kw,) = calls
    assert kw["block_mask"] is mask and kw["enable_gqa"] is True and kw["kernel_options"] is KERNEL_OPTIONS
    torch.testing.assert_close(out, flex.reference(q), rtol=1e-5, atol=1e-5)


def test_split_plan_shows_the_no_mask_call_leaves_all_but_one_split_idle():
    """At the GPU shape on 132 SMs: with Flex's own empty mask (one 2**30-token block) the 8
    splits of each (sequence, KV head) row are launched but only the first gets keys, all
    32768 of them; with the full-block mask all 256 CTAs walk 4096 keys each."""
    from ch18._flexdecoding_common import KV_BLOCK, LongContextDecodeBench
    from ch18.sweep_flexdecoding import LARGE_BLOCK, default_split_kv, split_plan

    s = LongContextDecodeBench.CUDA_SHAPE
    split = default_split_kv(s.batch, s.n_kv_heads, 132)
    assert split == 8
    empty = [(1, 0)] * s.batch                        # Flex's own mask: one partial 2**30 block
    assert split_plan(empty, s.kv_len, LARGE_BLOCK, False, split, 64, s.n_kv_heads) == (32, 256, 32768)
    assert split_plan(empty, s.kv_len, LARGE_BLOCK, False, 1, 64, s.n_kv_heads) == (32, 32, 32768)
    full = [(0, s.kv_len // KV_BLOCK)] * s.batch
    assert split_plan(full, s.kv_len, KV_BLOCK, True, split, 64, s.n_kv_heads) == (256, 256, 4096)
    assert split_plan(full, s.kv_len, KV_BLOCK, True, 32, 128, s.n_kv_heads) == (1024, 1024, 1024)


def test_split_plan_paged_rows_split_only_without_full_blocks():
    """ch16's pool: with full blocks the tile is cut from the pool's length, so a row's keys
    stay on one CTA (plus one for its partial last block) whatever SPLIT_KV; listed as partial
    blocks, the row's own blocks are split."""
    from ch18.sweep_flexdecoding import split_plan

    blocks = [16, 128, 40, 77]                       # 64-token blocks of 4 of the pool's sequences
    pool = 4700 * 64                                 # the GPU pool: 64 sequences of 1k-8k tokens
    mixed = [(1, n - 1) for n in blocks]
    assert split_plan(mixed, pool, 64, True, 4, 64) == (8, 16, 127 * 64)
    assert split_plan([(n, 0) for n in blocks], pool, 64, False, 4, 64) == (16, 16, 32 * 64)
    assert split_plan([(n, 0) for n in blocks], pool, 64, False, 1, 64) == (4, 4, 128 * 64)


def test_sweep_follows_the_installed_flex_decode_source():
    """What split_plan and the sweep assume, read from this torch: the empty mask's block,
    the two tile rules, and every kernel_options key the sweep passes is one the decode
    lowering or template reads."""
    import torch._inductor.kernel.flex as flex_pkg
    from torch.nn.attention import flex_attention as fa

    from ch18.sweep_flexdecoding import DECODE_GRID, LARGE_BLOCK, PAGED_GRID, template_splits_by_row

    assert fa._LARGE_SPARSE_BLOCK_SIZE == LARGE_BLOCK
    assert template_splits_by_row() is True
    root = Path(flex_pkg.__file__).parent
    template = (root / "templates" / "flex_decode.py.jinja").read_text()
    assert "TILE_KV_OG = tl.cdiv(KV_LEN, SPLIT_KV)" in template
    source = template + "".join((root / f).read_text() for f in (
        "flex_decoding.py", "templates/utilities.py.jinja", "templates/common.py.jinja"))
    keys = {k for cfg in DECODE_GRID + PAGED_GRID for k in (cfg.options or {})}
    assert keys == {"SPLIT_KV", "BLOCK_N", "num_warps", "num_stages", "BLOCKS_ARE_CONTIGUOUS", "USE_TMA"}
    for key in keys:
        assert key in source, key


def test_sweep_refuses_the_cpu_and_scores_errors_against_the_tolerance(monkeypatch):
    import sys
    import types

    from ch18 import sweep_flexdecoding as sweep
    from core.benchmark import Tolerance

    monkeypatch.setattr(sys, "argv", ["sweep_flexdecoding"])
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SystemExit, match="CUDA"):
        sweep.main()
    ref = torch.tensor([1.0, 0.0])
    tol = Tolerance(rtol=2e-2, atol=1e-2)
    assert sweep.err_pct(ref + torch.tensor([0.03, 0.0]), ref, tol) == pytest.approx(100.0)
    case = types.SimpleNamespace(pair_options={"SPLIT_KV": 4})  # rows change one option of the pair's
    grid = {c.name: c for c in sweep.PAGED_GRID}
    assert sweep.options_of(case, grid["pair"]) == {"SPLIT_KV": 4}
    assert sweep.options_of(case, grid["pair.W4"]) == {"SPLIT_KV": 4, "num_warps": 4}
    assert sweep.options_of(case, grid["partial.S8"]) == {"SPLIT_KV": 8}
    assert sweep.options_of(case, grid["full"]) == {}                 # the first layout, as it was


def mla_sides(shape=None):
    from ch18.baseline_mla_decode import CachedKvMla
    from ch18.optimized_mla_decode import AbsorbedMla

    sides = [CachedKvMla(), AbsorbedMla()]
    if shape is not None:
        for s in sides:
            s.shape = lambda shape=shape: shape
    return ready(*sides)


def test_mla_cached_kv_absorbed_and_per_step_decompression_agree_with_float64():
    from ch18.baseline_mla_decode_decompress import DecompressMla

    base, absorbed = mla_sides()
    (decompress,) = ready(DecompressMla())
    x = base.make_inputs(5)
    out_b, out_a, out_d = base.run(x), absorbed.run(x), decompress.run(x)
    assert out_b.shape == (2, 64)
    for out in (out_a, out_d):
        torch.testing.assert_close(out, out_b, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(out_b, base.reference(x), rtol=1e-5, atol=1e-5)
    assert not torch.allclose(base.run(base.make_inputs(6)), out_b, atol=1e-3)  # seed-sensitive


def test_mla_cached_kv_baseline_holds_per_head_kv_and_reads_it():
    """The headline baseline's cache is the naive engine's per-head K/V, 5120 values per
    token at the GPU size, and its step reads that cache, not the latent."""
    from ch18._mla_decode_common import CUDA_SHAPE

    base, _ = mla_sides()
    s = base.shape()
    assert base.k_heads.shape == (s.batch, s.n_heads, s.kv_len, s.d_nope + s.d_rope)
    assert base.v_heads.shape == (s.batch, s.n_heads, s.kv_len, s.d_v)
    x = base.make_inputs(3)
    before = base.run(x)
    base.cache = torch.zeros_like(base.cache)            # the latent is not read per step
    torch.testing.assert_close(base.run(x), before)
    base.v_heads[1, :, -1] += 10.0                       # the per-head V is
    assert not torch.allclose(base.run(x)[1], before[1], atol=1e-4)
    assert CUDA_SHAPE.n_heads * (CUDA_SHAPE.d_nope + CUDA_SHAPE.d_rope + CUDA_SHAPE.d_v) == 5120


def test_teaching_tags_mark_the_copying_baselines_only():
    from ch18.baseline_gqa_decode import FoldedQuerySdpa
    from ch18.baseline_gqa_decode_repeat_kv import RepeatKvThenSdpa
    from ch18.baseline_mla_decode import CachedKvMla
    from ch18.baseline_mla_decode_decompress import DecompressMla
    from ch18.optimized_gqa_decode import SdpaEnableGqa
    from ch18.optimized_gqa_decode_repeat_kv import get_benchmark as against_the_copy

    assert RepeatKvThenSdpa.teaching and DecompressMla.teaching
    assert not FoldedQuerySdpa.teaching and not CachedKvMla.teaching
    # no negative declarations: the H100 measured enable_gqa 1.06x over the folded query
    assert against_the_copy is SdpaEnableGqa and not SdpaEnableGqa.negative_result


def test_mla_absorption_identity_per_head():
    """q_nope . (W_UK c) == (W_UK^T q_nope) . c and W_UV applied after the weighted sum:
    the two reassociations the optimized side relies on, head by head."""
    _, absorbed = mla_sides()
    s = absorbed.shape()
    gen = torch.Generator().manual_seed(1)
    q_nope = torch.randn(s.n_heads, s.d_nope, generator=gen, dtype=torch.float64)
    c = torch.randn(7, s.d_latent, generator=gen, dtype=torch.float64)
    p = torch.randn(7, generator=gen, dtype=torch.float64).softmax(0)
    w = absorbed.w_ukv.double()
    for h in range(s.n_heads):
        k_h, v_h = (c @ w[:, h]).split([s.d_nope, s.d_v], dim=-1)
        q_lat = absorbed.w_uk_heads[h].double().T @ q_nope[h]
        torch.testing.assert_close(c @ q_lat, k_h @ q_nope[h])
        torch.testing.assert_close((p @ c) @ absorbed.w_uv_heads[h].double(), p @ v_h)


@pytest.mark.parametrize("bug", ["no_rope", "scale_128", "heads_swapped"])
def test_mla_tolerance_fails_a_broken_absorbed_side(bug):
    base, absorbed = mla_sides()
    s = absorbed.shape()
    if bug == "no_rope":
        absorbed.cache = absorbed.cache.clone()
        absorbed.cache[..., s.d_latent:] = 0.0      # the rope term vanishes from the scores
    elif bug == "scale_128":                        # 1/sqrt(nope) instead of 1/sqrt(nope + rope)
        absorbed.w_q = absorbed.w_q * (192 / 128) ** 0.5
    else:
        absorbed.w_uk_heads = absorbed.w_uk_heads.roll(1, dims=0)
    x = base.make_inputs(2)
    assert not close(absorbed.run(x), base.run(x), base.tolerance)


def test_mla_cache_is_576_wide_per_token_on_the_gpu():
    from ch18._mla_decode_common import CUDA_SHAPE

    assert CUDA_SHAPE.d_latent + CUDA_SHAPE.d_rope == 576 and CUDA_SHAPE.n_heads == 16
    per_head_kv = 2 * CUDA_SHAPE.n_heads * CUDA_SHAPE.d_nope
    assert per_head_kv / (CUDA_SHAPE.d_latent + CUDA_SHAPE.d_rope) > 7   # what the latent saves


def test_vllm_pair_skips_naming_vllm_and_builds_a_decoder_config():
    from ch18._vllm_v1_integration_common import llama_config
    from ch18.baseline_vllm_v1_integration import VllmEager
    from ch18.optimized_vllm_v1_integration import VllmCompiledGraphs
    from ch15.decoder import SMALL

    for cls in (VllmEager, VllmCompiledGraphs):
        assert cls.requires.modules == ("vllm",)
        with pytest.raises(ImportError):
            __import__("vllm")
        assert "needs a CUDA GPU" in unmet_requirement(cls(), "cpu")
        assert "'vllm'" in _missing_module(cls.requires)   # the reason on a GPU without vLLM
    assert VllmEager.enforce_eager and not VllmCompiledGraphs.enforce_eager
    cfg = llama_config()
    assert (cfg["hidden_size"], cfg["num_attention_heads"], cfg["num_key_value_heads"], cfg["head_dim"],
            cfg["intermediate_size"], cfg["vocab_size"]) == (SMALL.d_model, SMALL.n_heads, SMALL.n_kv_heads,
                                                              SMALL.head_dim, SMALL.ffn, SMALL.vocab)


@cpu_only
def test_every_ch18_pair_verifies_or_skips_through_the_harness():
    from core import REPO_ROOT
    from core.child import run_pair
    from tests.conftest import spec_for
    from core.discovery import discover

    chapter = next(c for c in discover(REPO_ROOT) if c.name == "ch18")
    assert {p.stem for p in chapter.pairs} == {"flexdecoding", "gqa_decode", "gqa_decode_repeat_kv", "mla_decode",
                                               "mla_decode_decompress", "vllm_v1_integration"}
    statuses = {}
    for pair in chapter.pairs:
        result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
        for ex in result.examples:
            statuses[ex.id] = (ex.status, ex.reason)
    for name in ("flexdecoding", "gqa_decode", "gqa_decode_repeat_kv", "mla_decode", "mla_decode_decompress"):
        assert statuses[f"ch18:{name}"][0] == "ok", statuses
    assert statuses["ch18:flexdecoding_graphs"][0] == "skipped"
    assert "CUDA" in statuses["ch18:flexdecoding_graphs"][1]
    assert statuses["ch18:vllm_v1_integration"][0] == "skipped"
    assert "CUDA" in statuses["ch18:vllm_v1_integration"][1]
