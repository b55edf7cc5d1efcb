"""Requirements decided before the pairs run: one process checks every selected pair's
baseline, so a pair that cannot run on this machine (no CUDA GPU, too few GPUs, an older
GPU, a missing module, no nvcc) is reported SKIPPED without a child process of its own.

    python -m core.precheck SPEC.json RESULT.json      # started by check(), never by hand

Why a process and not the runner: loading a pair file imports it, and a pair's code never
runs in the runner. An import-time patch of the clocks or of aisp's own modules (the planted
`timer` and `patch_verify` pairs do exactly that), or a thread started at import, would stay
in the process that reads, gates and writes every result; a hang or a crash in an import
would take the whole run down. Here, as in a pair's child (core.process, core.child), the
token arrives on stdin before any pair file is imported, a Guard (core.integrity) watches for
tampering, and the process group is killed at the end.

Only the clear case is decided: the baseline loads cleanly and states a requirement this
machine does not meet (core.pairfile.unmet_requirement). The check builds the PairResult
that pair's child would have reported (same fields: the pair SKIPPED with
"chNN/baseline_x.py: <why>", each example SKIPPED with the same reason). Anything else — a file
that fails to import (FAILED with the import error), a variant's own requirement, an import
that tampers — is left to the pair's child, which reports it exactly as before. Verdicts are
written (signed) as they are decided, so a check that hangs or crashes on one import still
decides the pairs before it; the rest run in their children as before.
"""
from __future__ import annotations

import json
import os
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from core import atomic
from core.benchmark import option
from core.discovery import Example, Pair
from core.pairfile import load_benchmark, relative, unmet_requirement
from core.process import run_child
from core.record import ExampleResult, PairResult

MIN_TIMEOUT_S = 60.0  # the check imports torch and every baseline: give it at least this
TAMPERED = 3  # exit code of a check stopped by an import that replaced watched functions


@dataclass
class Precheck:
    """What the check process decided for a selection."""

    skipped: dict[str, PairResult] = field(default_factory=dict)  # pair id -> its SKIPPED result
    checked: int = 0  # pairs it decided (skipped or left to run)
    problem: str = ""  # why it stopped before the end ("" when it checked every pair)


def _pair_spec(pair: Pair, examples: list[Example]) -> dict[str, Any]:
    return {"pair": pair.id, "baseline": str(pair.baseline),
            "examples": [{"name": e.name, "id": e.id, "path": str(e.optimized)} for e in examples]}


def check(selection: list[tuple[Pair, list[Example]]], run_dir: Path,
          timeout_s: float) -> Precheck:
    """Decide the selection's unmet requirements in one process per chapters root (one,
    unless the selection spans roots); logs go to run_dir/logs/requirements*.log."""
    roots: dict[Path, list[dict[str, Any]]] = {}
    for pair, examples in selection:
        roots.setdefault(pair.baseline.parent.parent, []).append(_pair_spec(pair, examples))
    found = Precheck()
    problems = []
    for index, (root, pairs) in enumerate(roots.items()):
        name = "requirements" + (f"-{index + 1}" if index else "")
        logs = Path(run_dir) / "logs"
        spec, out = logs / f"{name}.spec.json", logs / f"{name}.json"
        spec.write_text(json.dumps({"pairs": pairs}, indent=2))
        outcome = run_child([str(spec), str(out)], max(timeout_s, MIN_TIMEOUT_S),
                            logs / f"{name}.log", root, result=out, module="core.precheck")
        code, payload = outcome.code, outcome.payload
        wanted = {p["pair"] for p in pairs}
        payload = payload or {}
        for pair_id, data in (payload.get("skipped") or {}).items():
            if pair_id in wanted:
                found.skipped[pair_id] = PairResult.from_dict(data)
        checked = len(payload.get("checked") or [])
        found.checked += checked
        if code != 0 or checked < len(pairs):
            why = ("it timed out" if code is None
                   else "an import replaced harness or timing functions" if code == TAMPERED
                   else f"it exited with code {code}" if code else "it stopped early")
            problems.append(f"{why} after {checked} of {len(pairs)} pairs (see logs/{name}.log)")
    if problems:
        found.problem = "; ".join(problems)
    return found


# --- in the check process ---------------------------------------------------------------
def _decide(entry: dict[str, Any], device: str) -> PairResult | None:
    """The SKIPPED result of a pair whose baseline loads and cannot run here, else None."""
    from core.hardware import clocks

    started = time.perf_counter()
    try:
        bench = load_benchmark(Path(entry["baseline"]))
        why = unmet_requirement(bench, device)
    except (Exception, SystemExit):  # noqa: BLE001 - the pair's child reports it as before
        return None
    if not why:
        return None
    result = PairResult(pair=entry["pair"], device=device, examples=[
        ExampleResult(name=e["name"], id=e["id"], file=relative(e["path"]))
        for e in entry["examples"]])
    result.teaching = bool(option(bench, "teaching", False))
    result.clocks_start = clocks() if device.startswith("cuda") else {}
    result.fail_all(f"{relative(entry['baseline'])}: {why}", "skipped")
    result.duration_s = round(time.perf_counter() - started, 3)
    return result


def main(argv: list[str]) -> None:
    from core.signing import read_token

    token = read_token()  # before any pair file is imported
    exit_now, write = os._exit, atomic.write_text  # bound before any pair code runs

    import torch

    import core.hardware  # noqa: F401 - imported before the Guard's snapshot, so it is watched
    from core.integrity import Guard
    from core.signing import deliver

    guard = Guard()
    pairs = json.loads(Path(argv[0]).read_text())["pairs"]
    out = Path(argv[1])
    device = "cuda" if torch.cuda.is_available() else "cpu"
    payload: dict[str, Any] = {"device": device, "checked": [], "skipped": {}}
    for entry in pairs:
        result = _decide(entry, device)
        if guard.problem():  # a tampered process decides nothing more; what was signed stands
            sys.stdout.write(f"{entry['baseline']}: {guard.problem()}\n")
            sys.stdout.flush()
            exit_now(TAMPERED)
        payload["checked"].append(entry["pair"])
        if result is not None:
            payload["skipped"][entry["pair"]] = result.to_dict()
            write(out, json.dumps({"token": token, "payload": payload}))  # survives a later crash
        print(f"{entry['pair']}: {'skipped, ' + result.reason if result else 'runs'}", flush=True)
    deliver(out, token, payload)


if __name__ == "__main__":
    main(sys.argv[1:])
