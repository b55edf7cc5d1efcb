"""`tools new-pair`: put a candidate kernel beside an existing baseline and let the harness
judge it — the book's AI-assisted kernel loop, with the harness as the judge.

A candidate (one an assistant wrote, or a person) is a file:

    .py  defines `candidate(inputs)`: it takes what the baseline's run() takes (the object
         the baseline's make_inputs() returns) and returns the same output. Triton kernels,
         torch code, anything importable.
    .cu  exports `extern "C" AISP_API int candidate(in..., out, int64_t n, cudaStream_t)`
         (core/include/aisp.cuh): the input tensors in order, then an output tensor shaped
         and typed like the baseline's output (NaN-filled by the harness), then its element
         count; the harness appends the stream.

The scaffold writes two files into the baseline's chapter, and refuses to overwrite:

    chNN/_<stem>_<name>_candidate.(py|cu)   the candidate, copied
    chNN/optimized_<stem>_<name>.py         a variant of the pair: the baseline's class with
                                            only run() replaced by a call to the candidate

so it inherits the baseline's inputs, reference, tolerance and workload, and nothing else
can differ. The harness then runs that one variant as it runs every pair (its own process,
fresh inputs on every call, outputs compared on several seeds, timed outputs re-checked,
clocks and harness functions watched), and `verdict` turns its row into ACCEPTED or
REJECTED with the reason. A rejected candidate's files stay for inspection; delete them or
fix the candidate and run again with --force.
"""
from __future__ import annotations

import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from core.record import ExampleResult, PairResult

_NAME = re.compile(r"[a-z][a-z0-9_]*")


class ScaffoldError(ValueError):
    """A candidate or baseline that cannot be scaffolded; the message says what to fix."""


@dataclass(frozen=True)
class Scaffold:
    target: str  # chNN:<stem>_<name>, the name `bench run` takes
    optimized: Path
    candidate: Path


def scaffold(candidate: Path, baseline: Path, name: str, force: bool = False) -> Scaffold:
    """Write the candidate's copy and its optimized file next to `baseline`."""
    candidate, baseline = Path(candidate), Path(baseline)
    if not candidate.is_file():
        raise ScaffoldError(f"{candidate}: no such file")
    if candidate.suffix not in (".py", ".cu"):
        raise ScaffoldError(f"{candidate}: a candidate is a .py file defining candidate(inputs) "
                            f"or a .cu file exporting candidate(...)")
    if not (baseline.is_file() and baseline.name.startswith("baseline_") and baseline.suffix == ".py"
            and re.fullmatch(r"ch\d\d", baseline.parent.name)):
        raise ScaffoldError(f"{baseline}: not a baseline file; pass chNN/baseline_<stem>.py "
                            f"(`bench list-targets` lists the pairs)")
    if not _NAME.fullmatch(name):
        raise ScaffoldError(f"--name {name!r}: use lower-case letters, digits and _ "
                            f"(it becomes part of a file and a module name)")
    chapter, stem = baseline.parent, baseline.stem[len("baseline_"):]
    copy = chapter / f"_{stem}_{name}_candidate{candidate.suffix}"
    optimized = chapter / f"optimized_{stem}_{name}.py"
    existing = [p for p in (copy, optimized) if p.exists()]
    if existing and not force:
        raise ScaffoldError(f"{existing[0]} exists; pick another --name, or pass --force to "
                            f"replace it")
    if candidate.resolve() != copy.resolve():
        shutil.copyfile(candidate, copy)
    optimized.write_text(_optimized_source(chapter.name, stem, name, candidate, copy))
    return Scaffold(f"{chapter.name}:{stem}_{name}", optimized, copy)


# get_benchmark is the baseline's class, or a function that makes one
_BASELINE_CLASS = ("# the baseline's benchmark class (get_benchmark is the class, or a function making one)\n"
                   "Baseline = (baseline.get_benchmark if isinstance(baseline.get_benchmark, type)\n"
                   "            else type(baseline.get_benchmark()))\n")


def _optimized_source(chapter: str, stem: str, name: str, original: Path, copy: Path) -> str:
    head = (f'"""Candidate `{name}` for {chapter}:{stem}, scaffolded by `aisp tools new-pair` '
            f'from {original.name}.\n\n'
            f"The baseline's set-up, inputs, reference, tolerance and workload are inherited "
            f"unchanged;\nonly run() differs: it calls the candidate in {copy.name}.\n"
            f'Edit the candidate, not this file."""\n')
    if copy.suffix == ".py":
        return (head + f"from {chapter} import baseline_{stem} as baseline\n"
                f"from {chapter}.{copy.stem} import candidate\n\n" + _BASELINE_CLASS + "\n\n"
                f"class Candidate(Baseline):\n"
                f"    def run(self, inputs):\n"
                f"        return candidate(inputs)\n\n\n"
                f"get_benchmark = Candidate\n")
    return (head + "from pathlib import Path\n\nimport torch\n\n"
            f"from {chapter} import baseline_{stem} as baseline\n"
            "from core.benchmark import Requirements\nfrom core.cuda import load\n\n"
            + _BASELINE_CLASS + "\n\n"
            "class Candidate(Baseline):\n"
            "    requires = Requirements(nvcc=True)\n"
            "    supports_cpu = False  # a CUDA kernel\n\n"
            "    def setup(self, ctx):\n"
            "        super().setup(ctx)\n"
            f"        self.kernel = load(Path(__file__).with_name({copy.name!r}))\n"
            "        probe = super().run(self.make_inputs(ctx.seed))  # the output's shape and dtype\n"
            "        self.out = torch.full_like(probe, float('nan'))\n\n"
            "    def run(self, inputs):\n"
            "        tensors = inputs if isinstance(inputs, (tuple, list)) else (inputs,)\n"
            "        self.kernel.candidate(*tensors, self.out, self.out.numel())\n"
            "        return self.out\n\n\n"
            "get_benchmark = Candidate\n")


@dataclass(frozen=True)
class Verdict:
    accepted: bool
    lines: list[str]  # what a reviewer reads: the decision first, then the evidence


def verdict(pair: PairResult | None, target: str) -> Verdict:
    """ACCEPTED when the candidate ran, matched the baseline on every check and was timed;
    REJECTED with the harness's reason otherwise (a SKIP cannot accept: nothing was judged)."""
    row = _row(pair, target)
    if pair is None or row is None:
        return Verdict(False, [f"REJECTED {target}: the run produced no result for it"])
    if row.status == "skipped":
        return Verdict(False, [f"NOT JUDGED {target}: skipped here ({row.reason}); run it where "
                               f"its requirements are met"])
    if row.status != "ok" or row.verification is None or not row.verification.ok:
        return Verdict(False, [f"REJECTED {target}: {row.reason or 'verification failed'}"])
    checks = pair.integrity
    lines = [f"ACCEPTED {target}: outputs match the baseline ({row.verification.message})"]
    lines.append(f"  verified on seeds {checks.verify_seeds}; timed outputs re-checked "
                 f"{checks.timed_output_checks} times on inputs refilled from seeds "
                 f"{checks.timed_seeds}; harness and clocks untouched")
    if row.speedup is not None:
        low, high = row.speedup_ci or (row.speedup, row.speedup)
        lines.append(f"  speedup {row.speedup:.2f}x [{low:.2f}-{high:.2f}] over the baseline "
                     f"({row.baseline_ms:.4g} -> {row.optimized_ms:.4g} ms, median)")
    if row.noisy:
        lines.append(f"  the timing is too noisy to store: {row.noisy}")
    return Verdict(True, lines)


def _row(pair: PairResult | None, target: str) -> ExampleResult | None:
    if pair is None:
        return None
    return next((ex for ex in pair.examples if ex.id == target), None)
