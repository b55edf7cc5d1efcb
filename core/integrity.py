"""Anti-cheat rules that are not output verification: ways a pair can look fast without
doing its work, and the messages that name them.

- `escaped_work`: GPU work the samples do not account for (left on a stream the timing
  events never see);
- `Guard`: the timing, verification and result-writing functions a pair could replace;
- `alias_problem` / `mutation_problem`: run() returning or changing its inputs.

The rules built on harness-owned inputs (fresh values between timed batches, timed outputs
checked against the baseline on the same values, reference() per seed) live in core.child.
"""
from __future__ import annotations

import builtins
import json
import os
import sys
import time
from types import ModuleType
from typing import Any, Iterable

# Honest batches leave unaccounted only the host's own time between samples (loop and event
# calls, measured per run as the launch gap) and the final synchronize's latency. Work left on
# another stream leaves its whole length unaccounted, however the host was slowed meanwhile.
ESCAPE_SLACK_MS = 0.3  # per batch: the first enqueue and the final synchronize
GAP_FACTOR = 3.0  # per sample: this many launch gaps...
GAP_FLOOR_MS = 0.004  # ...plus this, for jitter in the host loop


def escaped_work(batches: Iterable[Any], gap_ms: float, device: str) -> str | None:
    """Flag a side whose batches' wall time exceeds what its samples and the harness's own
    work account for, beyond the host's measured loop overhead."""
    batches = list(batches)
    if not device.startswith("cuda") or not batches:
        return None
    calls = sum(len(b.samples_ms) for b in batches)
    # each harness step between samples costs about one more loop gap
    steps = calls + sum(len(b.samples_ms) if b.harness_ms else 0 for b in batches) + len(batches)
    wall = sum(b.wall_ms for b in batches)
    accounted = sum(sum(b.samples_ms) + b.harness_ms for b in batches)
    allowed = ESCAPE_SLACK_MS * len(batches) + steps * (GAP_FACTOR * gap_ms + GAP_FLOOR_MS)
    unaccounted = wall - accounted
    if unaccounted > allowed:
        return (f"work escaped the timed stream: {unaccounted:.2f} ms of the batches' "
                f"{wall:.2f} ms wall time is in no sample (the samples hold {accounted:.2f} ms; "
                f"allowed {allowed:.2f} ms for the host loop); run() must enqueue its work on "
                f"torch.cuda.current_stream() or make it wait for the other streams it used")
    return None


def alias_problem(aliases: list[str]) -> str | None:
    if not aliases:
        return None
    return (f"run() returned its input ({', '.join(aliases)}): an output that is the input "
            f"tensor is transformed again by every call, or left as it was; write the result to "
            f"an output buffer, or declare `inplace = True` if writing into the inputs is the "
            f"technique (the harness then hands each call a fresh copy)")


def mutation_problem(changed: list[str]) -> str | None:
    if not changed:
        return None
    return (f"run() modified its inputs ({', '.join(changed)}); later calls would see different "
            f"data. Write results to outputs (a workspace attribute is fine), or declare "
            f"`inplace = True` if writing into the inputs is the technique")


class Guard:
    """Remembers the functions a pair could replace to fake its numbers; names what changed.

    Built in the child before any pair module is imported. Watched: the clocks of `time`,
    torch.cuda's synchronize/events/streams, the tensor methods and torch functions that
    verification uses, json/os functions that write the result, and every function of the
    harness's own modules (core.*). A pair has no business replacing any of them.
    """

    def __init__(self, extra_modules: Iterable[ModuleType] = ()):
        import torch

        self._owners: dict[str, Any] = {
            "time": time, "json": json, "os": os, "builtins": builtins,
            "torch": torch, "torch.Tensor": torch.Tensor, "torch.cuda": torch.cuda,
            "torch.cuda.Event": torch.cuda.Event, "torch.cuda.Stream": torch.cuda.Stream,
        }
        for name, module in list(sys.modules.items()):
            if name == "core" or name.startswith("core."):
                self._owners[name] = module
        for module in extra_modules:
            self._owners[module.__name__] = module
        self._snapshot = {owner: self._watched(obj, owner.startswith("core"))
                          for owner, obj in self._owners.items()}

    @staticmethod
    def _watched(obj: Any, ours: bool) -> dict[str, Any]:
        """The owner's callables by identity (and, in aisp's modules, plain settings by value).

        In third-party owners private names are skipped (torch rebinds some lazily), but
        dunder methods are kept: verification relies on `Tensor.__sub__` and friends."""
        out = {}
        for name, value in list(vars(obj).items()):
            private = name.startswith("_") and not (name.startswith("__") and name.endswith("__"))
            if private and not ours:
                continue
            if callable(value) or isinstance(value, (staticmethod, classmethod, property)):
                out[name] = value
            elif ours and isinstance(value, (int, float, str, tuple, frozenset)) and not name.startswith("__"):
                out[name] = value
        return out

    def tampered(self) -> list[str]:
        """`owner.name` for every watched attribute now different or deleted."""
        changed = []
        for owner, before in self._snapshot.items():
            now = vars(self._owners[owner])
            for name, value in before.items():
                current = now.get(name, _MISSING)
                if current is not value and current != value:
                    changed.append(f"{owner}.{name}")
        return changed

    def problem(self) -> str | None:
        changed = self.tampered()
        if not changed:
            return None
        return (f"replaced harness or timing functions ({', '.join(changed[:8])}"
                f"{', ...' if len(changed) > 8 else ''}); a pair must not patch the clocks, "
                f"torch, or aisp's own modules")


_MISSING = object()
