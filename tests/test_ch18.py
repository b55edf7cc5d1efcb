"""Chapter 18 on the CPU: decode attention (SDPA, folded-query SDPA, Flex, repeat_interleave)
against a float64 reference, the MLA absorption identity and the tolerance's power to catch
MLA bugs, which pairs are `teaching`, the vLLM pair's SKIP, and every pair through the
harness (verify or SKIP with the reason)."""
from __future__ import annotations

import dataclasses
import warnings

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
