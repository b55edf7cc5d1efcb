"""Anti-cheat checks: ways a benchmark can look fast without doing its work.

Each check returns a message when it catches something, or None:
- `escaped_work`: GPU work left running outside the timed stream (wall time ≫ event span);
- `input_mutations` / `stale_outputs`: run() changing its inputs (so later calls get easier),
  or returning a buffer prepared in setup() that run() never wrote.
The runner also re-verifies every side on fresh inputs between timing rounds
(core.child), which catches results cached after the first calls.
"""
from __future__ import annotations

from typing import Any

import torch

from core.timing import Batch

# Honest batches differ from the event span by launch + sync latency (tens of µs); work left
# on a side stream shows up as wall time beyond the span by about its own length.
ESCAPE_SLACK_MS = 0.5
ESCAPE_FRACTION = 0.25


def escaped_work(batches: list[Batch], device: str) -> str | None:
    """Flag a side whose synchronized wall time exceeds its event span beyond latency."""
    if not device.startswith("cuda") or not batches:
        return None
    excess = sum(b.wall_ms - b.span_ms for b in batches)
    span = sum(b.span_ms for b in batches)
    allowed = ESCAPE_SLACK_MS * len(batches) + ESCAPE_FRACTION * span
    if excess > allowed:
        return (f"work escaped the timed stream: the device was busy {excess:.2f} ms beyond the "
                f"events' span of {span:.2f} ms (allowed {allowed:.2f} ms); run() must enqueue "
                f"its work on torch.cuda.current_stream() or wait for other streams")
    return None


def tensor_attributes(bench: object) -> dict[str, torch.Tensor]:
    """The benchmark's tensors: attributes, and tensors inside list/tuple/dict attributes."""
    found: dict[str, torch.Tensor] = {}
    for name, value in vars(bench).items():
        if isinstance(value, torch.Tensor):
            found[name] = value
        elif isinstance(value, (list, tuple)):
            found.update({f"{name}[{i}]": v for i, v in enumerate(value) if isinstance(v, torch.Tensor)})
        elif isinstance(value, dict):
            found.update({f"{name}[{k!r}]": v for k, v in value.items() if isinstance(v, torch.Tensor)})
    return found


def copy_state(bench: object) -> dict[str, torch.Tensor]:
    """Copies of the benchmark's tensors right after setup()."""
    return {name: t.detach().clone() for name, t in tensor_attributes(bench).items()}


def _same_storage(a: torch.Tensor, b: torch.Tensor) -> bool:
    return a.untyped_storage().data_ptr() == b.untyped_storage().data_ptr()


def _equal(before: torch.Tensor, after: torch.Tensor) -> bool:
    """Bitwise equality, so NaN-filled output buffers compare equal to themselves."""
    if before.shape != after.shape or before.dtype != after.dtype:
        return False
    return torch.equal(before.reshape(-1).view(torch.uint8), after.reshape(-1).view(torch.uint8))


def input_mutations(bench: object, before: dict[str, torch.Tensor],
                    outputs: list[torch.Tensor]) -> str | None:
    """Tensors that run() changed although they are not among its outputs."""
    changed = []
    for name, tensor in tensor_attributes(bench).items():
        if name not in before or any(_same_storage(tensor, out) for out in outputs):
            continue
        if not _equal(before[name], tensor):
            changed.append(name)
    if changed:
        return (f"run() modified its inputs ({', '.join(changed)}); later calls would see "
                f"different data. Write results to outputs, or set `mutates_inputs = True` if "
                f"the state change is the work (e.g. an optimizer step)")
    return None


def stale_outputs(bench: object, before: dict[str, torch.Tensor],
                  outputs: list[torch.Tensor]) -> str | None:
    """An output that is a setup()-time buffer whose contents run() did not change."""
    for name, tensor in tensor_attributes(bench).items():
        if name not in before:
            continue
        for out in outputs:
            if _same_storage(tensor, out) and _equal(before[name], tensor):
                return (f"run() returned `{name}`, a buffer filled in setup() that run() did not "
                        f"write; compute the output in run() (pre-fill output buffers with NaN)")
    return None


def output_tensors(output: Any) -> list[torch.Tensor]:
    from core.verify import flatten

    return [t for _, t in flatten(output)]
