"""core.fresh: one input set per timed call, copied in place, dropped after its batch."""
from __future__ import annotations

import itertools

import pytest
import torch

from core.fresh import FRESH_BUDGET_BYTES, FreshSets, most_calls, nbytes


def _make(seed: int):
    gen = torch.Generator().manual_seed(seed)
    return {"x": torch.randn(16, generator=gen), "ids": torch.randint(0, 9, (4,), generator=gen), "n": 16}


def _sets() -> FreshSets:
    return FreshSets(_make, itertools.count(1).__next__)


def test_each_call_gets_its_own_set_in_the_same_tensors():
    fresh, target = _sets(), _make(0)
    x, ids = target["x"], target["ids"]
    fresh.draw(3)
    assert fresh.seeds == [1, 2, 3]
    for i in range(3):
        fresh.into(target, i)
        assert target["x"] is x and target["ids"] is ids  # identity (and address) kept
        assert torch.equal(x, _make(i + 1)["x"]) and torch.equal(ids, _make(i + 1)["ids"])
    assert torch.equal(fresh.last["x"], x)


def test_settle_keeps_only_what_the_check_needs():
    fresh = _sets()
    fresh.draw(4)
    fresh.settle(2)
    assert fresh.sets == [] and fresh.checked_seed == 3 and len(fresh.checked) == 1
    copy, = fresh.checked_copies()
    assert torch.equal(copy["x"], _make(3)["x"]) and copy["x"] is not fresh.checked[0]["x"]
    fresh.draw(4)
    fresh.settle(2, steps=True)  # a stateful baseline steps through the earlier sets first
    assert [int(torch.equal(c["x"], _make(s)["x"])) for c, s in zip(fresh.checked_copies(), (5, 6, 7))] == [1, 1, 1]
    fresh.draw(2)
    fresh.settle(None)  # nothing kept in this batch
    assert fresh.checked == [] and fresh.checked_seed is None


def test_a_set_of_another_structure_is_refused_when_drawn():
    shapes = iter([16, 16, 8])

    def uneven(seed: int):
        return torch.randn(next(shapes), generator=torch.Generator().manual_seed(seed))

    with pytest.raises(ValueError, match="different structure, shape or dtype"):
        FreshSets(uneven, itertools.count(1).__next__).draw(3)


def test_a_batch_holds_as_many_calls_as_sets_fit_in_the_budget():
    one = _make(0)
    assert nbytes(one) == 16 * 4 + 4 * 8
    assert most_calls(one, "cpu") == FRESH_BUDGET_BYTES["cpu"] // nbytes(one)
    huge = torch.empty(FRESH_BUDGET_BYTES["cpu"] // 4 + 1)
    assert most_calls(huge, "cpu") == 1  # at least one: the batch then has one call
