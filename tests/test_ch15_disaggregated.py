"""ch15 disaggregated_inference on a CPU (TINY decoder, both "GPUs" are the CPU): the sides
give greedy decoding's tokens, the optimized side prefills only with GPU 0's model and
decodes only with GPU 1's, the KV handoff copies exactly a sequence's prompt positions, the
dispatcher balances the replicas, and the driver launches every lane before reading any."""
from __future__ import annotations

from collections import Counter

import pytest
import torch

from ch15._disaggregated_inference_common import (Disaggregated, Lane, Launched, Monolithic, Replicas,
                                                  drive, handoff)
from ch15.kv import ContiguousKV
from core.goodput import Request, replay, token_table
from tests.test_ch15_serving import CTX, bench  # a side set up on the CPU, seed 3


@pytest.fixture(scope="module")
def sides():
    return bench(Monolithic), bench(Disaggregated)


def spy(monkeypatch, model, name, calls):
    """Record (model index, method, input shape) of every call to model.<name>."""
    real = getattr(model, name)

    def wrapped(tokens, *args, **kw):
        calls.append((name, tuple(tokens.shape)))
        return real(tokens, *args, **kw)

    monkeypatch.setattr(model, name, wrapped)


def test_both_sides_serve_greedy_tokens_offline_and_in_a_replay(sides):
    mono, disagg = sides
    inputs = mono.make_inputs(11)
    requests = mono.requests(inputs)
    greedy = mono.models[0].generate([list(r.prompt) for r in requests], [r.max_new for r in requests])
    expected = [row + [-1] * (mono.output_len()[1] - len(row)) for row in greedy]
    assert mono.run(inputs).tolist() == expected
    assert disagg.run(inputs).tolist() == expected
    trace = mono.trace(0)
    assert any(r.max_new == 1 for r in trace.requests)  # one-token answers: no decode row at all
    assert token_table(replay(mono.engine(), trace)) == token_table(replay(disagg.engine(), trace))


def test_the_weights_are_the_same_on_both_gpus_but_distinct_models(sides):
    mono, _ = sides
    first, second = mono.models
    assert first is not second
    for a, b in zip(first.parameters(), second.parameters()):
        assert torch.equal(a, b)


def test_optimized_prefills_only_on_gpu0_and_decodes_only_on_gpu1(sides, monkeypatch):
    mono, disagg = sides
    calls = [[], []]
    for i, model in enumerate(disagg.models):
        for name in ("prefill", "decode"):
            spy(monkeypatch, model, name, calls[i])
    inputs = disagg.make_inputs(2)
    disagg.run(inputs)
    requests = disagg.requests(inputs)
    width = disagg.sizes.width
    assert Counter(name for name, _ in calls[0]) == {"prefill": len(requests)}
    assert {name for name, _ in calls[1]} == {"decode"}
    # fixed shapes: each prompt alone, every decode step at the baseline replica's width
    assert sorted(shape for _, shape in calls[0]) == sorted((1, len(r.prompt)) for r in requests)
    assert {shape for _, shape in calls[1]} == {(width,)}
    # the baseline: each replica both prefills and decodes, at the same shapes
    calls = [[], []]
    for i, model in enumerate(mono.models):
        for name in ("prefill", "decode"):
            spy(monkeypatch, model, name, calls[i])
    mono.run(inputs)
    for replica in calls:
        assert {name for name, _ in replica} == {"prefill", "decode"}
        assert {shape for name, shape in replica if name == "decode"} == {(width,)}
    assert sum(name == "prefill" for replica in calls for name, _ in replica) == len(requests)


def test_optimized_admits_a_prompt_only_into_a_free_decode_row(sides):
    _, disagg = sides
    engine = disagg.engine()
    width = disagg.sizes.width
    for r in disagg.requests(disagg.make_inputs(4)) * 2:  # more requests than the 2 × width rows
        engine.add(Request(len(engine.prefill.queue), 0.0, r.prompt, 16))
    while not engine.idle():
        engine.step()
        for group in engine.prefill.groups:
            assert len(group.running) + group.reserved <= width


def test_kv_handoff_copies_exactly_the_sequences_prompt_positions(sides):
    _, disagg = sides
    cfg, (gpu0, gpu1) = disagg.sizes.cfg, disagg.models
    prompt = Request(0, 0.0, tuple(range(5, 5 + 21)), 4)
    src, dst, local = ContiguousKV(cfg, 1), ContiguousKV(cfg, 3), ContiguousKV(cfg, 3)
    gpu0.prefill(torch.tensor([prompt.prompt]), src, torch.tensor([0]))
    gpu1.prefill(torch.tensor([prompt.prompt]), local, torch.tensor([2]))  # prefilled on GPU 1 itself
    dst.k.fill_(7.0)
    dst.v.fill_(7.0)
    assert handoff(src, 0, dst, 2, len(prompt.prompt)) is None  # on a CPU: a plain copy
    n = len(prompt.prompt)
    assert torch.equal(dst.k[:, 2, :n], src.k[:, 0, :n]) and torch.equal(dst.v[:, 2, :n], src.v[:, 0, :n])
    assert torch.equal(dst.k[:, 2, :n], local.k[:, 2, :n]) and torch.equal(dst.v[:, 2, :n], local.v[:, 2, :n])
    for cache in (dst.k, dst.v):  # nothing past the prompt, nothing in other slots
        assert bool((cache[:, 2, n:] == 7.0).all()) and bool((cache[:, :2] == 7.0).all())


def test_the_dispatcher_sends_each_request_to_the_less_loaded_replica(sides):
    mono, _ = sides
    engine: Replicas = mono.engine()
    requests = mono.requests(mono.make_inputs(6))
    for r in requests:
        engine.add(r)
        loads = [Replicas.load(x) for x in engine.replicas]
        assert max(loads) - min(loads) <= 1
    engine.step()  # both replicas admit and run their share
    assert all(x.running for x in engine.replicas)
    busy, other = engine.replicas
    while other.running or other.launched:  # drain replica 1 alone; replica 0 keeps its load
        drive([other])
    extra = Request(99, 0.0, requests[0].prompt, 2)
    engine.add(extra)
    assert [q.id for q in other.queue] == [99] and Replicas.load(busy) > 0


class FakeEvent:
    def __init__(self, ready: bool):
        self.ready = ready

    def query(self) -> bool:
        return self.ready


class FakeLane(Lane):
    def __init__(self, name: str, log: list[str], ready: bool = True):
        self.name, self.log, self.ready, self.work = name, log, ready, 1

    def can_launch(self) -> bool:
        return self.work > 0

    def launch(self) -> Launched:
        self.work -= 1
        self.log.append(f"launch {self.name}")
        return Launched(torch.tensor([0]), FakeEvent(self.ready), self.finish)

    def finish(self, tokens: list[int]) -> list[tuple[int, int]]:
        self.log.append(f"collect {self.name}")
        return [(0, tokens[0])]


def test_drive_launches_every_lane_before_reading_any_and_never_waits():
    log: list[str] = []
    gpu0, gpu1, slow = FakeLane("gpu0", log), FakeLane("gpu1", log), FakeLane("slow", log, ready=False)
    assert len(drive([gpu0, gpu1, slow])) == 2
    assert log == ["launch gpu0", "launch gpu1", "launch slow", "collect gpu0", "collect gpu1"]
    assert drive([gpu0, gpu1, slow]) == [] and slow.launched is not None  # still running: not waited for
    slow.launched.event.ready = True
    assert len(drive([gpu0, gpu1, slow])) == 1 and log[-1] == "collect slow"
