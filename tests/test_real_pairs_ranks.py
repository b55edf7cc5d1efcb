"""Every CPU-capable multi-GPU pair in the repo runs as gloo ranks under torchrun and verifies.

Apart from tests/test_real_pairs.py (whose helpers it uses) so that the test runner can put
this one long run on a worker of its own (pytest-xdist --dist loadfile).
"""
from __future__ import annotations

import pytest

from tests.conftest import cpu_only
from tests.test_real_pairs import MULTI_RANK_CPU_PAIRS, _ranks


@pytest.fixture(scope="module")
def multi_rank_run(tmp_path_factory):
    """Every CPU-capable multi-GPU pair in one run (one probe and fork server for all, as
    `bench run` does; each pair still gets its own torchrun): pair id -> its PairResult."""
    from core.discovery import select
    from core.runner import RunOptions, run_suite

    record = run_suite(select([p.id for _, p in MULTI_RANK_CPU_PAIRS]),
                       RunOptions(iterations=2, warmup=1, timeout_s=300,
                                  output_dir=tmp_path_factory.mktemp("multi_rank") / "runs"))
    return {result.pair: result for result in record.pairs}


@cpu_only
@pytest.mark.parametrize("chapter, pair", MULTI_RANK_CPU_PAIRS, ids=[p.id for _, p in MULTI_RANK_CPU_PAIRS])
def test_multi_rank_pair_verifies_on_cpu_ranks(chapter, pair, multi_rank_run):
    """Multi-GPU pairs that support the CPU run as gloo ranks under torchrun (the runner's
    path) and verify; variants that need NCCL are skipped with the reason."""
    result = multi_rank_run[pair.id]
    assert result.examples, f"{pair.id}: no variant in the run ({result.status}: {result.reason})"
    for example in result.examples:
        if example.status == "skipped":
            assert "needs a CUDA GPU" in example.reason, example.reason
            continue
        assert example.status == "ok", f"{example.id}: {example.reason}"
        assert example.verification.ok and len(example.timing.rank_medians_ms) == _ranks(pair.baseline)
