"""Runs a selection of pairs, each in its own child process, and streams results to disk.

A run directory holds:
    results.jsonl   one line per pair, appended as each pair finishes (survives a crash)
    results.json    the whole run, written at the end (and on Ctrl-C)
    logs/<pair>.log the child's stdout/stderr
"""
from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import time
from dataclasses import dataclass, field
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

from core import REPO_ROOT
from core import expectations as expect
from core.discovery import Example, Pair
from core.metrics import rates
from core.report import write_reports


@dataclass
class RunOptions:
    iterations: int | None = None
    warmup: int | None = None
    seed: int = 0
    timeout_s: float = 600.0
    update_expectations: bool = False
    strict: bool = False
    output_dir: Path = REPO_ROOT / "artifacts" / "runs"
    resume: Path | None = None  # an earlier run directory: its finished pairs are kept
    profile: str = "none"  # none | minimal | deep (core.profiling)
    ncu_replay_mode: str = "kernel"
    ncu_clock_control: str = "none"


@dataclass
class RunResult:
    run_dir: Path
    fingerprint: dict[str, Any]
    ceilings: dict[str, float]
    pairs: list[dict[str, Any]] = field(default_factory=list)
    interrupted: bool = False
    builds: dict[str, Any] = field(default_factory=dict)
    expectation_updates: list[str] = field(default_factory=list)

    @property
    def rows(self) -> list[dict[str, Any]]:
        return [ex for pair in self.pairs for ex in pair["examples"]]

    def exit_code(self, strict: bool = False, updating: bool = False) -> int:
        bad = {"failed"}
        gate_bad = set() if updating else {"regression"} | ({"inconclusive"} if strict else set())
        for row in self.rows:
            if row["status"] in bad or row.get("expectation", {}).get("status") in gate_bad:
                return 1
        return 130 if self.interrupted else 0

    def to_dict(self) -> dict[str, Any]:
        return {"run_dir": str(self.run_dir), "fingerprint": self.fingerprint,
                "ceilings": self.ceilings, "builds": self.builds, "interrupted": self.interrupted,
                "expectation_updates": self.expectation_updates, "pairs": self.pairs}


def child_env(root: Path = REPO_ROOT) -> dict[str, str]:
    path = os.pathsep.join(filter(None, [str(root), str(REPO_ROOT), os.environ.get("PYTHONPATH")]))
    return {**os.environ, "PYTHONUNBUFFERED": "1", "PYTHONPATH": path}


def _child(args: list[str], timeout_s: float, log: Path,
           root: Path = REPO_ROOT) -> tuple[int | None, str]:
    """Run `python -m core.child ARGS`; returns (exit code or None on timeout, output tail).

    `root` (the folder holding the chapter packages) goes first on the child's PYTHONPATH,
    so pair files import as `chNN.<file>` from wherever the chapters live (tests use a tmp dir).
    """
    with open(log, "w") as handle:
        proc = subprocess.Popen([sys.executable, "-m", "core.child", *args], cwd=REPO_ROOT,
                                env=child_env(root), stdout=handle, stderr=subprocess.STDOUT)
        try:
            code: int | None = proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
            code = None
        except KeyboardInterrupt:
            proc.kill()
            proc.wait()
            raise
    tail = log.read_text(errors="replace")[-3000:]
    return code, tail


def make_run_dir(output_dir: Path) -> Path:
    stamp = datetime.now(timezone.utc).strftime("%Y%m%d-%H%M%S")
    run_dir = Path(output_dir) / stamp
    suffix = 1
    while run_dir.exists():
        suffix += 1
        run_dir = Path(output_dir) / f"{stamp}-{suffix}"
    (run_dir / "logs").mkdir(parents=True)
    return run_dir


def probe(run_dir: Path, timeout_s: float = 300.0) -> dict[str, Any]:
    out = run_dir / "probe.json"
    code, tail = _child(["--probe", str(out)], timeout_s, run_dir / "logs" / "probe.log")
    if code != 0 or not out.exists():
        raise RuntimeError(f"the device probe failed (exit {code}); its output:\n{tail}")
    return json.loads(out.read_text())


def prebuild(pairs: list[Pair], capability: tuple[int, int]) -> dict[str, Any]:
    """Build every .cu file of the selected chapters in parallel before any child starts,
    so children find cached libraries; a failure here resurfaces in the pair that needs it."""
    from core.cuda import build_many, nvcc_path

    sources = sorted({cu for pair in pairs for cu in pair.baseline.parent.glob("*.cu")})
    if not sources or nvcc_path() is None:
        return {"files": len(sources), "seconds": 0.0, "errors": {}}
    started = time.perf_counter()
    built = build_many(sources, capability)
    errors = {f"{p.parent.name}/{p.name}": str(r) for p, r in built.items() if isinstance(r, Exception)}
    return {"files": len(sources), "seconds": round(time.perf_counter() - started, 2), "errors": errors}


def pair_timeout(pair: Pair, default: float) -> float:
    """`TIMEOUT_S = <number>` at the top level of the baseline file overrides the default.

    Read with `ast`, not by importing, so a broken file cannot take the parent down."""
    try:
        tree = ast.parse(pair.baseline.read_text())
    except (OSError, SyntaxError, ValueError):
        return default
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "TIMEOUT_S"
                and isinstance(node.value, ast.Constant)
                and isinstance(node.value.value, (int, float)) and node.value.value > 0):
            return float(node.value.value)
    return default


def _spec(pair: Pair, examples: list[Example], options: RunOptions) -> dict[str, Any]:
    return {
        "pair": pair.id, "baseline": str(pair.baseline), "seed": options.seed,
        "iterations": options.iterations, "warmup": options.warmup,
        "examples": [{"name": e.name, "id": e.id, "path": str(e.optimized)} for e in examples],
    }


def _safe(pair: Pair) -> str:
    return pair.id.replace(":", "__")


def run_pair(pair: Pair, examples: list[Example], options: RunOptions, run_dir: Path) -> dict[str, Any]:
    safe = _safe(pair)
    spec_path, out_path = run_dir / "logs" / f"{safe}.spec.json", run_dir / "logs" / f"{safe}.result.json"
    spec_path.write_text(json.dumps(_spec(pair, examples, options), indent=2))
    started = time.perf_counter()
    timeout_s = pair_timeout(pair, options.timeout_s)
    code, tail = _child([str(spec_path), str(out_path)], timeout_s,
                        run_dir / "logs" / f"{safe}.log", pair.baseline.parent.parent)
    if code == 0 and out_path.exists():
        return json.loads(out_path.read_text())
    if code is None:
        reason = (f"timed out after {timeout_s:g} s (raise it with --timeout, or TIMEOUT_S in "
                  f"{pair.chapter}/{pair.baseline.name})")
    else:
        reason = f"child process exited with code {code}"
    reason += f"; last output:\n{tail[-1500:].strip()}" if tail.strip() else ""
    return {"pair": pair.id, "status": "failed", "reason": reason,
            "duration_s": round(time.perf_counter() - started, 3),
            "examples": [{"name": e.name, "id": e.id, "file": f"{e.chapter}/{e.optimized.name}",
                          "status": "failed", "reason": reason} for e in examples]}


def profile_pair(pair: Pair, examples: list[Example], pair_result: dict[str, Any],
                 options: RunOptions, run_dir: Path) -> dict[str, Any]:
    """Profiling runs of the verified sides, after (and apart from) the timing run."""
    from core import profiling

    verified = {ex["name"] for ex in pair_result["examples"] if ex["status"] == "ok"}
    examples = [e for e in examples if e.name in verified]
    if not examples:
        return {"mode": options.profile, "status": "skipped", "reason": "no verified variant"}
    out_dir = run_dir / "profiles" / _safe(pair)
    out_dir.mkdir(parents=True, exist_ok=True)
    spec_path = out_dir / "spec.json"
    spec_path.write_text(json.dumps(_spec(pair, examples, options), indent=2))
    root = pair.baseline.parent.parent
    report: dict[str, Any] = {"mode": options.profile, "dir": str(out_dir)}
    code, tail = _child(["--profile-minimal", str(spec_path), str(out_dir / "minimal.json")],
                        options.timeout_s, out_dir / "minimal.log", root)
    if code == 0:
        report["sides"] = json.loads((out_dir / "minimal.json").read_text())
    else:
        report["minimal_error"] = tail[-1500:]
    if options.profile != "deep":
        return report
    sides = ["baseline", *(e.name for e in examples)]
    for tool in ("ncu", "nsys"):
        path = profiling.which(tool)
        if path is None:
            report[tool] = {"status": "skipped", "reason": f"{tool} not found on PATH or in the CUDA toolkit"}
            continue
        report[tool] = {"status": "ok", "sides": {}}
        for side in sides:
            child_args = ["--profile-side", str(spec_path), side]
            rep = out_dir / f"{side}.{'ncu-rep' if tool == 'ncu' else 'nsys-rep'}"
            if tool == "ncu":
                command = profiling.ncu_command(rep, side, child_args, ncu=path,
                                                replay_mode=options.ncu_replay_mode,
                                                clock_control=options.ncu_clock_control)
            else:
                command = profiling.nsys_command(rep.with_suffix(""), child_args, nsys=path)
            code, tail = profiling.run_tool(command, options.timeout_s, out_dir / f"{side}.{tool}.log",
                                            child_env(root), REPO_ROOT)
            entry: dict[str, Any] = {"report": str(rep), "exit_code": code}
            if code != 0 or not rep.exists():
                entry["error"] = tail[-1500:]
            elif tool == "ncu":
                _, csv_text = profiling.run_tool(profiling.ncu_summary_command(rep, path),
                                                 options.timeout_s, out_dir / f"{side}.ncu.csv",
                                                 child_env(root), REPO_ROOT)
                entry["kernels"] = profiling.parse_ncu_csv(
                    (out_dir / f"{side}.ncu.csv").read_text())
            report[tool]["sides"][side] = entry
    return report


def annotate(result: dict[str, Any], pair: Pair, ceilings: dict[str, float],
             stored: dict[str, dict[str, Any]]) -> None:
    """Add rates, % of ceiling and the expectation verdict to each measured example."""
    baseline = result.get("baseline")
    if baseline:
        baseline["rates"] = rates(baseline["workload"], baseline["stats"]["median"], ceilings)
    for ex in result["examples"]:
        ex["chapter"], ex["stem"] = pair.chapter, pair.stem
        ex["teaching"] = result.get("teaching", False)
        if ex["status"] != "ok" or "stats" not in ex:
            continue
        ex["baseline_ms"] = baseline["stats"]["median"]
        ex["baseline_samples"] = baseline["stats"]["n"]
        ex["optimized_ms"] = ex["stats"]["median"]
        ex["baseline_rates"] = baseline["rates"]
        ex["rates"] = rates(ex["workload"], ex["optimized_ms"], ceilings)
        verdict = expect.gate(stored.get(ex["name"]), ex["speedup"], tuple(ex["speedup_ci"]))
        ex["expectation"] = verdict.to_dict()


def expectation_entry(ex: dict[str, Any], fingerprint: dict[str, Any]) -> dict[str, Any]:
    keep = ("device", "compute_capability", "driver", "cuda_runtime", "torch", "nvcc", "git_commit",
            "sm_count", "memory_gib")
    return {
        "speedup": round(ex["speedup"], 4),
        "speedup_ci": [round(x, 4) for x in ex["speedup_ci"]],
        "baseline_ms": round(ex["baseline_ms"], 6),
        "optimized_ms": round(ex["optimized_ms"], 6),
        "samples": {"baseline": ex["baseline_samples"], "optimized": ex["stats"]["n"]},
        "optimized_rates": {k: (round(v, 3) if isinstance(v, float) else v)
                            for k, v in ex["rates"].items()},
        "provenance": {**{k: fingerprint.get(k) for k in keep},
                       "date": datetime.now(timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ")},
    }


def run_suite(selection: list[tuple[Pair, list[Example]]], options: RunOptions,
              progress: Callable[[str], None] = lambda line: None) -> RunResult:
    """Run every selected pair; results stream to results.jsonl as each finishes."""
    for chapter_dir in sorted({pair.baseline.parent for pair, _ in selection}):
        for path in sorted(chapter_dir.glob("expectations_*.json")):
            expect.load(path)  # a malformed file stops the run before any work or output
    finished = load_finished(options.resume) if options.resume else {}
    run_dir = options.resume or make_run_dir(options.output_dir)
    (run_dir / "logs").mkdir(parents=True, exist_ok=True)
    info = probe(run_dir)
    fingerprint, ceilings = info["fingerprint"], info.get("ceilings", {})
    key = fingerprint.get("hardware_key", "cpu")
    result = RunResult(run_dir, fingerprint, ceilings)
    # Load every expectations file first: a malformed one stops the run before any work.
    stored = {pair.chapter: expect.load(expect.path_for(pair.baseline.parent, key))
              for pair, _ in selection}
    if "capability" in info:
        result.builds = prebuild([p for p, _ in selection], tuple(info["capability"]))
        if result.builds["files"]:
            progress(f"built {result.builds['files']} CUDA files in {result.builds['seconds']} s")
    stream = run_dir / "results.jsonl"
    try:
        for index, (pair, examples) in enumerate(selection, 1):
            if pair.id in finished:
                result.pairs.append(finished[pair.id])
                progress(f"[{index}/{len(selection)}] {pair.id}: kept from {run_dir.name}")
                continue
            progress(f"[{index}/{len(selection)}] {pair.id} ...")
            pair_result = run_pair(pair, examples, options, run_dir)
            annotate(pair_result, pair, ceilings, stored[pair.chapter])
            if options.profile != "none" and pair_result.get("status") == "ok":
                progress(f"      profiling ({options.profile}) ...")
                pair_result["profile"] = profile_pair(pair, examples, pair_result, options, run_dir)
            result.pairs.append(pair_result)
            with open(stream, "a") as handle:
                handle.write(json.dumps(pair_result) + "\n")
            statuses = ", ".join(f"{e['name']}: {e['status']}" for e in pair_result["examples"])
            progress(f"      {statuses} ({pair_result.get('duration_s', 0):.1f} s)")
    except KeyboardInterrupt:
        result.interrupted = True
        progress("interrupted: keeping the pairs measured so far")
    if options.update_expectations and not result.interrupted:
        write_expectations(result, selection, key)
    (run_dir / "results.json").write_text(json.dumps(result.to_dict(), indent=2))
    write_reports(result.to_dict(), run_dir)
    return result


def load_finished(run_dir: Path) -> dict[str, dict[str, Any]]:
    """Pairs already measured in `run_dir` (its results.jsonl), by pair id, for --resume."""
    stream = Path(run_dir) / "results.jsonl"
    if not stream.exists():
        raise FileNotFoundError(f"{stream}: not found; --resume takes a run directory of an "
                                f"earlier `bench run` (it holds results.jsonl)")
    finished = {}
    for line in stream.read_text().splitlines():
        try:
            record = json.loads(line)
        except json.JSONDecodeError:
            continue  # a line cut short by a crash: that pair runs again
        finished[record["pair"]] = record
    return finished


def write_expectations(result: RunResult, selection: list[tuple[Pair, list[Example]]], key: str) -> None:
    """Store every example that verified and was timed; failed pairs are never written."""
    by_chapter: dict[Path, dict[str, dict[str, Any]]] = {}
    for pair, _ in selection:
        by_chapter.setdefault(pair.baseline.parent, {})
    for pair_result, (pair, _) in zip(result.pairs, selection):
        for ex in pair_result["examples"]:
            if ex["status"] == "ok" and "speedup" in ex:
                by_chapter[pair.baseline.parent][ex["name"]] = expectation_entry(ex, result.fingerprint)
    for chapter_dir, entries in by_chapter.items():
        if entries:
            path = expect.path_for(chapter_dir, key)
            expect.update(path, key, entries)
            result.expectation_updates.append(f"{chapter_dir.name}/{path.name}")
