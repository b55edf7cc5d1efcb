"""core.child.run_pair in this process (no subprocess): the cheaper edge cases of a pair run."""
from __future__ import annotations

import pytest

import random

import torch

from core.benchmark import Benchmark, Requirements
from core.child import run_pair
from core.pairfile import PairError, load_benchmark, unmet_requirement
from core.discovery import select
from tests.conftest import cpu_only, spec_for, vec_chapter_files, vec_pair_file

pytestmark = cpu_only


def _run(root, target="ch95", seed=7, **kw):
    (pair, examples), = select([target], root)
    result = run_pair(spec_for(pair, examples, **kw), random.Random(seed))
    return result, {e.name: e for e in result.examples}


def test_good_pair_in_process(in_process_root, make_chapter):
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file("return torch.add(*inputs)")))
    result, rows = _run(in_process_root, iterations=4)
    assert result.status == "ok" and rows["vec"].status == "ok"
    assert rows["vec"].timing.stats.n == 4 and result.baseline.stats.n == 4
    assert result.baseline.workload.bytes == 3 * 64 * 4
    assert result.baseline.workload.bound == "memory"
    # the integrity record says which checks ran: two verification seeds, a fresh input set
    # per timed call (4 per side), one kept call per side and round (two rounds for 4 samples),
    # its seed recorded, and a timed-output check of the variant per round
    assert len(result.integrity.verify_seeds) == 2 and result.rounds == 2
    assert result.integrity.fresh_sets == 8
    assert len(result.integrity.timed_seeds) == 4 and result.integrity.timed_output_checks == 2
    assert rows["vec"].verification.checks == 4


def test_every_timed_call_gets_values_no_earlier_call_had(in_process_root, make_chapter):
    import sys

    recording = vec_pair_file("SEEN.append((self.side, inputs[0].clone())); return torch.add(*inputs)",
                              attrs="side = 'optimized'")
    recording = recording.replace("class Bench", "SEEN = []\n\n\nclass Bench")
    make_chapter("ch95", vec_chapter_files(default=recording))
    result, rows = _run(in_process_root, iterations=12, warmup=0)
    assert result.status == "ok" and rows["vec"].status == "ok"
    seen = [x for side, x in sys.modules["ch95.optimized_vec"].SEEN]
    # the two verification calls, the untimed first call, the estimate call, then the 12 timed
    verified, timed = seen[:2], seen[4:]
    assert len(timed) == 12 and result.integrity.fresh_sets == 24
    for i, x in enumerate(timed):  # each differs from every call before it, verified ones too
        assert not any(torch.equal(x, earlier) for earlier in verified + timed[:i]), i


def test_seeds_are_drawn_by_the_harness_and_recorded(in_process_root, make_chapter):
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file()))
    first, _ = _run(in_process_root, seed=1)
    second, _ = _run(in_process_root, seed=2)
    assert first.integrity.verify_seeds != second.integrity.verify_seeds
    assert 0 not in first.integrity.verify_seeds + first.integrity.timed_seeds


def test_baseline_ignoring_the_seed_fails_the_pair(in_process_root, make_chapter):
    files = vec_chapter_files(default=vec_pair_file("return torch.ones(4)"))
    files["baseline_vec.py"] = vec_pair_file("return torch.ones(4)")
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert result.status == "failed"
    assert "ch95/baseline_vec.py" in rows["vec"].reason
    assert "identical for input seeds" in rows["vec"].reason


def test_seed_insensitive_pair_may_opt_out(in_process_root, make_chapter):
    const = vec_pair_file("return torch.ones(4)", attrs="seed_sensitive = False")
    files = vec_chapter_files(default=const)
    files["baseline_vec.py"] = const
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert rows["vec"].status == "ok", rows["vec"].reason


def test_tolerance_tuple_and_teardown(in_process_root, make_chapter):
    # 1% off: fails the fp32 default, passes the variant's own (rtol, atol) tuple
    near = vec_pair_file("return (inputs[0] + inputs[1]) * 1.01",
                         attrs="tolerance = (0.05, 0.0)\n"
                               "def teardown(self):\n    TORN.append(type(self).__name__)")
    files = vec_chapter_files(near="TORN = []\n" + near,
                              strict=vec_pair_file("return (inputs[0] + inputs[1]) * 1.01"))
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert rows["vec_near"].status == "ok", rows["vec_near"].reason
    assert rows["vec_near"].verification.max_rel_err == pytest.approx(0.01, rel=1e-3)
    assert rows["vec_strict"].status == "failed"
    import ch95.optimized_vec_near as module

    assert module.TORN == ["Bench"]  # teardown ran once, after timing


def test_non_tensor_output_is_a_clear_failure(in_process_root, make_chapter):
    make_chapter("ch95", vec_chapter_files(default=vec_pair_file("return 'done'")))
    result, rows = _run(in_process_root)
    assert rows["vec"].status == "failed"
    assert "ch95/optimized_vec.py" in rows["vec"].reason and "return tensors" in rows["vec"].reason


def test_a_variant_with_its_own_input_builder_is_rejected(in_process_root, make_chapter):
    own = vec_pair_file(attrs="def make_inputs(self, seed):\n    return super().make_inputs(seed)")
    make_chapter("ch95", vec_chapter_files(default=own))
    _, rows = _run(in_process_root)
    assert rows["vec"].status == "failed"
    assert "ch95/optimized_vec.py: defines its own make_inputs()" in rows["vec"].reason


def test_reference_catches_a_bug_both_sides_share(in_process_root, make_chapter):
    # both sides compute x - y; the reference (the pair's, in the common class) says x + y:
    # the pair fails at the baseline
    reference = ("\n    def reference(self, inputs):\n"
                 "        return inputs[0].double() + inputs[1].double()\n")
    wrong = vec_pair_file("x, y = inputs\nreturn x - y")
    files = vec_chapter_files(default=wrong)
    files["baseline_vec.py"] = wrong
    files["_vec_common.py"] += reference
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert result.status == "failed" and "disagrees with reference()" in result.reason
    right = wrong.replace("return x - y", "return x + y")
    files = vec_chapter_files(default=right)
    files["baseline_vec.py"] = right
    files["_vec_common.py"] += reference
    make_chapter("ch95", files)
    for name in [m for m in __import__("sys").modules if m.startswith("ch95")]:
        del __import__("sys").modules[name]
    result, rows = _run(in_process_root)
    assert rows["vec"].status == "ok", rows["vec"].reason
    assert result.integrity.reference_checked


def test_stateful_sides_are_verified_from_a_fresh_setup(in_process_root, make_chapter):
    # a running sum: each call adds the inputs to a state; from a fresh setup both sides agree
    stateful = vec_pair_file("self.acc = self.acc + inputs[0]\nreturn self.acc.clone()",
                             attrs="stateful = True", setup="self.acc = torch.zeros(N)")
    stateful = stateful.replace("from ._vec_common import VecBench", "from ._vec_common import N, VecBench")
    files = vec_chapter_files(default=stateful)
    files["baseline_vec.py"] = stateful
    make_chapter("ch95", files)
    result, rows = _run(in_process_root)
    assert rows["vec"].status == "ok", rows["vec"].reason
    assert len(result.integrity.verify_seeds) == 3  # two before timing, one after
    # round 1 always starts both sides from a fresh setup(), and the baseline is set up again
    # to step it to the kept call: that time is reported on its own (on 2xH200 a DDP pair's
    # re-run setups were most of its 168 s), and the timing's share is what is left
    i = result.integrity
    assert 0 < i.state_setup_s <= i.fresh_s + i.checks_s and i.timing_s > 0


def test_load_benchmark_messages(in_process_root, make_chapter):
    chapter = make_chapter("ch95", {
        "_vec_common.py": vec_chapter_files()["_vec_common.py"],
        "baseline_raises.py": "def get_benchmark():\n    raise KeyError('no weights')\n",
        "baseline_missing_import.py": "import not_a_real_module_xyz\n",
        "baseline_ok.py": vec_pair_file(),
    })
    with pytest.raises(PairError, match=r"ch95/baseline_raises\.py: get_benchmark\(\) raised KeyError"):
        load_benchmark(chapter / "baseline_raises.py")
    with pytest.raises(PairError, match=r"ch95/baseline_missing_import\.py: import failed: "
                                        r"ModuleNotFoundError"):
        load_benchmark(chapter / "baseline_missing_import.py")
    assert load_benchmark(chapter / "baseline_ok.py").supports_cpu is True


def test_unmet_requirements_on_cpu():
    class Gpu(Benchmark):
        pass

    class Cpu(Benchmark):
        supports_cpu = True

    class Portable(Benchmark):
        requires = Requirements(cuda=False)

    assert "needs a CUDA GPU" in unmet_requirement(Gpu(), "cpu")
    assert unmet_requirement(Cpu(), "cpu") is None
    assert unmet_requirement(Portable(), "cpu") is None
    assert "needs a CUDA GPU" in unmet_requirement(object(), "cpu")  # contract defaults


@pytest.mark.parametrize("goal, rel_ci, hard_s", [("speed", 0.01, 30.0), ("compile_time", 0.05, 10.0)])
def test_a_time_beside_another_goal_is_context(in_process_root, make_chapter, monkeypatch, goal,
                                              rel_ci, hard_s):
    """A pair gated on another goal reports its time beside it: timed to ±5% or 10 s per side
    (core.timing.context_policy), not to ±1% or 30 s as a speed pair is."""
    import core.timing

    make_chapter("ch95", vec_chapter_files(default=vec_pair_file(
        "return torch.add(*inputs)", attrs=f"goal = {goal!r}")))
    seen = []
    real = core.timing.interleaved
    monkeypatch.setattr(core.timing, "interleaved",
                        lambda sides, policy, *a, **k: (seen.append(policy), real(sides, policy, *a, **k))[1])
    result, rows = _run(in_process_root, iterations=None, warmup=1)
    assert rows["vec"].status == "ok", rows["vec"].reason
    assert (seen[0].target_rel_ci, seen[0].hard_time_s) == (rel_ci, hard_s)
