"""The per-call inputs the harness owns: walk them, copy them, refill them, check them.

Inputs are what `make_inputs(seed)` returns: a tensor, or a tuple/list/dict (nested) of
tensors and plain constants. The harness keeps one set per pair and refills its tensors
*in place* with fresh values before every timed call (core.fresh), so a pair that caches on
the tensors' identity (or address) returns stale answers and fails the timed-output check.
"""
from __future__ import annotations

from typing import Any

import torch

from core.benchmark import Inputs
from core.verify import snapshot


def tensors(inputs: Inputs, name: str = "inputs") -> list[tuple[str, torch.Tensor]]:
    """The tensors inside `inputs`, each with a readable path (`inputs['src']`)."""
    if isinstance(inputs, torch.Tensor):
        return [(name, inputs)]
    if isinstance(inputs, dict):
        return [item for key in inputs for item in tensors(inputs[key], f"{name}[{key!r}]")]
    if isinstance(inputs, (list, tuple)):
        return [item for i, value in enumerate(inputs) for item in tensors(value, f"{name}[{i}]")]
    return []  # constants (sizes, flags) are part of the structure, not data


def clone(inputs: Inputs) -> Inputs:
    """A deep copy with fresh tensors (new identities, new storage)."""
    return snapshot(inputs)


def check_structure(inputs: Inputs, fresh: Inputs) -> None:
    """ValueError unless `fresh` has the tensors of `inputs`: same names, shapes and dtypes."""
    old, new = tensors(inputs), tensors(fresh)
    if [(n, t.shape, t.dtype) for n, t in old] != [(n, t.shape, t.dtype) for n, t in new]:
        raise ValueError("make_inputs(seed) returned a different structure, shape or dtype for "
                         "another seed; inputs must differ only in their values")


def refill(inputs: Inputs, fresh: Inputs) -> None:
    """Copy `fresh` into `inputs` tensor by tensor, keeping every tensor's identity and storage."""
    check_structure(inputs, fresh)
    old, new = tensors(inputs), tensors(fresh)
    with torch.no_grad():
        for (_, dst), (_, src) in zip(old, new):
            dst.copy_(src)


def same_bits(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Bitwise equality (NaN equals NaN), for checksumming inputs around a call."""
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.numel() == 0:
        return True
    return torch.equal(a.detach().contiguous().view(-1).view(torch.uint8),
                       b.detach().contiguous().view(-1).view(torch.uint8))


def changed(before: Inputs, after: Inputs) -> list[str]:
    """Names of the tensors whose values differ between two copies of the inputs."""
    return [name for (name, a), (_, b) in zip(tensors(before), tensors(after)) if not same_bits(a, b)]


def _storage(t: torch.Tensor) -> int:
    return t.untyped_storage().data_ptr()


def aliased(outputs: list[tuple[str, torch.Tensor]], inputs: Inputs) -> list[str]:
    """Outputs that share storage with an input tensor ('output <- inputs[0]')."""
    owners = {_storage(t): name for name, t in tensors(inputs) if t.untyped_storage().nbytes()}
    return [f"{name} is {owners[_storage(t)]}" for name, t in outputs
            if t.untyped_storage().nbytes() and _storage(t) in owners]


def describe(inputs: Inputs) -> dict[str, Any]:
    """Shapes and dtypes of the inputs, for the result record."""
    return {name: f"{tuple(t.shape)} {str(t.dtype).replace('torch.', '')}" for name, t in tensors(inputs)}
