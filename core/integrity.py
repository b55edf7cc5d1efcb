"""Anti-cheat rules that are not output verification: ways a pair can look fast without
doing its work, and the messages that name them.

- `escaped_work`: GPU work the samples do not account for (left on a stream the timing
  events never see); `left_running`: the same seen in one call, the device still busy
  after the call's events completed;
- `Guard`: the timing, verification and result-writing functions a pair could replace;
- `alias_problem` / `mutation_problem`: run() returning or changing its inputs.

The rules built on harness-owned inputs (fresh values for every timed call, core.fresh; timed
outputs checked against the baseline on the same values, reference() per seed) live in
core.child and core.checks.
"""
from __future__ import annotations

import json
import os
import sys
import threading
import time
from types import FunctionType, ModuleType
from typing import Any, Iterable

import core.threads  # noqa: F401 - patches Thread.start (its starter record) before any snapshot

# Honest batches leave unaccounted only the host's own time between samples (loop and event
# calls, measured per run as the launch gap), the final synchronize's latency and, in long
# batches, a little host jitter (measured on an H100 before the capture buffers were reused:
# up to 6% where a cudaMalloc stalled the host; with them, far less). Work left on another
# stream leaves its whole length unaccounted, however the host was slowed meanwhile.
ESCAPE_SLACK_MS = 0.3  # per batch: the first enqueue and the final synchronize
ESCAPE_FRACTION = 0.02  # of the wall time: the host's own hiccups in long batches
GAP_FACTOR = 3.0  # per sample: this many launch gaps...
GAP_FLOOR_MS = 0.004  # ...plus this, for jitter in the host loop


def escaped_work(batches: Iterable[Any], gap_ms: float, device: str) -> str | None:
    """Flag a side whose batches' wall time exceeds what its samples and the harness's own
    work account for, beyond the host's measured loop overhead."""
    batches = list(batches)
    if not device.startswith("cuda") or not batches:
        return None
    # one loop gap per sample and per batch; the harness's own steps between samples are
    # timed on the host (harness_host_ms, below), not estimated from the gap
    steps = sum(len(b.samples_ms) for b in batches) + len(batches)
    wall = sum(b.wall_ms for b in batches)
    accounted = sum(sum(b.samples_ms) + b.harness_ms for b in batches)
    # the harness's own host time between samples (a refill of the inputs before every call,
    # ~20-50 µs on an H100): when the host is the slower one, the GPU waits up to that long for
    # the next sample. Measured on an H100 with 46 µs calls: 6-9% of a batch's wall time in no
    # sample without refills, 5-20% with them, and up to 31% for honest sides of the planted
    # suite (~30 sides a round), which the per-step allowance alone then flagged. Work left
    # running after a call is also looked for call by call (left_running, below).
    harness_idle = sum(b.harness_host_ms for b in batches)
    allowed = (ESCAPE_SLACK_MS * len(batches) + steps * (GAP_FACTOR * gap_ms + GAP_FLOOR_MS)
               + ESCAPE_FRACTION * wall + harness_idle)
    unaccounted = wall - accounted
    if unaccounted > allowed:
        return (f"work escaped the timed stream: {unaccounted:.2f} ms of the batches' "
                f"{wall:.2f} ms wall time is in no sample (the samples hold {accounted:.2f} ms; "
                f"allowed {allowed:.2f} ms for the host loop); run() must enqueue its work on "
                f"torch.cuda.current_stream() or make it wait for the other streams it used")
    return None


class EscapeStrikes:
    """The check right after each batch, with one batch forgiven per side: a host stall (a
    garbage collection, another process taking the core) leaves one batch's GPU idle for tens
    of ms that no sample holds, and looks like escaped work (an honest ch12 cuda_graphs variant
    failed this way on an H100: 35 ms in one batch of ~60). Work left on another stream leaves
    its length unaccounted in every batch, so a second flagged batch fails the side; the check
    over all its batches at the end (escaped_work) and left_running still apply."""

    FORGIVEN = 1

    def __init__(self) -> None:
        self.flagged: dict[str, list[str]] = {}

    def judge(self, name: str, problem: str | None) -> str | None:
        if problem is None:
            return None
        seen = self.flagged.setdefault(name, [])
        seen.append(problem)
        if len(seen) <= self.FORGIVEN:
            return None
        return f"{problem} (in {len(seen)} batches)"


# A synchronize on an idle device returns in ~10 µs; the planted side-stream cheats leave most
# of each call running after its end event.
LEFT_FLOOR_MS = 0.05  # the device still busy this long after a call's end event...
LEFT_FRACTION = 0.1  # ...and for this share of the call


def left_running(probe: Any) -> str | None:
    """Flag a side whose device was still busy after its call's end event had completed, on
    every probed call (core.timing.Probe: the least of several)."""
    if probe is None or probe.left_ms <= max(LEFT_FLOOR_MS, LEFT_FRACTION * (probe.gpu_ms + probe.left_ms)):
        return None
    return (f"work escaped the timed stream: the GPU was still busy {probe.left_ms:.3f} ms after a "
            f"call's work on the timed stream had finished ({probe.gpu_ms:.3f} ms); run() must "
            f"enqueue its work on torch.cuda.current_stream() or make it wait for the other "
            f"streams it used")


def escape_problem(batches: Iterable[Any], gap_ms: float, device: str, probe: Any = None,
                   checked: bool = True) -> str | None:
    """escaped_work over `batches`, then left_running of the side's `probe` (where given);
    nothing where the check is off (`checked`: other pairs share the GPU, or the rank runs no
    baseline work of its own)."""
    if not checked:
        return None
    return escaped_work(batches, gap_ms, device) or (left_running(probe) if probe is not None else None)


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


# What the harness relies on outside its own modules. Besides these, every callable of the
# `torch` and `torch.nn.functional` namespaces is watched (TORCH_NAMESPACES): a pair that
# rebinds torch.Generator sees the harness draw each batch's seeds, one that rebinds a torch
# op the baseline calls slows the baseline, one that rebinds one the verifier calls passes a
# wrong answer. torch rebinds a few of its own lazily (importing torch._dynamo wraps
# torch.manual_seed): a wrapper of the same function defined inside torch is no cheat.
TORCH_NAMESPACES = ("torch", "torch.nn.functional")
WATCHED = {
    "time": ("perf_counter", "perf_counter_ns", "monotonic", "monotonic_ns", "time"),
    "json": ("dumps", "dump", "loads"),
    "os": ("replace", "_exit", "write", "fsync", "fdopen"),
    "torch": ("equal", "isfinite", "argmax", "full_like", "randn", "tensor", "no_grad"),
    "torch.Tensor": ("__sub__", "__gt__", "__mul__", "__add__", "__bool__", "__float__",
                     "abs", "double", "float", "max", "any", "all", "sum", "clone", "copy_",
                     "detach", "equal", "view", "reshape", "contiguous", "to", "numel",
                     "flatten", "clamp_min", "is_floating_point", "untyped_storage",
                     "data_ptr", "item"),
    "torch.cuda": ("synchronize", "current_stream", "Event", "Stream", "get_device_properties",
                   "is_available", "graph", "CUDAGraph"),
    "torch.cuda.CUDAGraph": ("replay", "capture_begin", "capture_end"),
    "torch.cuda.Event": ("__init__", "__new__", "record", "elapsed_time", "synchronize", "query",
                         "wait"),
    "threading.Thread": ("start",),  # records each thread's starter (core.threads)
}


class Guard:
    """Remembers what a pair could replace to fake its numbers; names what changed.

    Built in the child before any pair module is imported. Watched: the clocks of `time`,
    torch.cuda's synchronize and events, every function and class of `torch` and
    `torch.nn.functional` (TORCH_NAMESPACES) and every attribute of torch.Tensor, the json/os functions that write the result (WATCHED), and every
    function, class and setting of the harness's own modules (core.*), down to each function's
    code object and defaults and each class's methods. After the baseline is imported,
    `watch_pair` adds the pair's own modules (its baseline file and the chapter modules it
    imports) and the baseline's classes, so a variant cannot rewrite the baseline it is
    compared with. A pair has no business replacing any of them.
    """

    def __init__(self) -> None:
        import torch

        objects = {"time": time, "json": json, "os": os, "torch": torch,
                   "torch.Tensor": torch.Tensor, "torch.cuda": torch.cuda,
                   "torch.cuda.Event": torch.cuda.Event, "torch.cuda.CUDAGraph": torch.cuda.CUDAGraph,
                   "threading.Thread": threading.Thread}
        self._owners: dict[str, Any] = dict(objects)
        self._snapshot = {owner: {name: vars(objects[owner]).get(name, _MISSING)
                                  for name in names} for owner, names in WATCHED.items()}
        import torch.nn.functional

        for owner, module in (("torch", torch), ("torch.nn.functional", torch.nn.functional)):
            self._owners[owner] = module  # every function and class, by identity
            self._snapshot[owner] = {**{name: value for name, value in list(vars(module).items())
                                        if callable(value) and not name.startswith("__")},
                                     **self._snapshot.get(owner, {})}
        self._torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
        for owner, cls in (("torch.Tensor", torch.Tensor), ("torch._C.TensorBase", torch._C.TensorBase)):
            self._owners[owner] = cls  # every method the verifier could call, by identity
            self._snapshot[owner] = {**dict(vars(cls)), **self._snapshot.get(owner, {})}
        for name, module in list(sys.modules.items()):
            if (name == "core" or name.startswith("core.")) and module is not None:
                self._watch_module(name, module, settings=True)

    def _watch_module(self, name: str, module: ModuleType, settings: bool) -> None:
        """A module's functions and classes by identity (their code and defaults, a class's
        own methods too) and, with `settings`, its plain values by value."""
        self._owners[name] = module
        self._snapshot[name] = self._ours(module, settings)
        for attr, value in list(vars(module).items()):
            if isinstance(value, type) and getattr(value, "__module__", None) == name:
                self._watch_class(f"{name}.{attr}", value)
            elif isinstance(value, FunctionType):
                self._watch_code(f"{name}.{attr}", value)

    def _watch_class(self, owner: str, cls: type) -> None:
        if owner in self._owners:
            return
        self._owners[owner] = cls
        self._snapshot[owner] = {name: value for name, value in list(vars(cls).items())
                                 if callable(value) or isinstance(value, (staticmethod, classmethod,
                                                                          property))}
        for name, value in list(vars(cls).items()):
            function = getattr(value, "__func__", value)
            if isinstance(function, FunctionType):
                self._watch_code(f"{owner}.{name}", function)

    def _watch_code(self, owner: str, function: FunctionType) -> None:
        self._owners[owner] = function
        self._snapshot[owner] = {"__code__": function.__code__, "__defaults__": function.__defaults__,
                                 "__kwdefaults__": function.__kwdefaults__}

    def watch_pair(self, baseline: object) -> None:
        """After the baseline's import, before any variant's: the pair's own modules
        (`chNN.*` loaded so far) and the classes of the baseline, so that nothing a variant
        imports can change what the variant is compared with."""
        for name, module in list(sys.modules.items()):
            if module is not None and _is_chapter_module(name) and name not in self._owners:
                self._watch_module(name, module, settings=False)
        for cls in type(baseline).__mro__:
            if _is_chapter_module(getattr(cls, "__module__", "")):
                self._watch_class(f"{cls.__module__}.{cls.__qualname__}", cls)

    @staticmethod
    def _ours(module: ModuleType, settings: bool = True) -> dict[str, Any]:
        """A module's functions and classes by identity, its plain settings by value."""
        out = {}
        for name, value in list(vars(module).items()):
            if name.startswith("__"):
                continue
            if callable(value) or (settings and isinstance(value, (int, float, str, tuple, frozenset))):
                out[name] = value
        return out

    def tampered(self) -> list[str]:
        """`owner.name` for every watched attribute now different or deleted."""
        changed = []
        for owner, before in self._snapshot.items():
            target = self._owners[owner]
            now = vars(target) if not isinstance(target, FunctionType) else {
                "__code__": target.__code__, "__defaults__": target.__defaults__,
                "__kwdefaults__": target.__kwdefaults__}
            for name, value in before.items():
                current = now.get(name, _MISSING)
                if current is not value and not _same_value(current, value):
                    if owner in TORCH_NAMESPACES and self._torch_rewrap(current, value):
                        continue
                    changed.append(f"{owner}.{name}")
        return changed

    def _torch_rewrap(self, current: Any, before: Any) -> bool:
        """torch wrapping one of its own functions (torch._dynamo's torch.manual_seed): the new
        value's chain of wrappers reaches the old one, and its code lives in torch's package."""
        import inspect

        try:
            if inspect.unwrap(current, stop=lambda f: f is before) is not before:
                return False
            code_file = os.path.abspath(inspect.getfile(current))
        except (TypeError, ValueError):  # a builtin, or a wrapper chain that loops
            return False
        return code_file.startswith(self._torch_dir + os.sep)

    def problem(self) -> str | None:
        changed = self.tampered()
        if not changed:
            return None
        return (f"replaced harness or timing functions ({', '.join(changed[:8])}"
                f"{', ...' if len(changed) > 8 else ''}); a pair must not patch the clocks, "
                f"torch, aisp's own modules, or its baseline and shared modules")


def _is_chapter_module(name: str) -> bool:
    head = name.split(".")[0]
    return len(head) == 4 and head.startswith("ch") and head[2:].isdigit()


def _same_value(current: Any, before: Any) -> bool:
    """Equal plain settings (a tuple rebuilt with the same values is no change); objects
    compared by identity only (an object's __eq__ is the pair's to define)."""
    if type(current) is not type(before) or not isinstance(before, (int, float, str, tuple, frozenset)):
        return False
    try:
        return bool(current == before)
    except Exception:  # noqa: BLE001 - a value that cannot compare has changed
        return False


_MISSING = object()
