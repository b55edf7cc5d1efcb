"""The shared inference model (ch15/decoder.py) and its KV caches (ch15/kv.py), on a CPU.

The cached paths (prefill, chunked prefill, decode) must reproduce the no-cache causal
forward; the two KV layouts must give bit-identical logits, also after slots and blocks are
freed and reused; GQA, RoPE, MoE and the paged allocator each get a check that fails when
they are wrong. Everything runs the TINY config in fp32.
"""
from __future__ import annotations

from dataclasses import replace

import pytest
import torch
import torch.nn.functional as F

from ch15.decoder import SMALL, TINY, Decoder, DecoderConfig, apply_rope, cached_attention
from ch15.kv import ContiguousKV, KVCache, OutOfKVMemory, PagedKV

ATOL = 1e-4  # fp32: cached and uncached paths differ by summation order only (~1e-6 seen)


def tokens(seed: int, *shape: int, vocab: int = TINY.vocab) -> torch.Tensor:
    return torch.randint(0, vocab, shape, generator=torch.Generator().manual_seed(seed))


def make_kv(layout: str, cfg: DecoderConfig = TINY, max_seqs: int = 4, num_blocks: int = 40) -> KVCache:
    if layout == "contiguous":
        return ContiguousKV(cfg, max_seqs)
    return PagedKV(cfg, num_blocks=num_blocks, max_seqs=max_seqs, block_size=4)


def check_cached_matches_full(model: Decoder, kv: KVCache, lengths: list[int], steps: int) -> None:
    """Ragged prefill, then `steps` decode steps; every logit vs each sequence's full forward."""
    seqs = [tokens(10 + i, n + steps) for i, n in enumerate(lengths)]
    refs = [model(s[None])[0] for s in seqs]  # [n + steps, vocab] each, no cache
    slots = torch.tensor([kv.allocate(n + steps) for n in lengths])
    padded = torch.zeros(len(lengths), max(lengths), dtype=torch.long)
    for i, n in enumerate(lengths):
        padded[i, :n] = seqs[i][:n]
    logits = model.prefill(padded, kv, slots, torch.tensor(lengths))
    for i, n in enumerate(lengths):
        torch.testing.assert_close(logits[i], refs[i][n - 1], atol=ATOL, rtol=0)
    for step in range(steps):
        positions = torch.tensor([n + step for n in lengths])
        new = torch.stack([seqs[i][n + step] for i, n in enumerate(lengths)])
        logits = model.decode(new, kv, slots, positions)
        for i, n in enumerate(lengths):
            torch.testing.assert_close(logits[i], refs[i][n + step], atol=ATOL, rtol=0)


# ---------------------------------------------------------------- cache vs no cache

@pytest.mark.parametrize("layout", ["contiguous", "paged"])
def test_prefill_then_decode_matches_the_full_causal_forward(layout):
    model = Decoder(TINY, seed=0)
    check_cached_matches_full(model, make_kv(layout), lengths=[9, 3, 14], steps=6)


@pytest.mark.parametrize("layout", ["contiguous", "paged"])
def test_chunked_prefill_continues_from_the_cache(layout):
    model, kv = Decoder(TINY, seed=0), make_kv(layout)
    seq = tokens(3, 2, 21)
    ref = model(seq)
    slots = torch.tensor([kv.allocate(21), kv.allocate(21)])
    model.prefill(seq[:, :8], kv, slots)
    logits = model.prefill(seq[:, 8:], kv, slots, start=torch.tensor([8, 8]))
    torch.testing.assert_close(logits, ref[:, -1], atol=ATOL, rtol=0)


def test_the_cache_is_what_decode_reads():
    """Corrupting a sequence's cached prefix must change its next logits (decode is not
    silently recomputing or ignoring the cache)."""
    model, kv = Decoder(TINY, seed=0), ContiguousKV(TINY, 1)
    seq = tokens(4, 1, 10)
    slots = torch.tensor([kv.allocate(11)])
    model.prefill(seq, kv, slots)
    step = (seq[:, -1], kv, slots, torch.tensor([10]))
    before = model.decode(*step)
    kv.v[:, 0, :10] += 1.0
    assert (model.decode(*step) - before).abs().max() > 1e-2


# ---------------------------------------------------------------- the two layouts

def test_contiguous_and_paged_give_identical_logits_with_reuse():
    """Same requests through both layouts, including a slot freed mid-run and refilled by a
    new request (stale K/V and recycled blocks): logits bit-identical at every step."""
    model = Decoder(TINY, seed=1)
    contiguous, paged = ContiguousKV(TINY, 3), PagedKV(TINY, num_blocks=16, max_seqs=3, block_size=4)
    prompts = {"a": tokens(20, 11), "b": tokens(21, 5), "c": tokens(22, 17), "d": tokens(23, 7)}

    def run(kv: KVCache) -> tuple[list[torch.Tensor], list[int], list[int]]:
        out, length, slot = [], {}, {}

        def admit(names: list[str]) -> None:
            for n in names:
                slot[n], length[n] = kv.allocate(len(prompts[n]) + 4), len(prompts[n])
            batch = torch.zeros(len(names), max(length[n] for n in names), dtype=torch.long)
            for i, n in enumerate(names):
                batch[i, :length[n]] = prompts[n]
            out.append(model.prefill(batch, kv, torch.tensor([slot[n] for n in names]),
                                     torch.tensor([length[n] for n in names])))

        def step(names: list[str]) -> None:
            toks = torch.tensor([int(prompts[n][length[n] % len(prompts[n])]) for n in names])
            out.append(model.decode(toks, kv, torch.tensor([slot[n] for n in names]),
                                    torch.tensor([length[n] for n in names])))
            for n in names:
                length[n] += 1

        admit(["a", "b", "c"])
        step(["a", "b", "c"])
        b_blocks = paged.blocks_of(slot["b"]) if kv is paged else []
        kv.free(slot["b"])
        admit(["d"])  # takes b's slot (and, paged, b's blocks): stale K/V underneath
        d_blocks = paged.blocks_of(slot["d"]) if kv is paged else []
        for _ in range(3):
            step(["a", "d", "c"])
        # the attention inputs themselves: same values, same order, for each valid prefix
        k, v = kv.read(0, torch.tensor([slot["a"], slot["d"], slot["c"]]), max(length.values()))
        prefixes = [(k[i, :length[n]], v[i, :length[n]]) for i, n in enumerate(["a", "d", "c"])]
        return out, prefixes, sorted(set(b_blocks) & set(d_blocks))

    out_c, kv_c, _ = run(contiguous)
    out_p, kv_p, reused = run(paged)
    assert reused, "d should have been given b's freed blocks"
    assert len(out_c) == len(out_p) == 6
    for a, b in zip(out_c, out_p):
        assert torch.equal(a, b)
    for (kc, vc), (kp, vp) in zip(kv_c, kv_p):
        assert torch.equal(kc, kp) and torch.equal(vc, vp)


def test_paged_kv_holds_less_memory_for_the_same_tokens():
    contiguous = ContiguousKV(TINY, max_seqs=8)
    paged = PagedKV(TINY, num_blocks=8 * 16 // 4, max_seqs=8, block_size=4)  # 16 tokens a sequence
    assert paged.nbytes * 8 == contiguous.nbytes
    assert contiguous.nbytes == 8 * TINY.max_seq * TINY.kv_bytes_per_token()


# ---------------------------------------------------------------- GQA, RoPE

@pytest.mark.parametrize("kv_heads", [1, 2, 4])  # MQA, GQA, MHA
def test_gqa_head_grouping_matches_repeated_kv(kv_heads):
    """cached_attention folds query groups into the length axis; it must equal plain
    attention with each KV head repeated for its group of query heads."""
    g = torch.Generator().manual_seed(0)
    b, t, h, d, length = 2, 3, 4, 8, 10
    q = torch.randn(b, t, h, d, generator=g)
    k, v = (torch.randn(b, length, kv_heads, d, generator=g) for _ in range(2))
    visible = torch.arange(length) <= torch.tensor([[[5], [6], [7]], [[7], [8], [9]]])  # [B, T, L]
    rep = h // kv_heads
    kr, vr = (x.repeat_interleave(rep, dim=2).transpose(1, 2) for x in (k, v))  # [B, H, L, D]
    expected = F.scaled_dot_product_attention(q.transpose(1, 2), kr, vr, attn_mask=visible[:, None])
    torch.testing.assert_close(cached_attention(q, k, v, visible), expected.transpose(1, 2))


@pytest.mark.parametrize("kv_heads", [1, 4])
def test_decoder_with_other_kv_head_counts_still_matches(kv_heads):
    cfg = replace(TINY, n_kv_heads=kv_heads)
    assert TINY.n_kv_heads < TINY.n_heads
    check_cached_matches_full(Decoder(cfg, seed=2), make_kv("paged", cfg), lengths=[6, 2], steps=3)


def test_rope_positions_matter_only_relatively():
    model, seq = Decoder(TINY, seed=0), tokens(5, 1, 16)
    base = torch.arange(16)[None]
    logits = model(seq, base)
    # a constant shift keeps every distance: same logits (RoPE encodes relative position)
    torch.testing.assert_close(model(seq, base + 37), logits, atol=ATOL, rtol=0)
    # stretched distances: different logits, so positions are used
    assert (model(seq, base * 3) - logits).abs().max() > 1e-2


def test_rope_scores_depend_on_distance():
    """q·k after apply_rope: unchanged when both positions shift, changed when their
    distance does (checked on the model's own RoPE tables)."""
    model = Decoder(TINY, seed=0)
    g = torch.Generator().manual_seed(9)
    q, k = (torch.randn(1, 1, 1, TINY.head_dim, generator=g) for _ in range(2))

    def score(pq: int, pk: int) -> float:
        def rot(x, p):
            return apply_rope(x, model.rope_cos[p][None, None, None], model.rope_sin[p][None, None, None])
        return float((rot(q, pq) * rot(k, pk)).sum())

    assert score(9, 4) == pytest.approx(score(50, 45), abs=1e-4)
    assert abs(score(9, 4) - score(9, 1)) > 1e-3
    assert score(0, 0) == pytest.approx(float((q * k).sum()), abs=1e-5)  # position 0: no rotation


# ---------------------------------------------------------------- generate, seeds, MoE

def test_generate_is_greedy_deterministic_and_seeded():
    prompts, max_new = [[1, 2, 3], [7, 8, 9, 10, 11, 12], [5]], [6, 3, 0]
    out = Decoder(TINY, seed=0).generate(prompts, max_new)
    assert [len(o) for o in out] == max_new
    assert Decoder(TINY, seed=0).generate(prompts, max_new) == out
    assert Decoder(TINY, seed=1).generate(prompts, max_new) != out
    paged = PagedKV(TINY, num_blocks=12, max_seqs=3, block_size=4)
    assert Decoder(TINY, seed=0).generate(prompts, max_new, kv=paged) == out
    assert paged.num_free_blocks == 11  # generate freed everything it took
    # greedy by definition: each token is the argmax of the no-cache forward over what precedes it
    model = Decoder(TINY, seed=0)
    for prompt, new in zip(prompts, out):
        seq = list(prompt)
        for tok in new:
            assert model(torch.tensor([seq]))[0, -1].argmax().item() == tok
            seq.append(tok)


def test_moe_runs_matches_its_definition_and_differs_from_dense():
    moe_cfg = replace(TINY, n_experts=4, top_k=2)
    moe, dense = Decoder(moe_cfg, seed=0), Decoder(TINY, seed=0)
    seq = tokens(7, 2, 12)
    assert (moe(seq) - dense(seq)).abs().max() > 1e-2
    check_cached_matches_full(moe, make_kv("contiguous", moe_cfg), lengths=[5, 9], steps=3)
    # the expert loop equals the per-token definition: sum of top-k experts, renormalized weights
    layer = moe.blocks[0].mlp
    x = torch.randn(3, 5, TINY.d_model, generator=torch.Generator().manual_seed(8))
    expected = torch.zeros_like(x)
    for idx in torch.cartesian_prod(torch.arange(3), torch.arange(5)):
        xi = x[idx[0], idx[1]]
        w, e = (xi @ layer.router.T).softmax(-1).topk(2)
        for wj, ej in zip(w / w.sum(), e):
            gate, up = (layer.w_gate_up[ej] @ xi).chunk(2)
            expected[idx[0], idx[1]] += wj * (layer.w_down[ej] @ (F.silu(gate) * up))
    torch.testing.assert_close(layer(x), expected, atol=1e-5, rtol=1e-5)


# ---------------------------------------------------------------- allocators

def test_paged_allocator_runs_out_clearly_and_reuses_freed_blocks():
    kv = PagedKV(TINY, num_blocks=6, max_seqs=4, block_size=4)  # 5 usable blocks, 20 tokens
    a = kv.allocate(9)                 # 3 blocks
    assert kv.num_free_blocks == 2 and len(kv.blocks_of(a)) == 3
    kv.grow(a, 12)                     # still 3 blocks
    assert kv.num_free_blocks == 2
    with pytest.raises(OutOfKVMemory, match="blocks"):
        kv.allocate(12)                # needs 3, 2 free
    assert kv.num_free_blocks == 2     # nothing leaked by the failed request
    b = kv.allocate(8)
    with pytest.raises(OutOfKVMemory):
        kv.grow(b, 9)
    freed = kv.blocks_of(a)
    kv.free(a)
    c = kv.allocate(12)
    assert sorted(kv.blocks_of(c)) == sorted(freed)
    assert kv.block_table[c, :3].tolist() == kv.blocks_of(c)
    assert 0 not in kv.blocks_of(b) + kv.blocks_of(c)  # block 0 is the null block
    with pytest.raises(ValueError):
        kv.free(a if a != c else 3)    # not allocated


def test_contiguous_slots_run_out_and_check_lengths():
    kv = ContiguousKV(TINY, max_seqs=2)
    s0, s1 = kv.allocate(10), kv.allocate(TINY.max_seq)
    with pytest.raises(OutOfKVMemory, match="slots"):
        kv.allocate(1)
    kv.free(s0)
    assert kv.allocate(5) == s0
    with pytest.raises(ValueError, match="max_seq"):
        kv.grow(s1, TINY.max_seq + 1)


def test_small_config_is_the_documented_size():
    assert 300e6 < SMALL.params() < 320e6
    assert SMALL.kv_bytes_per_token() == 2 * 4 * 4 * 128 * 2
    assert SMALL.n_kv_heads < SMALL.n_heads and SMALL.dtype == torch.bfloat16
