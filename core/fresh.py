"""Fresh input values for every timed call, so no value-keyed shortcut pays.

A pair may keep anything between calls. If two timed calls saw the same values, a cache keyed
on those values (or on a checksum of a few of them, or on the tensors' addresses) would answer
the second call without the work, and the answer would be right: no check could catch it.
So every timed call of every side gets input values no earlier call had: before a batch of
k calls, the harness draws k sets from the pair's own `make_inputs` on k fresh seeds (the
pair's distribution, its structure intact), and before call i copies set i into the tensors
the side is given (their identity and addresses stay; the copy is harness work outside the
timed events, core.timing). A cache then never hits with a right answer, and the output kept
for the check (chosen after the calls return, core.timing.Keep) shows a wrong one.

What the copy does to `hot` numbers: the values were just written, so inputs that fit in L2
are warm there, as they were when every call read the same tensors; the copy also reads the
fresh set, which can push other lines (weights) out of L2. README, 'How the harness measures',
has the measured effect.

Pinned host inputs (zero-copy kernels, non_blocking copies) are read by the GPU when their
call runs, which can be after the host has queued later calls: a host-side copy for call i+1
would overwrite what call i has yet to read. Their fresh values are therefore staged on the
GPU when drawn and copied back into the pinned tensor on the stream, in order with the calls.

Memory: the sets of one batch live together while it runs, so a batch holds at most as many
calls as sets fit in FRESH_BUDGET_BYTES (at least one); after it only the kept call's set stays
until the round is checked (settle).
"""
from __future__ import annotations

from typing import Any, Callable

import torch

from core.benchmark import Inputs
from core.inputs import check_structure, clone, tensors

FRESH_BUDGET_BYTES = {"cuda": 1 << 30, "cpu": 256 << 20}  # one side's sets for one batch


def nbytes(inputs: Inputs) -> int:
    """Bytes held by the tensors of one input set."""
    return sum(t.numel() * t.element_size() for _, t in tensors(inputs))


def most_calls(inputs: Inputs, device: str) -> int:
    """How many fresh sets (so calls) one batch may hold within the memory budget."""
    budget = FRESH_BUDGET_BYTES["cuda" if device.startswith("cuda") else "cpu"]
    return max(1, budget // max(1, nbytes(inputs)))


class FreshSets:
    """One side's input sets for its current batch: set i is call i's values."""

    def __init__(self, make_inputs: Callable[[int], Inputs], new_seed: Callable[[], int],
                 device: str = "cpu") -> None:
        self.make_inputs, self.new_seed = make_inputs, new_seed
        self.stage = device.startswith("cuda")  # pinned host tensors go back through the stream
        self.seeds: list[int] = []
        self.sets: list[Inputs] = []
        self.sources: list[list[torch.Tensor]] = []  # each set's tensors, in tensors() order
        self.staged: list[dict[int, torch.Tensor]] = []  # set -> tensor index -> its GPU copy
        self.checked: list[Inputs] = []  # what settle() kept for the round's check
        self.checked_seed: int | None = None
        self._target: Inputs = None  # the tensors into() last wrote, and their list
        self._dsts: list[torch.Tensor] = []

    def draw(self, calls: int) -> None:
        """`calls` sets from as many fresh seeds (the previous batch's sets are dropped first)."""
        self.sets, self.staged = [], []
        self.seeds = [self.new_seed() for _ in range(calls)]
        self.sets = [self.make_inputs(seed) for seed in self.seeds]
        for values in self.sets[1:]:  # into() copies tensor by tensor: one structure for all
            check_structure(self.sets[0], values)
        self.sources = [[t for _, t in tensors(values)] for values in self.sets]
        if self.stage:
            self.staged = [{j: t.to("cuda") for j, (_, t) in enumerate(tensors(values))
                            if t.device.type == "cpu" and t.is_pinned()} for values in self.sets]

    def into(self, target: Inputs, i: int) -> None:
        """Copy set i's values into `target` (the tensors the side is given); a pinned host
        tensor from its GPU copy, on the stream (in order with the calls queued before)."""
        if self._target is not target:  # checked once per side: the same structure each call
            check_structure(target, self.sets[i])
            self._target, self._dsts = target, [t for _, t in tensors(target)]
        staged = self.staged[i] if self.staged else {}
        with torch.no_grad():
            if not staged:  # one call for every tensor: the host's time per refill is what
                torch._foreach_copy_(self._dsts, self.sources[i])  # the GPU may wait for
                return
            plain = [j for j in range(len(self._dsts)) if j not in staged]
            if plain:
                torch._foreach_copy_([self._dsts[j] for j in plain], [self.sources[i][j] for j in plain])
            for j, source in staged.items():
                self._dsts[j].copy_(source, non_blocking=True)

    @property
    def last(self) -> Inputs:
        """The values the side's inputs hold after its batch (its last call's)."""
        return self.sets[-1]

    def settle(self, at: int | None, steps: bool = False) -> None:
        """After the batch: keep only the sets its check needs, set `at` (the kept call's), or
        sets 0..at with `steps` (a stateful baseline steps through them first); drop the rest,
        so the sides of a round do not hold a budget of sets each until it is checked."""
        self.checked = [] if at is None else self.sets[0 if steps else at:at + 1]
        self.checked_seed = None if at is None else self.seeds[at]
        self.sets, self.sources, self.staged = [], [], []

    def checked_copies(self) -> list[Any]:
        """Fresh copies of the kept sets, for the baseline's answer on the same values."""
        return [clone(values) for values in self.checked]
