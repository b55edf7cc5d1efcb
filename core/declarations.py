"""What a variant declares about itself, and the rule that the stored entry pins it.

A variant may declare things that change how it is judged: its goal, a known negative
result, host-bound work, a teaching example, a timing mode, stateful or in-place calls, a
precision change and its tolerance, a simulation. `--update-expectations` stores them in the
variant's entry (`"declarations"`), and a later run whose declarations differ fails the gate
("rules changed") until someone stores them again on purpose: a rule change is then a
reviewable diff of `expectations_*.json`, never a line in the optimized file alone. So that
what is stored is what is judged, declarations are plain class attributes, read once when a
side is loaded (`declaration_problem`).

    python -m core.declarations --migrate   # one-off: add today's declarations to stored
                                            # entries that lack them (reads the pair files)
"""
from __future__ import annotations

import inspect
import sys
from dataclasses import asdict, dataclass, fields
from typing import Any

from core.benchmark import option
from core.gate import GateResult


@dataclass(frozen=True)
class Declarations:
    """One variant's declarations, resolved: the variant's own, else its baseline's."""

    goal: str = "speed"
    negative_result: str = ""
    cpu_bound: str = ""
    teaching: bool = False
    timing_mode: str = "hot"
    stateful: bool = False
    inplace: bool = False
    tolerance: tuple[float, float] | None = None  # (rtol, atol); None: the default by dtype
    precision: str = ""
    simulated: str = ""
    # what a simulated_cost result depends on instead of the GPU (the model and its assumed
    # figures): its entry is stored under `sim_<simulated_key>` (core.expectations.pair_key)
    simulated_key: str = ""

    @classmethod
    def of(cls, baseline: object, variant: object) -> Declarations:
        def either(name: str, default: Any) -> Any:
            return option(variant, name, None) or option(baseline, name, None) or default
        tol = either("tolerance", None)
        if tol is not None and not isinstance(tol, (tuple, list)):
            tol = (tol.rtol, tol.atol)  # a core.benchmark.Tolerance
        return cls(goal=option(variant, "goal", "speed"),
                   negative_result=option(variant, "negative_result", ""),
                   cpu_bound=either("cpu_bound", ""), teaching=bool(either("teaching", False)),
                   timing_mode=either("timing_mode", "hot"), stateful=bool(either("stateful", False)),
                   inplace=bool(either("inplace", False)),
                   tolerance=(float(tol[0]), float(tol[1])) if tol is not None else None,
                   precision=option(variant, "precision", ""), simulated=either("simulated", ""),
                   simulated_key=either("simulated_key", ""))

    def to_dict(self) -> dict[str, Any]:
        """The declarations that differ from the defaults (what an entry stores)."""
        default = Declarations()
        return {k: (list(v) if isinstance(v, tuple) else v) for k, v in asdict(self).items()
                if v != getattr(default, k)}

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> Declarations:
        known = {f.name for f in fields(cls)}
        values = {k: v for k, v in data.items() if k in known}
        if values.get("tolerance") is not None:
            values["tolerance"] = tuple(float(x) for x in values["tolerance"])
        return cls(**values)

    def differences(self, stored: Declarations) -> list[str]:
        """'negative_result: stored "", now "why"' for each declaration that changed. For the
        explanations in WORDING_ONLY only their presence is a rule: rewording one changes
        nothing the gate does, so it is not a rule change (the next store records the text)."""
        def changed(name: str) -> bool:
            now, then = getattr(self, name), getattr(stored, name)
            return bool(now) != bool(then) if name in WORDING_ONLY else now != then
        return [f"{f.name}: stored {getattr(stored, f.name)!r}, now {getattr(self, f.name)!r}"
                for f in fields(self) if changed(f.name)]


# Declarations whose text explains and whose presence decides: a negative result is not
# gated, a host-bound one is judged with the host's tolerance, whatever the words say.
WORDING_ONLY = ("negative_result", "cpu_bound")


# What a side declares about itself (core.declarations): plain class attributes, read once
# when the side is loaded and stored with its entry. A property or other descriptor could
# answer one thing then and another while the side is judged (a NaN tolerance once set up,
# `stateful` only after the first calls), and an instance attribute set later likewise.
DECLARED = tuple(f.name for f in fields(Declarations))


def declaration_problem(bench: Any, origin: str) -> str | None:
    """Why `bench` (file `origin`) declares something other than as a plain class attribute
    (a property, a method or another descriptor), or has one set on the instance, or None."""
    for name in DECLARED:
        if name in vars(bench):
            return (f"{origin}: sets its declaration `{name}` on the instance; declarations are "
                    f"class attributes, read once when the side is loaded (what is stored is "
                    f"what is judged)")
        found = inspect.getattr_static(type(bench), name, None)
        if hasattr(type(found), "__get__"):
            return (f"{origin}: declares `{name}` through a {type(found).__name__}; declarations "
                    f"are plain class attributes (`{name} = ...`), read once when the side is "
                    f"loaded, so what is stored is what is judged")
    return None


def rules_changed(ex: Any, entry: dict[str, Any] | None) -> GateResult | None:
    """A failing verdict when the variant (an ExampleResult) now declares other rules than
    its entry was stored with: a rule change is made with --update-expectations, where it
    shows as a diff of the expectations file."""
    if entry is None:
        return None
    other_goal, speedup = entry.get("goal"), entry.get("speedup")
    stored_as = (f"stored gated on its {other_goal}" if other_goal else
                 f"stored as gated at {speedup:.2f}x" if isinstance(speedup, (int, float)) else "stored")
    # an entry without them declared nothing (entries stored before 2026-11-27 were migrated)
    differences = ex.declarations.differences(Declarations.from_dict(entry.get("declarations") or {}))
    if not differences:
        return None
    return GateResult("rules changed", f"{ex.id} now declares other rules ({'; '.join(differences)}); "
                      f"it is {stored_as}: change its rules with --update-expectations")


def migrate(root: Any = None) -> list[str]:
    """Add `declarations` to every stored entry that lacks them, read from today's pair files
    (no re-measurement). Returns the files changed."""
    import importlib
    import json
    from pathlib import Path

    from core import REPO_ROOT, atomic
    from core.discovery import discover

    changed = []
    for chapter in discover(Path(root or REPO_ROOT)):
        variants = {}
        for pair in chapter.pairs:
            base = importlib.import_module(f"{chapter.name}.{pair.baseline.stem}").get_benchmark()
            for ex in pair.examples:
                bench = importlib.import_module(f"{chapter.name}.{ex.optimized.stem}").get_benchmark()
                variants[ex.name] = Declarations.of(base, bench).to_dict()
        for path in sorted(chapter.path.glob("expectations_*.json")):
            data = json.loads(path.read_text())
            touched = False
            for name, entry in data.get("examples", {}).items():
                if "declarations" not in entry and name in variants:
                    entry["declarations"] = variants[name]
                    touched = True
            if touched:
                atomic.write_text(path, json.dumps(data, indent=2, sort_keys=True) + "\n")
                changed.append(f"{chapter.name}/{path.name}")
    return changed


if __name__ == "__main__":
    if sys.argv[1:] != ["--migrate"]:
        sys.exit("usage: python -m core.declarations --migrate")
    for line in migrate():
        print(f"migrated {line}")
