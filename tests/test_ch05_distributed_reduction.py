"""ch05 `distributed_reduction` on a CPU: the per-feature statistics of a sharded batch.

The shared pieces (local [Σx, Σx²], the finish) against fp64 statistics of the whole data;
then both sides through the real runner as 2 gloo ranks under torchrun (where the host-staged
and on-device paths collapse to gloo, so this checks the arithmetic and the verification,
not the speed), with two planted wrong variants that must fail verification: one reduces
only its own shard, one forgets that the global batch has world × rows rows.
"""
from __future__ import annotations

import torch

from ch05._distributed_reduction_common import DatasetStats, finish, partial_sums
from core.discovery import select
from core.runner import RunOptions, run_suite

OWN_SHARD_ONLY = '''
import torch.distributed as dist

from ch05._distributed_reduction_common import DatasetStats, finish, partial_sums


class OwnShardOnly(DatasetStats):
    def run(self, shards):  # no all-reduce: the statistics of this rank's rows alone
        return finish(partial_sums(shards[dist.get_rank()]), self.rows)


get_benchmark = OwnShardOnly
'''
FORGETS_THE_WORLD = '''
import torch.distributed as dist

from ch05._distributed_reduction_common import DatasetStats, finish, partial_sums


class ForgetsTheWorld(DatasetStats):
    def run(self, shards):  # sums every rank's rows, divides by one rank's count
        sums = partial_sums(shards[dist.get_rank()])
        dist.all_reduce(sums)
        return finish(sums, self.rows)


get_benchmark = ForgetsTheWorld
'''


def test_shards_partials_give_the_statistics_of_the_whole_data():
    gen = torch.Generator().manual_seed(0)
    offset, scale = torch.rand(256, generator=gen) * 2 - 1, 0.5 + 1.5 * torch.rand(256, generator=gen)
    shards = torch.randn(4, 64, 256, generator=gen) * scale + offset
    stats = finish(sum(partial_sums(shard) for shard in shards), count=4 * 64)
    rows = shards.double().reshape(-1, 256)
    expected = torch.stack((rows.mean(dim=0), rows.var(dim=0, correction=0)))
    tol = DatasetStats.tolerance
    torch.testing.assert_close(stats.double(), expected, rtol=tol.rtol, atol=tol.atol)
    # one shard's statistics are far outside the pair's tolerance (what the planted variant does)
    own = finish(partial_sums(shards[0]), count=64).double()
    assert (own - expected).abs().max() > 100 * tol.atol


def test_pair_verifies_on_two_gloo_ranks_and_planted_wrong_variants_fail(make_chapter, tmp_path):
    # the real sides, re-exported, beside the planted ones: one torchrun launch for all four
    chapter = make_chapter("ch96", {
        "baseline_distributed_reduction.py":
            "from ch05.baseline_distributed_reduction import get_benchmark  # noqa: F401\n",
        "optimized_distributed_reduction.py":
            "from ch05.optimized_distributed_reduction import get_benchmark  # noqa: F401\n",
        "optimized_distributed_reduction_own_shard.py": OWN_SHARD_ONLY,
        "optimized_distributed_reduction_no_world.py": FORGETS_THE_WORLD,
    })
    options = RunOptions(iterations=2, warmup=1, timeout_s=120, output_dir=tmp_path / "runs")
    record = run_suite(select(["ch96"], root=chapter.parent), options)
    rows = {ex.name: ex for ex in record.rows}
    pair = record.pairs[0]
    assert pair.ranks == 2 and pair.teaching, (pair.status, pair.reason)

    honest = rows["distributed_reduction"]
    assert honest.status == "ok", honest.reason
    assert honest.verification.ok and len(honest.timing.rank_medians_ms) == 2
    for name in ("distributed_reduction_own_shard", "distributed_reduction_no_world"):
        wrong = rows[name]
        assert wrong.status == "failed" and "verification failed" in wrong.reason, (name, wrong.reason)
