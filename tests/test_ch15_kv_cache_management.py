"""ch15 `kv_cache_management` on a CPU (TINY decoder, fp32): the baseline's fused re-prefill
and the optimized restore + turn prefill give the logits of an uncached forward; the
baseline's return is one [1, C + U] prefill, the optimized never re-prefills a context; the
budget really evicts every conversation before it returns; and a wrong restore, or host KV
not computed from this call's inputs, fails the pair's tolerance / the harness."""
from __future__ import annotations

import random
from dataclasses import replace

import torch

import ch15._kv_cache_management_common as common
from ch15._kv_cache_management_common import KVCacheBench
from ch15.baseline_kv_cache_management import Recompute
from ch15.kv import ContiguousKV
from ch15.optimized_kv_cache_management import OffloadPrefetch
from core.benchmark import BenchContext
from core.child import run_pair
from core.discovery import select
from core.verify import compare
from tests.conftest import spec_for

CTX = BenchContext(seed=3, device="cpu")
FP32 = 1e-4  # what fp32 agreement means here (the paths differ by ~1e-6)


def bench(cls: type[KVCacheBench]) -> KVCacheBench:
    b = cls()
    b.ctx = CTX
    b.setup(CTX)
    return b


def max_diff(a: dict[str, torch.Tensor], b: dict[str, torch.Tensor]) -> float:
    return max(float((a[key] - b[key]).abs().max()) for key in a)


def prefills(b: KVCacheBench) -> list[tuple[int, int | None]]:
    """Record each prefill the model runs as (tokens, start or None for a fresh sequence)."""
    calls = []
    prefill = b.model.prefill

    def wrapped(tokens, kv, slots, lengths=None, start=None):
        calls.append((tokens.shape[1], None if start is None else int(start)))
        return prefill(tokens, kv, slots, lengths, start)
    b.model.prefill = wrapped
    return calls


def test_both_sides_give_the_logits_of_an_uncached_forward():
    base, opt = bench(Recompute), bench(OffloadPrefetch)
    d = base.dims
    tokens = base.make_inputs(11)
    out = base.run(tokens)
    assert {k: (v.shape, v.dtype) for k, v in out.items()} == {
        k: ((d.conversations, d.cfg.vocab), torch.float32) for k in ("first_turn", "returning_turn")}
    assert max_diff(out, opt.run(tokens)) < FP32
    forward = base.model.forward(tokens)  # every conversation as one uncached sequence
    assert float((out["first_turn"] - forward[:, d.context - 1]).abs().max()) < FP32
    assert float((out["returning_turn"] - forward[:, -1]).abs().max()) < FP32
    assert max_diff(out, base.run(base.make_inputs(12))) > 0.5  # the inputs matter


def test_the_budget_evicts_every_conversation_before_it_returns():
    evictions = []
    for cls in (Recompute, OffloadPrefetch):
        b = bench(cls)
        d = b.dims
        assert b.kv.max_seqs == d.resident < d.conversations
        calls = prefills(b)
        b.run(b.make_inputs(2))
        if cls is Recompute:  # every return is a miss: a fused prefill of context + turn
            assert calls[d.conversations:] == [(d.held, None)] * d.conversations
        # first turns evict all but the last `resident`; each return evicts one more
        assert len(b.budget.evicted) == d.conversations - d.resident + d.conversations
        evictions.append(list(b.budget.evicted))
        assert not b.budget.slots  # every slot is free again for the next call
        assert len({b.kv.allocate(d.held) for _ in range(d.resident)}) == d.resident
    assert evictions[0] == evictions[1]  # prefetching ahead does not change who is evicted


def test_recompute_fuses_the_return_and_offload_restores_from_host():
    base, opt = bench(Recompute), bench(OffloadPrefetch)
    d = base.dims
    tokens = base.make_inputs(4)
    base_calls, opt_calls = prefills(base), prefills(opt)
    restored = []
    restore = opt.restore
    opt.restore = lambda conv, slot: (restored.append(conv), restore(conv, slot))
    base.run(tokens)
    opt.run(tokens)
    first = [(d.context, None)] * d.conversations
    assert base_calls == first + [(d.held, None)] * d.conversations  # one [1, C + U] pass each
    assert opt_calls == first + [(d.turn, d.context)] * d.conversations  # no context re-prefilled
    assert restored == list(range(d.conversations))
    # the host copy holds exactly the KV a [1, C] prefill of *this call's* context writes
    kv = ContiguousKV(d.cfg, 1)
    for conv in (0, d.conversations - 1):
        base.model.prefill(tokens[conv, :d.context][None], kv, torch.tensor([0]))
        assert torch.equal(opt.host_k[conv, :, :d.context], kv.k[:, 0, :d.context])
        assert torch.equal(opt.host_v[conv, :, :d.context], kv.v[:, 0, :d.context])


def test_a_budget_that_holds_everything_only_prefills_the_turns(monkeypatch):
    tokens = bench(Recompute).make_inputs(6)
    expected = bench(Recompute).run(tokens)
    monkeypatch.setattr(common, "CPU", replace(common.CPU, resident=common.CPU.conversations + 1))
    for cls in (Recompute, OffloadPrefetch):
        b = bench(cls)
        calls = prefills(b)
        assert max_diff(b.run(tokens), expected) < FP32
        assert not b.budget.evicted
        assert calls[b.dims.conversations:] == [(b.dims.turn, b.dims.context)] * b.dims.conversations


class OtherConversation(OffloadPrefetch):
    """Wrong: restores the next conversation's context KV."""

    def restore(self, conv, slot):
        super().restore((conv + 1) % self.dims.conversations, slot)


class Zeros(OffloadPrefetch):
    """Wrong: restores zeros (the copy never happened)."""

    def restore(self, conv, slot):
        self.kv.k[:, slot].zero_()
        self.kv.v[:, slot].zero_()


def test_a_wrong_restore_is_caught_by_the_tolerance():
    base = bench(Recompute)
    tokens = base.make_inputs(8)
    expected = base.run(tokens)
    assert compare(expected, bench(OffloadPrefetch).run(tokens), base.tolerance).ok
    for cls in (OtherConversation, Zeros):
        out = bench(cls).run(tokens)
        assert torch.equal(out["first_turn"], expected["first_turn"])  # only the return is wrong
        check = compare(expected, out, base.tolerance)
        assert not check.ok and "returning_turn" in check.message, cls.__name__


# Planted cheats, run through the harness's pair session (verification seeds, timed checks
# after in-place refills), in this process.
BASELINE = "from ch15.baseline_kv_cache_management import Recompute\n\nget_benchmark = Recompute\n"
HONEST = "from ch15.optimized_kv_cache_management import OffloadPrefetch\n\nget_benchmark = OffloadPrefetch\n"
STALE = '''
from ch15.optimized_kv_cache_management import OffloadPrefetch


class StaleHost(OffloadPrefetch):
    """Cheat: writes the first turns through to host only the first time it sees an inputs
    tensor; later calls on the same (refilled) tensor restore the host KV of that call."""
    seen = None

    def run(self, tokens):
        self.skip = tokens is self.seen
        self.seen = tokens
        return super().run(tokens)

    def written(self, conv, slot, start, end):
        if not (self.skip and start == 0):
            super().written(conv, slot, start, end)


get_benchmark = StaleHost
'''
FROM_SETUP = '''
from ch15.optimized_kv_cache_management import OffloadPrefetch


class HostKVFromSetup(OffloadPrefetch):
    """Cheat: the host KV is computed once in setup() from fixed tokens; run() skips the
    first turns' write-through and restores that."""

    def setup(self, ctx):
        super().setup(ctx)
        self.ready_made = False
        super().run(self.make_inputs(0))
        self.ready_made = True

    def written(self, conv, slot, start, end):
        if not (self.ready_made and start == 0):
            super().written(conv, slot, start, end)


get_benchmark = HostKVFromSetup
'''


def test_restoring_kv_not_computed_from_this_calls_inputs_fails_verification(in_process_root, make_chapter):
    make_chapter("ch95", {"baseline_kvm.py": BASELINE, "optimized_kvm.py": HONEST,
                          "optimized_kvm_stale.py": STALE, "optimized_kvm_setup.py": FROM_SETUP})
    (pair, examples), = select(["ch95"], in_process_root)
    result = run_pair(spec_for(pair, examples, iterations=3, warmup=1), random.Random(5))
    rows = {row.name: row for row in result.examples}
    assert rows["kvm"].status == "ok", rows["kvm"].reason
    # identity-keyed reuse passes both verification seeds (new tensors each time) and is
    # caught by the timed check after the harness refills the same tensors in place
    stale = rows["kvm_stale"]
    assert stale.status == "failed", stale.reason
    assert "verification failed for a timed call" in stale.reason, stale.reason
    from_setup = rows["kvm_setup"]  # restores KV of other tokens: wrong from the first call
    assert from_setup.status == "failed", from_setup.reason
    assert "verification failed on seed" in from_setup.reason, from_setup.reason
