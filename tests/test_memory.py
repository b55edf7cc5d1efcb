"""Goal "memory" (core.memory and its gate), on CPU with a fake allocator.

The GPU side (real allocator counts, a planted pair that moves its intermediate into setup())
runs in tests/test_gpu.py; here the accounting rules themselves: what setup() keeps and what
a first call keeps are resident, one later call's peak comes on top, and the gate, the
expectations file, the table and the stored entry judge the memory saved, not the time.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import torch

from core import expectations as expect
from core.benchmark import Benchmark, Workload, validate
from core.goals import check_contract
from core.discovery import Pair
from core.memory import Footprint, footprint, largest
from core.record import ExampleResult, PairResult, RunRecord, SideResult
from core.report import notes, row
from core.runner import annotate, expectation_entry
from core.stats import summarize
from core.goals import ratio_of


class FakeAllocator:
    """Counts bytes like torch.cuda's allocated/peak counters."""

    def __init__(self) -> None:
        self.now = self.top = 0

    def alloc(self, n: int) -> None:
        self.now += n
        self.top = max(self.top, self.now)

    def free(self, n: int) -> None:
        self.now -= n

    def allocated(self) -> int:
        return self.now

    def reset_peak(self) -> None:
        self.top = self.now

    def peak(self) -> int:
        return self.top

    def sync(self) -> None:
        pass


MIB = 2**20


def whole_layer(mem: FakeAllocator):
    """A call that holds a 256 MiB intermediate, then returns a 16 MiB output (freed by the
    caller when it drops the output)."""
    def call():
        mem.alloc(256 * MIB)
        mem.alloc(16 * MIB)
        mem.free(256 * MIB)
        return Output(mem, 16 * MIB)
    return call


class Output:
    def __init__(self, mem: FakeAllocator, n: int):
        self.mem, self.n = mem, n

    def __del__(self):
        self.mem.free(self.n)


def test_the_call_peak_comes_on_top_of_what_setup_keeps():
    mem = FakeAllocator()
    mem.alloc(999 * MIB)  # other sides' weights and the shared inputs: not this side's
    got = footprint(lambda i: whole_layer(mem)(), setup_bytes=128 * MIB, meter=mem)
    assert got == Footprint(resident_bytes=128 * MIB, call_bytes=272 * MIB)
    assert got.peak_bytes == 400 * MIB


def test_moving_the_intermediate_into_setup_saves_nothing():
    """The planted cheat of tests/test_gpu.py, on the fake allocator: a workspace allocated
    in setup() is counted as held, so the peak is the same as the baseline's."""
    mem = FakeAllocator()
    honest = footprint(lambda i: whole_layer(mem)(), setup_bytes=128 * MIB, meter=mem)

    def into_workspace():
        mem.alloc(16 * MIB)
        return Output(mem, 16 * MIB)
    moved = footprint(lambda i: into_workspace(), setup_bytes=(128 + 256) * MIB, meter=mem)
    assert moved.call_bytes < honest.call_bytes
    assert moved.peak_bytes == honest.peak_bytes


def test_state_the_first_call_creates_and_keeps_is_resident():
    """An optimizer's state (or a pipeline's buffers) appears on the first step and stays."""
    mem = FakeAllocator()
    state = []

    def step():
        if not state:
            mem.alloc(300 * MIB)
            state.append(True)
        mem.alloc(50 * MIB)
        return Output(mem, 50 * MIB)
    got = footprint(lambda i: step(), setup_bytes=100 * MIB, meter=mem)
    assert got == Footprint(resident_bytes=400 * MIB, call_bytes=50 * MIB)


def test_a_one_off_transient_of_the_second_step_is_not_the_steps_footprint():
    """DDP rebuilds its buckets once, in the second step, allocating the new before freeing
    the old (measured on 4xH200: 5.2 GiB on top in step 2, 1.2 GiB in every later step).
    What a steady step needs is the footprint; state kept from step 2 on is resident."""
    mem = FakeAllocator()
    steps = []

    def step():
        steps.append(True)
        if len(steps) == 2:
            mem.alloc(400 * MIB)  # the new buckets, while the old 400 MiB are still held
            mem.free(400 * MIB)
            mem.alloc(20 * MIB)  # kept from step 2 on
        mem.alloc(50 * MIB)
        return Output(mem, 50 * MIB)
    got = footprint(lambda i: step(), setup_bytes=100 * MIB, meter=mem)
    assert got == Footprint(resident_bytes=120 * MIB, call_bytes=50 * MIB)
    assert len(steps) == 3


def test_ranks_report_the_fullest_gpu():
    ranks = [Footprint(100, 900), Footprint(500, 100)]
    assert largest(ranks) == Footprint(100, 900)


def test_goal_must_be_speed_or_memory():
    class Weird(Benchmark):
        goal = "happiness"

        def make_inputs(self, seed):
            return None

        def run(self, inputs):
            return None
    with pytest.raises(TypeError, match="goal must be one of 'speed', 'memory'"):
        validate(Weird(), "ch95/optimized_weird.py")
        check_contract(Weird(), "ch95/optimized_weird.py")


def _side(ms: float, memory: Footprint | None) -> SideResult:
    return SideResult(summarize([ms * (1 + 0.001 * i) for i in range(12)]), Workload(units=1.0,
                                                                                     unit_name="steps"),
                      memory=memory)


def _pair(base_peak: int | None, opt_peak: int | None, *, time_ratio: float = 0.95) -> PairResult:
    base = _side(10.0, Footprint(base_peak // 2, base_peak - base_peak // 2) if base_peak else None)
    opt = _side(10.0 / time_ratio, Footprint(opt_peak // 2, opt_peak - opt_peak // 2) if opt_peak else None)
    ex = ExampleResult(name="pipe_1f1b", id="ch04:pipe_1f1b", file="ch04/optimized_pipe_1f1b.py",
                       goal="memory", timing=opt, speedup=time_ratio,
                       speedup_ci=(time_ratio * 0.7, time_ratio * 1.4))  # a wide, noisy time
    return PairResult(pair="ch04:pipe", baseline=base, examples=[ex])


PAIR = Pair("ch04", "pipe", Path("ch04/baseline_pipe.py"))


def test_a_memory_goal_is_gated_on_the_memory_saved_not_the_time():
    stored = {"pipe_1f1b": {"speedup": 1.0, "goal": "memory", "memory_ratio": 2.0}}
    kept = _pair(4000 * MIB, 2000 * MIB)
    annotate(kept, PAIR, {}, stored)
    ex = kept.examples[0]
    assert ratio_of(ex) == pytest.approx(2.0)
    assert ex.expectation.status == "pass" and "memory saved 2.00x" in ex.expectation.message
    assert not ex.noisy  # the time's wide interval is reported, but memory is what is stored
    lost = _pair(4000 * MIB, 3000 * MIB, time_ratio=1.5)  # faster, but the saving is gone
    annotate(lost, PAIR, {}, stored)
    assert lost.examples[0].expectation.status == "regression"
    assert RunRecord(Path("."), {}, {}, [lost]).exit_code() == 1


def test_a_memory_goal_without_a_measurement_or_a_stored_ratio_is_new():
    no_cuda = _pair(None, None)
    annotate(no_cuda, PAIR, {}, {"pipe_1f1b": {"speedup": 1.0, "goal": "memory", "memory_ratio": 2.0}})
    gate = no_cuda.examples[0].expectation
    assert gate.status == "new" and "measured on CUDA devices only" in gate.message
    older = _pair(4000 * MIB, 2000 * MIB)
    annotate(older, PAIR, {}, {"pipe_1f1b": {"speedup": 1.2}})  # stored before it had a goal
    assert older.examples[0].expectation.status == "new"


def test_the_table_and_the_stored_entry_carry_the_memory():
    pair = _pair(4000 * MIB, 1600 * MIB)
    annotate(pair, PAIR, {}, {})
    ex = pair.examples[0]
    cells = row(ex)
    assert cells[3].startswith("2.50x less memory; time 0.95x")
    note = [line for line in notes([ex]) if line.startswith("MEMORY")]
    assert note and "4,000 MiB → 1,600 MiB per GPU" in note[0], note
    entry = expectation_entry(ex, {"device": "NVIDIA H200"})
    assert entry["goal"] == "memory" and entry["memory_ratio"] == 2.5
    assert entry["baseline_peak_bytes"] == 4000 * MIB and "speedup" in entry


def test_a_memory_entry_without_its_ratio_is_a_clear_error(tmp_path):
    path = tmp_path / "expectations_2x_h200.json"
    path.write_text(json.dumps({"examples": {"pipe_1f1b": {"speedup": 1.0, "goal": "memory"}}}))
    with pytest.raises(expect.ExpectationsError, match="needs a positive number 'memory_ratio'"):
        expect.load(path)


class _Session:
    """What core.goals.memory reads of a PairSession, on the CPU with a fake allocator."""

    def __init__(self, sides):
        import random

        self.device, self.goal_data, self.setup_bytes = "cuda", {}, {}
        self.baseline, self.sides = sides["baseline"], {n: b for n, b in sides.items() if n != "baseline"}
        self.rng, self.checked = random.Random(0), {}
        self.ranks = type("Ranks", (), {"distributed": False})()

    def new_seed(self):
        return self.rng.randrange(2**31)

    def bench(self, name):
        return self.baseline if name == "baseline" else self.sides[name]

    def answer(self, out):
        return out.clone()

    def check_guard(self, when, blame=None):
        pass

    def side_raised(self, name, exc, where):
        raise exc

    def check_output(self, name, expected, actual, where):
        self.checked[name] = (bool(torch.equal(expected, actual)), where)


def test_memory_calls_get_fresh_inputs_and_the_measured_calls_output_is_checked(monkeypatch):
    """PLANTED: a side that steps for real only on its first call after setup() and returns
    that answer again (allocating nothing) where memory is measured. Every measurement call
    gets inputs no earlier call had, and the last call's output is checked against the
    baseline's on them, so its stale answer fails; the honest twin's matches."""
    import core.memory
    from core.goals.memory import Memory

    class Side:
        def __init__(self):
            self.seen, self.first = [], None

        def make_inputs(self, seed):
            return torch.full((4,), float(seed))

        def run(self, x):
            self.seen.append(float(x[0]))
            return x * 2

    class FirstAnswerAgain(Side):
        def run(self, x):
            self.seen.append(float(x[0]))
            self.first = x * 2 if self.first is None else self.first
            return self.first

    mem = FakeAllocator()
    monkeypatch.setattr(core.memory, "CudaMeter", lambda: mem)
    session = _Session({"baseline": Side(), "honest": Side(), "stale": FirstAnswerAgain()})
    Memory().after_setup(session, ["honest", "stale"])
    seen = session.baseline.seen
    assert len(seen) == len(set(seen)) == core.memory.CALLS  # fresh values on every call
    assert session.sides["stale"].seen == seen  # the same values for every side
    assert session.checked["honest"] == (True, " on the memory measurement's last call")
    assert session.checked["stale"][0] is False
