"""ch15 serving pairs on a CPU (TINY decoder): the engines give the tokens of plain greedy
decoding, the paged budget admits more sequences, chunked prefill gives the same logits,
prompt lookup accepts drafts and keeps greedy's tokens."""
from __future__ import annotations

import torch

from ch15._continuous_batching_common import Continuous, ContinuousEngine, Static, StaticEngine
from ch15._paged_kv_common import ContiguousBudget, PagedBudget
from ch15._prefill_decode_split_common import ChunkedPrefill, WholePrompt
from ch15._speculative_decoding_common import Context, PromptLookup, TargetOnly, propose
from core.benchmark import BenchContext
from core.goodput import replay, token_table

CTX = BenchContext(seed=3, device="cpu")


def bench(cls):
    b = cls()
    b.ctx = CTX
    b.setup(CTX)
    return b


def greedy_table(b, inputs):
    requests = b.requests(inputs)
    ref = b.model.generate([list(r.prompt) for r in requests], [r.max_new for r in requests])
    return [row + [-1] * (b.output_len()[1] - len(row)) for row in ref]


def test_static_and_continuous_serve_greedy_tokens_and_differ_in_schedule():
    static, continuous = bench(Static), bench(Continuous)
    inputs = static.make_inputs(11)
    expected = greedy_table(static, inputs)
    assert static.run(inputs).tolist() == expected
    assert continuous.run(inputs).tolist() == expected
    trace = static.trace(5)
    a, b = replay(static.engine(), trace), replay(continuous.engine(), trace)
    assert token_table(a) == token_table(b)
    # the schedules differ: a static engine admits nothing while its batch runs
    engine = StaticEngine(static.model, static.make_kv(), 2)
    for r in trace.requests[:3]:
        engine.add(r)
    engine.step()
    assert len(engine.running) == 2 and len(engine.queue) == 1
    while any(not s.done for s in engine.running):
        engine.step()
        assert len(engine.queue) == 1 or not engine.running
    cont = ContinuousEngine(static.model, static.make_kv(), 2)
    first = trace.requests[:2]
    for r in trace.requests[:3]:
        cont.add(r)
    while cont.queue:
        cont.step()
    if first[0].max_new != first[1].max_new:  # the third joined while the longer one still ran
        assert {s.request.id for s in cont.running} & {r.id for r in first}


def test_paged_budget_admits_more_sequences_with_the_same_bytes_and_tokens():
    contiguous, paged = bench(ContiguousBudget), bench(PagedBudget)
    ec, ep = contiguous.engine(), paged.engine()
    assert ec.kv.nbytes == ep.kv.nbytes
    inputs = contiguous.make_inputs(7)
    for engine in (ec, ep):
        for r in contiguous.requests(inputs):
            engine.add(r)
        engine.step()
    assert len(ec.running) == contiguous.budget.contiguous_slots
    assert len(ep.running) > 2 * len(ec.running)
    out = contiguous.run(inputs)
    assert out.tolist() == greedy_table(contiguous, inputs)
    assert torch.equal(out, paged.run(inputs))


def test_chunked_prefill_same_logits_and_tokens_as_whole_prompt():
    whole, chunked = bench(WholePrompt), bench(ChunkedPrefill)
    inputs = whole.make_inputs(4)
    expected = greedy_table(whole, inputs)
    assert whole.run(inputs).tolist() == expected
    assert chunked.run(inputs).tolist() == expected
    # the logits of a chunked prompt equal the one-pass prefill's
    from ch15._prefill_decode_split_common import Chunk, mixed_forward
    from ch15.kv import ContiguousKV
    model, cfg = whole.model, whole.sizes.cfg
    prompt = torch.randint(0, cfg.vocab, (1, 29), generator=torch.Generator().manual_seed(0))
    kv = ContiguousKV(cfg, 2)
    one_pass = model.prefill(prompt, kv, torch.tensor([0]))
    width, size = 2, 8
    pad = torch.zeros(width, dtype=torch.long)
    for start in range(0, 29, size):
        piece = prompt[0, start:start + size].tolist()
        logits = mixed_forward(model, kv, width, size, cfg.max_seq, pad, torch.tensor([1, 1]), pad,
                               False, Chunk(1, start, piece))
    torch.testing.assert_close(logits[-1], one_pass[0], atol=1e-4, rtol=0)
    # a chunked engine interleaves: a running sequence gets a token while a prompt is chunked
    trace = whole.trace(2)
    assert token_table(replay(whole.engine(), trace)) == token_table(replay(chunked.engine(), trace))


def served(spec, engine, inputs) -> list[list[int]]:
    """Every request of `inputs` served to the end by `engine`: each row's tokens, padded
    with -1 to the longest output as the pair's run() returns them."""
    for r in spec.requests(inputs):
        engine.add(r)
    table = {r.id: [] for r in spec.requests(inputs)}
    while not engine.idle():
        for rid, tok in engine.step():
            table[rid].append(tok)
    return [row + [-1] * (spec.output_len()[1] - len(row)) for row in table.values()]


def test_prompt_lookup_accepts_drafts_and_keeps_greedy_tokens():
    assert propose([1, 2, 3, 9, 1, 2, 3], k=3) == [9, 1, 2]
    assert propose([5, 6, 7], k=2) == []
    target, spec = bench(TargetOnly), bench(PromptLookup)
    inputs = target.make_inputs(9)
    expected = greedy_table(target, inputs)
    assert target.run(inputs).tolist() == expected
    engine = spec.engine()
    got = served(spec, engine, inputs)
    assert got == expected
    assert engine.accepted > 0 and engine.passes < sum(r.max_new - 1 for r in spec.requests(inputs))


def test_the_indexed_context_proposes_what_the_scan_does():
    """Context keeps the n-gram index as tokens arrive; at every length of random token
    streams (a small vocabulary, so n-grams repeat) it proposes exactly what propose()'s scan
    of the whole context does."""
    gen = torch.Generator().manual_seed(0)
    for trial in range(20):
        tokens = torch.randint(0, 3 + trial % 5, (120,), generator=gen).tolist()
        context = Context(tokens[:5])
        while len(context.tokens) < len(tokens):
            end = len(context.tokens)
            assert context.tokens == tokens[:end]
            assert context.propose(4) == propose(tokens[:end], 4), (trial, end)
            context.extend(tokens[end:end + 1 + (end % 3 == 0)])  # one or two at a time


def test_without_drafts_a_step_is_the_plain_decode_pass(monkeypatch):
    """No row has a draft: the engine runs the 1-token decode pass, not a k + 1 wide verify
    pass, and still emits exactly the target's greedy tokens."""
    target, spec = bench(TargetOnly), bench(PromptLookup)
    inputs = target.make_inputs(9)
    monkeypatch.setattr(Context, "propose", lambda self, k=4: [])
    verified = []
    monkeypatch.setattr("ch15._speculative_decoding_common.verify_logits",
                        lambda *a, **kw: verified.append(1))
    engine = spec.engine()
    got = served(spec, engine, inputs)
    assert got == greedy_table(target, inputs) and not verified and engine.passes > 0


def test_smoke_mode_shrinks_the_trace_and_the_offline_batch_on_the_gpu_sizes_only():
    """`bench run --mode smoke` shortens the goodput trace, the offline batch and the outputs
    (not the model, not the rate); a full run keeps the measured sizes, and the CPU's tiny
    sizes stay as they are."""
    from ch15._continuous_batching_common import SMOKE_BATCH, SMOKE_MAX_OUTPUT, SMOKE_REQUESTS
    from ch15._paged_kv_common import PagedBudget
    from ch15._speculative_decoding_common import SpecBench

    for stem in (Continuous, ChunkedPrefill, PagedBudget, SpecBench):
        full, smoke, cpu = stem(), stem(), stem()
        full.ctx = BenchContext(device="cuda")
        smoke.ctx = BenchContext(device="cuda", mode="smoke")
        cpu.ctx = BenchContext(device="cpu", mode="smoke")
        assert full.sizes == stem.gpu
        assert smoke.sizes.requests == min(stem.gpu.requests, SMOKE_REQUESTS)
        assert smoke.sizes.batch == min(SMOKE_BATCH, stem.gpu.batch)
        assert max(smoke.output_len()) <= SMOKE_MAX_OUTPUT < max(full.output_len())
        assert (smoke.sizes.cfg, smoke.sizes.rate_rps) == (stem.gpu.cfg, stem.gpu.rate_rps)
        assert cpu.sizes == stem.cpu
        if stem.gpu.requests:
            assert full.sizes.requests > SMOKE_REQUESTS
            trace = smoke.trace(7).requests
            assert len(trace) == SMOKE_REQUESTS
            assert max(r.max_new for r in trace) <= SMOKE_MAX_OUTPUT


def test_every_replay_round_serves_the_published_trace_with_fresh_prompts():
    """The harness hands each goodput round a fresh seed; the serving pairs keep the published
    trace's arrivals and lengths (`trace_seed`) and draw only the prompt tokens from it."""
    for stem in (Continuous, ChunkedPrefill):
        b = stem()
        b.ctx = BenchContext(device="cuda")  # the measured GPU trace; nothing runs
        one, two = b.trace(101), b.trace(202)
        shape = [(r.arrival_s, len(r.prompt), r.max_new) for r in one.requests]
        assert shape == [(r.arrival_s, len(r.prompt), r.max_new) for r in two.requests]
        assert sum(x.prompt != y.prompt for x, y in zip(one.requests, two.requests)) == len(shape)
        assert f"numpy seed {stem.trace_seed}, prompt tokens from seed 101" in one.description
