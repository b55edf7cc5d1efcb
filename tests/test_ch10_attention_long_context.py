"""ch10 `attention_long_context` on a CPU: the chunked causal baseline and the pair's tolerance.

- at a tiny shape (the module constants patched: S=256, chunks of 64 or 96 rows), the
  baseline's own code matches a float64 causal reference within the pair's tolerance, sees
  keys only up to each chunk's end, and the flash side (SDPA's CPU flash kernel) matches it;
- planted wrong answers fail that tolerance: zeros, a dropped chunk, the wrong softmax
  scale, no causal mask, and mask bugs planted in the baseline's own diagonal block;
- at the real sequence length (32768, one head, a few hundred rows at either end, emulated
  in fp32/fp64 because bf16 matmuls are too slow on a CPU), the tolerance still passes the
  flash-like and eager-like roundings and fails a dropped last chunk, non-causal rows and
  the wrong scale, although late rows' outputs are ~50x smaller than early rows';
- the workload counts the causal half of the work.
The pair's import and contract are covered by tests/test_real_pairs.py; its timing needs a GPU.
"""
from __future__ import annotations

import math
import re

import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

import ch10._attention_long_context_common as common
import ch10.baseline_attention_long_context as baseline
import ch10.optimized_attention_long_context as flash
from core.benchmark import BenchContext, Benchmark
from core.verify import compare

TOL = common.LongContextAttentionBench.tolerance
TINY_S = 256
# what SDPA raises when the pinned backend has no kernel for these inputs on this device
NO_FLASH_KERNEL = re.compile(r"No viable backend for scaled_dot_product_attention|No available kernel")


@pytest.fixture(params=[64, 96], ids=["chunk64", "chunk96"])  # 96: a partial last chunk
def chunk(request: pytest.FixtureRequest, monkeypatch: pytest.MonkeyPatch) -> int:
    for name, value in {"B": 1, "H": 2, "S": TINY_S, "D": 128}.items():
        monkeypatch.setattr(common, name, value)
    monkeypatch.setattr(baseline, "CHUNK", request.param)
    return request.param


def build(module) -> Benchmark:
    bench = module.get_benchmark()
    bench.ctx = BenchContext(seed=0, device="cpu")
    bench.setup(bench.ctx)
    return bench


def reference(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, *, causal: bool = True,
              scale: float | None = None) -> torch.Tensor:
    return F.scaled_dot_product_attention(q.double(), k.double(), v.double(), is_causal=causal,
                                          scale=scale)


def test_chunked_baseline_matches_fp64_causal_reference(chunk: int) -> None:
    bench = build(baseline)
    inputs = bench.make_inputs(1)
    out = bench.run(inputs)
    assert out.shape == (1, 2, TINY_S, 128) and out.dtype == torch.bfloat16
    check = compare(reference(*inputs), out, TOL, same_dtype=False)
    assert check.ok, check.message
    assert check.tolerance_used < 0.5  # well inside it, not at its edge


def test_baseline_computes_keys_only_up_to_each_chunks_end(chunk: int,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    bench = build(baseline)
    seen = []
    attend = bench.attend_chunk

    def spy(q, k, v):
        seen.append((q.shape[-2], k.shape[-2]))
        return attend(q, k, v)

    monkeypatch.setattr(bench, "attend_chunk", spy)
    bench.run(bench.make_inputs(0))
    ends = [min(start + chunk, TINY_S) for start in range(0, TINY_S, chunk)]
    assert sorted(keys for _, keys in seen) == ends  # the causal extent, never all S keys
    assert sum(rows for rows, _ in seen) == TINY_S


def test_flash_side_matches_the_baseline(chunk: int) -> None:
    inputs = build(baseline).make_inputs(2)
    try:
        out = build(flash).run(inputs)
    except RuntimeError as err:
        # only a torch build without SDPA's CPU flash kernel is a skip (SDPA then finds no
        # backend for the pinned FLASH_ATTENTION); any other error is a failure
        if not NO_FLASH_KERNEL.search(str(err)):
            raise
        pytest.skip(f"no CPU flash kernel in this torch build: {err}")
    check = compare(build(baseline).run(inputs), out, TOL)
    assert check.ok, check.message


def wrong_answers(inputs, right: torch.Tensor, chunk: int) -> dict[str, torch.Tensor]:
    dropped = right.clone()
    dropped[:, :, -chunk:] = 0  # the last chunk, whose outputs are the smallest
    return {
        "zeros": torch.zeros_like(right),
        "dropped last chunk": dropped,
        "scale 1 instead of 1/sqrt(d)": reference(*inputs, scale=1.0),
        "scale 1/d": reference(*inputs, scale=1.0 / 128),
        "non-causal": reference(*inputs, causal=False),
    }


def test_planted_wrong_answers_fail_the_tolerance(chunk: int) -> None:
    bench = build(baseline)
    inputs = bench.make_inputs(3)
    right = bench.run(inputs)
    for name, wrong in wrong_answers(inputs, right, chunk).items():
        assert not compare(right, wrong.to(right.dtype), TOL).ok, name


def test_a_chunk_the_baseline_skips_fails(chunk: int, monkeypatch: pytest.MonkeyPatch) -> None:
    bench = build(baseline)
    inputs = bench.make_inputs(5)
    # plant a loop that skips its last step (chunk 0, in the baseline's largest-first order)
    monkeypatch.setattr(baseline, "reversed", lambda starts: list(starts)[::-1][:-1],
                        raising=False)
    check = compare(reference(*inputs), bench.run(inputs), TOL, same_dtype=False)
    assert not check.ok and "NaN" in check.message


@pytest.mark.parametrize("bug", ["no diagonal mask", "one future key", "transposed mask"])
def test_mask_bugs_planted_in_the_baseline_fail(chunk: int, bug: str) -> None:
    bench = build(baseline)
    ones = torch.ones(chunk, chunk, dtype=torch.bool)
    bench.future = {"no diagonal mask": torch.zeros_like(ones), "one future key": ones.triu(2),
                    "transposed mask": ones.tril(-1)}[bug]
    inputs = bench.make_inputs(4)
    assert not compare(reference(*inputs), bench.run(inputs), TOL, same_dtype=False).ok


# ------------------------------------------------- the tolerance at the real sequence length

S, D = common.S, common.D
SCALE = 1.0 / math.sqrt(D)


def rows_attention(q, k, v, rows: slice, *, rounding: str = "fp64", causal: bool = True,
                   scale: float = SCALE) -> torch.Tensor:
    """Attention of query rows `rows` (one head), rounded as the named side rounds.

    fp64: the truth. eager: the baseline (bf16 scaled queries, bf16 scores, bf16 probs; its
    matmuls accumulate in fp32). flash: fp32 scores and softmax, bf16 unnormalized
    probabilities into the second matmul."""
    keys = rows.stop if causal else S
    dtype = torch.float64 if rounding == "fp64" else torch.float32
    qr, kr, vr = q[rows], k[:keys].to(dtype), v[:keys].to(dtype)
    if rounding == "eager":
        scores = ((qr * SCALE).float() @ kr.T).bfloat16().float()
    else:
        scores = (qr.to(dtype) @ kr.T) * scale
    if causal:
        future = torch.arange(keys)[None, :] > torch.arange(rows.start, rows.stop)[:, None]
        scores = scores.masked_fill(future, float("-inf"))
    if rounding == "flash":
        p = torch.exp(scores - scores.amax(-1, keepdim=True))
        return (p.bfloat16().float() @ vr / p.sum(-1, keepdim=True)).bfloat16()
    probs = torch.softmax(scores, -1)
    if rounding == "eager":
        return (probs.bfloat16().float() @ vr).bfloat16()
    return probs @ vr


def test_tolerance_separates_right_from_wrong_at_the_real_length() -> None:
    gen = torch.Generator().manual_seed(0)
    q, k, v = (torch.randn(S, D, generator=gen).bfloat16() for _ in range(3))
    # rows 0-255, and the last chunk in 512-row pieces (fp64 scores of 4096 x 32768: 1 GiB)
    early, late = slice(0, 256), [slice(start, start + 512) for start in range(S - 4096, S, 512)]

    def answer(rows: slice | list[slice], **how) -> torch.Tensor:
        parts = rows if isinstance(rows, list) else [rows]
        return torch.cat([rows_attention(q, k, v, part, **how) for part in parts])

    truth = {"early": answer(early), "late": answer(late)}
    # rows 0-15 average a few values of V, the last chunk ~30k: outputs ~50x apart in size
    assert truth["early"][:16].abs().mean() > 40 * truth["late"].abs().mean()
    for part, rows in (("early", early), ("late", late[-1:])):
        expected = truth[part][-512:] if part == "late" else truth[part]
        for rounding in ("eager", "flash"):
            check = compare(expected, answer(rows, rounding=rounding), TOL, same_dtype=False)
            assert check.ok and check.tolerance_used < 0.5, (part, rounding, check.message)
    wrong = {
        "zeros": ("early", torch.zeros_like(truth["early"])),
        "dropped last chunk (zeros: its outputs are the smallest)":
            ("late", torch.zeros_like(truth["late"])),
        "non-causal": ("early", answer(early, causal=False)),
        "scale 1 instead of 1/sqrt(d)": ("early", answer(early, scale=1.0)),
        "scale 1/d": ("early", answer(early, scale=1.0 / D)),
    }
    for name, (part, wrong_answer) in wrong.items():
        assert not compare(truth[part], wrong_answer, TOL, same_dtype=False).ok, name


# ------------------------------------------------------------------------------- workload

def test_workload_counts_the_causal_work() -> None:
    work = build(flash).workload()
    b, h, s, d = common.B, common.H, common.S, common.D
    assert (b, h, s, d) == (1, 16, 32768, 128)
    assert work.flops == 2 * b * h * s * s * d  # 4·B·H·S²·D / 2: half of the non-causal FLOPs
    assert work.bytes == 4 * b * h * s * d * 2  # Q, K, V read and O written once, bf16
    assert work.flops_dtype == "bf16"
    assert build(baseline).workload() == work  # both sides are rated on the same useful work


def test_workload_follows_the_shape(chunk: int) -> None:
    assert build(baseline).workload().flops == 2 * 1 * 2 * TINY_S ** 2 * 128
