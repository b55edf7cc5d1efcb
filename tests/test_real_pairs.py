"""Every real pair file in the repo imports without a GPU and follows the benchmark contract.

Parametrized at collection time over whatever chapters hold pairs right now.
"""
from __future__ import annotations

import importlib

import pytest

from core import REPO_ROOT, goals
from core.benchmark import Requirements, Tolerance, option, shares_builder, validate
from core.pairfile import unmet_requirement
from core.discovery import discover
from tests.conftest import cpu_only

CHAPTERS = discover(REPO_ROOT)
PAIR_FILES = sorted({f for c in CHAPTERS for p in c.pairs for f in (p.baseline, *(e.optimized for e in p.examples))})


def _id(path):
    return f"{path.parent.name}/{path.name}"


@pytest.mark.parametrize("path", PAIR_FILES, ids=[_id(p) for p in PAIR_FILES])
def test_pair_file_imports_and_follows_contract(path):
    module = importlib.import_module(f"{path.parent.name}.{path.stem}")
    assert callable(getattr(module, "get_benchmark", None)), f"{_id(path)} defines no get_benchmark()"
    bench = module.get_benchmark()
    validate(bench, _id(path))
    assert isinstance(option(bench, "requires", Requirements()), Requirements)
    tolerance = option(bench, "tolerance", None)
    assert tolerance is None or isinstance(tolerance, (Tolerance, tuple, list))
    # the CPU verdict is a clean run-or-skip, never a crash
    why = unmet_requirement(bench, "cpu")
    assert why is None or isinstance(why, str)
    if why is None:
        assert option(bench, "supports_cpu", False) or not option(bench, "requires", Requirements()).cuda


@pytest.mark.parametrize("chapter", [c for c in CHAPTERS if c.pairs], ids=lambda c: c.name)
def test_chapter_has_no_orphan_pair_files(chapter):
    assert [p.name for p in chapter.orphans] == [], (
        f"{chapter.name}: these files have no baseline/optimized partner")



def _runs_on_cpu(path) -> bool:
    bench = importlib.import_module(f"{path.parent.name}.{path.stem}").get_benchmark()
    return unmet_requirement(bench, "cpu") is None


def _ranks(path) -> int:
    bench = importlib.import_module(f"{path.parent.name}.{path.stem}").get_benchmark()
    requires = option(bench, "requires", Requirements())
    return 1 if requires.one_process else requires.gpus  # one process drives all its GPUs


CPU_PAIRS = [(c, p) for c in CHAPTERS for p in c.pairs
             if all(_runs_on_cpu(f) for f in (p.baseline, *(e.optimized for e in p.examples)))
             and _ranks(p.baseline) == 1]
MULTI_RANK_CPU_PAIRS = [(c, p) for c in CHAPTERS for p in c.pairs
                        if _runs_on_cpu(p.baseline) and _ranks(p.baseline) > 1]


@cpu_only
@pytest.mark.parametrize("chapter, pair", CPU_PAIRS, ids=[p.id for _, p in CPU_PAIRS])
def test_cpu_capable_pair_verifies_on_cpu(chapter, pair):
    """Pairs that declare CPU support verify and time on this machine (in-process, 2 samples)."""
    from core.child import run_pair
    from tests.conftest import spec_for

    result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
    for example in result.examples:
        assert example.status == "ok", f"{example.id}: {example.reason}"
        assert example.verification.ok and example.speedup > 0


@pytest.mark.parametrize("chapter, pair", [(c, p) for c in CHAPTERS for p in c.pairs],
                         ids=[p.id for c in CHAPTERS for p in c.pairs])
def test_sides_share_the_baselines_input_builder(chapter, pair):
    """The harness builds inputs with the baseline's make_inputs and hands them to every side."""
    def load(path):
        return importlib.import_module(f"{path.parent.name}.{path.stem}").get_benchmark()

    baseline = load(pair.baseline)
    for example in pair.examples:
        assert shares_builder(baseline, load(example.optimized)), (
            f"{example.id}: defines its own make_inputs; define it once in the stem's common class")


def test_stored_speedups_below_one_are_declared():
    """Every stored speedup below 1.0 belongs to a declared negative result or a teaching pair:
    a slower optimized side is never presented as an optimization. For a goal "memory" or
    "compile_time" variant the same holds of the memory or cold start it saves."""
    from core import expectations as expect

    undeclared = []
    for chapter in CHAPTERS:
        examples = {e.name: e for p in chapter.pairs for e in p.examples}
        for path in sorted(chapter.path.glob("expectations_*.json")):
            for name, entry in expect.load(path).items():
                measure = goals.goal_of(entry.get("goal", "speed")).field
                gated = entry.get(measure, entry["speedup"])
                if gated >= 1.0 or name not in examples:
                    continue
                bench = importlib.import_module(
                    f"{chapter.name}.{examples[name].optimized.stem}").get_benchmark()
                if not (option(bench, "negative_result", "") or option(bench, "teaching", False)):
                    undeclared.append(f"{path.parent.name}/{path.name}: {name} {entry['speedup']}x")
    assert not undeclared, undeclared
