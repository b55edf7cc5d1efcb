"""ch15.sweep_speculative on the CPU (TINY decoder): the oracle draft run through the pair's
verify() keeps the target-only greedy tokens at any acceptance, and its tokens per verify
pass follow the acceptance model (1 at alpha = 0, k + 1 at alpha = 1, near the analytic
mean at alpha = 0.7)."""
from __future__ import annotations

import random

import pytest

from ch15.sweep_speculative import (OracleDraft, analytic_break_even, continuations, crossing,
                                    expected_tokens_per_pass, make_bench, oracle_loop, target_only)

K = 4


@pytest.fixture(scope="module")
def served():
    """The pair's CPU model and prompts, outputs of 64 so each row takes tens of passes."""
    bench = make_bench("cpu", seed=3, output_len=(64, 64))
    requests = bench.requests(bench.make_inputs(1))
    base = target_only(bench, requests)
    return bench, requests, base, continuations(bench, requests, K)


def test_the_continuation_is_plain_greedy_decoding(served):
    bench, requests, base, conts = served
    ref = bench.model.generate([list(r.prompt) for r in requests], [r.max_new for r in requests])
    assert base.table.tolist() == ref
    assert all(conts[r.id][:r.max_new] == ref[r.id] and len(conts[r.id]) == r.max_new + K
               for r in requests)


@pytest.mark.parametrize("alpha", [0.0, 0.7, 1.0])
def test_oracle_drafts_keep_greedy_tokens_and_follow_the_acceptance_model(served, alpha):
    bench, requests, base, conts = served
    loop = oracle_loop(bench, requests, conts, alpha, K, seed=0)
    assert loop.table.tolist() == base.table.tolist()
    decode_tokens = max(r.max_new for r in requests) - 1
    if alpha == 0.0:  # every pass keeps only the target's own token
        assert loop.tokens_per_pass == 1.0 and loop.passes == decode_tokens
    elif alpha == 1.0:  # every pass keeps all k drafts plus the target's token
        assert loop.tokens_per_pass == K + 1 and loop.passes == -(-decode_tokens // (K + 1))
    else:  # ~90 sequence-passes: the analytic 2.77 within ~3 standard errors (sd ~1.56)
        assert abs(loop.tokens_per_pass - expected_tokens_per_pass(alpha, K)) < 0.5
        assert 1.0 < loop.tokens_per_pass < K + 1


def test_the_oracle_draft_is_right_until_its_first_miss():
    truth = list(range(10, 30))
    for alpha in (0.0, 0.5, 1.0):
        draft = OracleDraft(truth, alpha, random.Random(0), vocab=64)
        draft.extend([10, 11])  # two tokens emitted: the next draft starts at truth[2]
        for _ in range(50):
            d = draft.propose(6)
            hits = [a == b for a, b in zip(d, truth[2:8])]
            first_miss = hits.index(False) if False in hits else 6
            assert not any(hits[first_miss:]) and len(d) == 6
            assert alpha != 0.0 or first_miss == 0
            assert alpha != 1.0 or first_miss == 6


def test_expectation_and_break_even():
    assert expected_tokens_per_pass(0.0, 4) == 1.0 and expected_tokens_per_pass(1.0, 4) == 5.0
    assert expected_tokens_per_pass(0.5, 2) == pytest.approx(1.75)
    a = analytic_break_even(2.0, 4)
    assert expected_tokens_per_pass(a, 4) == pytest.approx(2.0)
    assert analytic_break_even(0.9, 4) == 0.0 and analytic_break_even(5.0, 4) is None
    assert crossing([(0.0, 0.5), (0.5, 0.9), (0.6, 1.1)]) == "0.55"
    assert crossing([(0.0, 0.5), (0.9, 0.9)]) == "> 0.9"
