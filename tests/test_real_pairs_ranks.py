"""Every CPU-capable multi-GPU pair in the repo runs as gloo ranks under torchrun and verifies.

Apart from tests/test_real_pairs.py (whose helpers it uses) so that the test runner can put
this one long run on a worker of its own (pytest-xdist --dist loadfile). Pairs that scale
with the GPU count (`Requirements(scales="weak")` or `"strong"`) run there at their minimum, 2 ranks; those
whose code splits work by the world size also run at 4 (`bench run --gpus 4`), and those
whose sizes must divide by it at 8, the most GPUs of one node.
"""
from __future__ import annotations

import importlib

import pytest

from core.benchmark import Requirements, option
from tests.conftest import cpu_only
from tests.test_real_pairs import CHAPTERS, MULTI_RANK_CPU_PAIRS, _ranks

# Multi-GPU pairs about exactly their GPU count: a P2P copy between two GPUs. (Pairs that
# drive their GPUs from one process with a role per GPU, `one_process`, stay fixed too:
# prefill on one GPU and decode on the other, a two-stage serving pipeline.)
FIXED_COUNT = {"ch02:p2p_transfer"}
# CPU-capable scaling pairs whose code splits work by the world size (stages, shards,
# experts, replicas' requests) run at 8 gloo ranks (below); at 4, the replicas' request
# split, which the 8-rank run leaves out. The others divide by 8, so by 4 too, and `bench run
# --gpus 4` verified them on the CPU (2026-11-28); the pipeline at 4 took ~17 s here.
AT_FOUR_RANKS = ["ch15:continuous_batching_multigpu"]
# ... and at 8 (`bench run --gpus 8`), where their sizes must divide by 8 (experts, stages'
# micro-batches, sequence shards, hidden columns): ~25 s together on 2 cores. Left out:
# continuous_batching_multigpu (~13 s alone; request i goes to replica i mod world, nothing
# has to divide) and fsdp (~13 s; FSDP2 pads uneven shards), which verify at 8 too.
AT_EIGHT_RANKS = ["ch04:pipeline_parallel", "ch04:tensor_parallel", "ch13:context_parallel",
                  "ch15:expert_parallel"]


def _requires(path) -> Requirements:
    bench = importlib.import_module(f"{path.parent.name}.{path.stem}").get_benchmark()
    return option(bench, "requires", Requirements())


MULTI_GPU = [(p.id, _requires(p.baseline)) for c in CHAPTERS for p in c.pairs
             if _requires(p.baseline).gpus > 1]


@pytest.mark.parametrize("pair, requires", MULTI_GPU, ids=[i for i, _ in MULTI_GPU])
def test_multi_gpu_pairs_scale_unless_about_a_fixed_count(pair, requires):
    """A multi-GPU pair whose technique scales with the GPU count runs on every GPU present
    (`scales`); only the pairs about exactly their count stay fixed."""
    assert bool(requires.scales) == (pair not in FIXED_COUNT and not requires.one_process), (
        f"{pair}: scales={requires.scales!r}; a scaling technique declares "
        f"Requirements(gpus=2, scales=\"weak\") or \"strong\", a fixed one is listed in FIXED_COUNT")


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


def _scaled_run(pairs: list[str], gpus: int, folder) -> dict:
    """`pairs` in one run at `gpus` gloo ranks (`bench run --gpus N`): pair id -> PairResult."""
    from core.discovery import select
    from core.runner import RunOptions, run_suite

    record = run_suite(select(pairs), RunOptions(iterations=2, warmup=1, timeout_s=300, gpus=gpus,
                                                 output_dir=folder / "runs"))
    return {result.pair: result for result in record.pairs}


def _check_scaled(result, pair: str, ranks: int) -> None:
    assert result.ranks == ranks, f"{pair}: ran at {result.ranks} ranks ({result.status}: {result.reason})"
    for example in result.examples:
        if example.status == "skipped":
            assert "needs a CUDA GPU" in example.reason, example.reason
            continue
        assert example.status == "ok", f"{example.id}: {example.reason}"
        assert example.verification.ok and len(example.timing.rank_medians_ms) == ranks


SCALED = {4: AT_FOUR_RANKS, 8: AT_EIGHT_RANKS}


@pytest.fixture(scope="module")
def scaled_runs(tmp_path_factory):
    """Each rank count's pairs in one run at that many gloo ranks, run once when first asked:
    ranks -> pair id -> PairResult."""
    runs: dict[int, dict] = {}

    def run(ranks: int) -> dict:
        if ranks not in runs:
            runs[ranks] = _scaled_run(SCALED[ranks], ranks, tmp_path_factory.mktemp(f"ranks{ranks}"))
        return runs[ranks]
    return run


@cpu_only
@pytest.mark.parametrize("ranks,pair", [(n, p) for n, pairs in SCALED.items() for p in pairs])
def test_scaling_pair_verifies_on_more_cpu_ranks(ranks, pair, scaled_runs):
    _check_scaled(scaled_runs(ranks)[pair], pair, ranks)
