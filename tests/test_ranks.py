"""Multi-GPU pairs on a CPU machine: the same launcher (torchrun) with 2 gloo ranks.

A fake pair all-reduces a per-rank vector. Checked through the real runner: rank 0 writes
the result with every rank's medians; a variant wrong on one rank fails on all (naming the
rank) while its honest sibling passes; a rank that raises ends the pair with that rank's
reason; a rank that hangs is killed at the timeout with every process of the pair; and on a
machine with fewer GPUs than a pair needs, it is skipped with the reason.
"""
from __future__ import annotations

import os
import re
import time

import torch

from core.benchmark import Requirements
from core.discovery import select
from core.pairfile import unmet_requirement
from core.ranks import MULTICAST_OFF, torchrun_args
from core.runner import RunOptions, run_suite

COMMON = '''
"""Two ranks each hold a vector drawn from (seed, rank); run() all-reduces it (sum)."""
import torch
import torch.distributed as dist

from core.benchmark import Benchmark, Requirements, Workload

N = 1024


class AllReduce(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2)

    def setup(self, ctx):
        import os
        if os.environ.get("AISP_TEST_RANK_PIDS"):  # the test checks these processes end with the pair
            with open(os.environ["AISP_TEST_RANK_PIDS"], "a") as pids:
                pids.write(f"{os.getpid()} ")

    def make_inputs(self, seed):
        return self.randn(N, gen=self.generator(seed * 7 + dist.get_rank()))

    def run(self, x):
        out = x.clone()
        dist.all_reduce(out)
        return out

    def workload(self):
        return Workload(bytes=2 * N * 4)
'''
BASELINE = "from ._ar_common import AllReduce\n\nget_benchmark = AllReduce\n"
HONEST = '''
import torch.distributed as dist

from ._ar_common import AllReduce


class InPlaceCopy(AllReduce):
    def run(self, x):
        out = x * 1.0
        dist.all_reduce(out)
        return out


get_benchmark = InPlaceCopy
'''
WRONG_ON_RANK1 = '''
import torch.distributed as dist

from ._ar_common import AllReduce


class WrongOnRank1(AllReduce):
    def run(self, x):
        out = super().run(x)
        return out + 1.0 if dist.get_rank() == 1 else out


get_benchmark = WrongOnRank1
'''
RAISES_ON_RANK1 = '''
import torch.distributed as dist

from ._ar_common import AllReduce


class RaisesOnRank1(AllReduce):
    def run(self, x):
        if dist.get_rank() == 1:
            raise RuntimeError("boom on rank 1")
        return super().run(x)  # rank 0 waits in the all-reduce rank 1 never joins


get_benchmark = RaisesOnRank1
'''
HANGS_ON_RANK1 = '''
import os
import time

import torch.distributed as dist

from ._ar_common import AllReduce


class HangsOnRank1(AllReduce):
    def run(self, x):
        if dist.get_rank() == 1:
            with open(os.environ["AISP_TEST_HUNG"], "w") as mark:  # the hang has begun
                mark.write(str(os.getpid()))
            time.sleep(3600)
        return super().run(x)


get_benchmark = HangsOnRank1
'''


def _run(make_chapter, tmp_path, name, files, timeout_s=180.0):
    chapter = make_chapter(name, {"_ar_common.py": COMMON, "baseline_ar.py": BASELINE, **files})
    options = RunOptions(iterations=4, warmup=1, timeout_s=timeout_s, output_dir=tmp_path / "runs")
    record = run_suite(select([name], root=chapter.parent), options)
    return {ex.name: ex for ex in record.rows}, record


def _still_running(pids_file) -> list[int]:
    """The rank processes (their pids, written in setup()) that are still alive. Ranks are
    forked from the pair's launcher, so their command line does not name the pair."""
    alive = []
    for line in pids_file.read_text().split() if pids_file.exists() else []:
        try:
            os.kill(int(line), 0)
        except ProcessLookupError:
            continue
        alive.append(int(line))
    return alive


def test_two_ranks_agree_and_rank0_reports_every_rank(make_chapter, tmp_path):
    rows, record = _run(make_chapter, tmp_path, "ch94", {"optimized_ar.py": HONEST,
                                                         "optimized_ar_wrong.py": WRONG_ON_RANK1})
    honest, wrong = rows["ar"], rows["ar_wrong"]
    assert honest.status == "ok" and honest.speedup, honest.reason
    assert len(honest.baseline.rank_medians_ms) == 2 and len(honest.timing.rank_medians_ms) == 2
    assert honest.timing.stats.n == 4
    # the slowest rank sets each sample: the headline is at least every rank's median
    assert honest.timing.median_ms >= max(honest.timing.rank_medians_ms)
    assert honest.baseline.median_ms >= max(honest.baseline.rank_medians_ms)
    assert wrong.status == "failed" and wrong.reason.startswith("rank 1: verification failed"), wrong.reason


def test_multi_gpu_pairs_are_not_profiled_and_say_why(make_chapter, tmp_path):
    chapter = make_chapter("ch90", {"_ar_common.py": COMMON, "baseline_ar.py": BASELINE,
                                    "optimized_ar.py": HONEST})
    options = RunOptions(iterations=2, warmup=1, timeout_s=180, output_dir=tmp_path / "runs",
                         profile="minimal")
    record = run_suite(select(["ch90"], root=chapter.parent), options)
    pair = record.pairs[0]
    assert pair.status == "ok" and pair.profile["status"] == "skipped"
    assert "multi-GPU pairs are not profiled" in pair.profile["reason"]


def test_a_rank_that_raises_ends_the_pair_with_its_reason(make_chapter, tmp_path, monkeypatch):
    pids = tmp_path / "rank-pids"
    monkeypatch.setenv("AISP_TEST_RANK_PIDS", str(pids))
    rows, _ = _run(make_chapter, tmp_path, "ch93", {"optimized_ar.py": RAISES_ON_RANK1})
    row = rows["ar"]
    assert row.status == "failed"
    assert "rank 1: ch93/optimized_ar.py: raised RuntimeError in run()" in row.reason, row.reason
    assert "boom on rank 1" in row.reason
    assert len(pids.read_text().split()) >= 2  # both ranks set up (baseline and variant, per rank)
    gone_by = time.monotonic() + 15
    while _still_running(pids) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not _still_running(pids), "a rank outlived its pair"


def test_a_rank_that_hangs_is_killed_with_the_whole_pair(make_chapter, tmp_path, monkeypatch):
    # 10 s: both ranks are forked (about 1 s to start on a loaded 2-core box), the baseline
    # runs and rank 1 hangs well within it; the mark rank 1 writes as it hangs proves the
    # timeout cut a hang short, not a slow start
    hung, pids = tmp_path / "hung", tmp_path / "rank-pids"
    monkeypatch.setenv("AISP_TEST_HUNG", str(hung))
    monkeypatch.setenv("AISP_TEST_RANK_PIDS", str(pids))
    started = time.perf_counter()
    rows, record = _run(make_chapter, tmp_path, "ch92", {"optimized_ar.py": HANGS_ON_RANK1}, timeout_s=10)
    row = rows["ar"]
    assert row.status == "failed" and "timed out after 10 s" in row.reason, row.reason
    # killed without a result, it is still a 2-rank pair: its FAILED row goes to the `2x_`
    # block of the chapter README, not the one-GPU block
    assert record.pairs[0].ranks == 2
    assert hung.exists(), "rank 1 never reached its hang: the pair timed out before it"
    # at the timeout every process wrote its stacks: rank 1's is in its sleep, rank 0's in the
    # all-reduce waiting for it
    where = row.reason.split("the pair's code was at ")[1]
    assert re.search(r"ch92/optimized_ar\.py:\d+ in run", where), row.reason
    assert "ch92/_ar_common.py" in where, row.reason
    assert time.perf_counter() - started < 90
    assert int(hung.read_text()) in map(int, pids.read_text().split())
    gone_by = time.monotonic() + 15  # the ranks die with their launcher (parent-death signal)
    while _still_running(pids) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not _still_running(pids), "a rank outlived its pair by 15 s"


def test_fewer_gpus_than_needed_is_a_skip_with_the_reason(monkeypatch):
    from core.benchmark import Benchmark

    class TwoGpus(Benchmark):
        requires = Requirements(gpus=2)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    assert unmet_requirement(TwoGpus(), "cuda") == "needs 2 GPUs; this machine has 1"


def test_torchrun_is_standalone_unless_rendezvous_is_given(monkeypatch):
    monkeypatch.delenv("AISP_TORCHRUN_ARGS", raising=False)
    command = torchrun_args(2, ["spec.json", "out.json"])
    assert command[0] == "--standalone"
    assert "--nproc-per-node=2" in command and command[-4:] == ["-m", "core.child", "spec.json", "out.json"]
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 2 --rdzv-backend c10d --rdzv-endpoint h0:29500")
    command = torchrun_args(8, ["s", "o"])
    assert "--standalone" not in command and "--rdzv-endpoint" in command and "--nproc-per-node=8" in command


def test_standalone_ranks_reach_the_store_by_address_not_by_name(monkeypatch):
    """torchrun publishes the agent's socket.getfqdn() as MASTER_ADDR unless given a local
    address, and every forked rank resolves it: one of 8 CPU ranks hung there in a CI run."""
    import os

    import torch.distributed.launcher.api as launcher_api

    from core.ranks import torchrun_args, torchrun_here

    seen = {}

    def fake_launch(config, entrypoint):
        seen["local_addr"] = config.local_addr
        return lambda *args: None

    monkeypatch.setattr(launcher_api, "elastic_launch", fake_launch)
    monkeypatch.delenv("AISP_TORCHRUN_ARGS", raising=False)
    assert torchrun_here(torchrun_args(2, ["spec.json", "out.json"]), dict(os.environ)) == 0
    assert seen["local_addr"] == "127.0.0.1"


def test_the_launcher_keeps_multicast_off_and_names_the_first_failure(monkeypatch):
    from pathlib import Path

    from core.ranks import RANK_DIR_ENV, launch

    seen = {}

    def fake_torchrun(args, env):
        seen["args"], seen["env"] = args, env
        folder = Path(env[RANK_DIR_ENV])  # two ranks fail, rank 1 first
        (folder / "rank0.error").write_text("200.0\nlater")
        (folder / "rank1.error").write_text("100.0\nfirst")
        return 1

    monkeypatch.setenv("NCCL_NVLS_ENABLE", "1")  # a user's own choice is kept
    outcome = launch(2, ["spec.json", "out.json"], run=fake_torchrun)
    assert outcome.code == 1 and outcome.first_error == "rank 1: first"
    env = seen["env"]
    assert env["NCCL_NVLS_ENABLE"] == "1"
    assert {k: env[k] for k in MULTICAST_OFF if k != "NCCL_NVLS_ENABLE"} == {
        "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1", "NVSHMEM_DISABLE_NVLS": "1"}


def test_multi_gpu_results_are_stored_under_the_gpu_count(make_chapter, tmp_path, store_noisy):
    from core.expectations import pair_key

    chapter = make_chapter("ch91", {"_ar_common.py": COMMON, "baseline_ar.py": BASELINE,
                                    "optimized_ar.py": HONEST})
    options = RunOptions(iterations=4, warmup=1, timeout_s=180, output_dir=tmp_path / "runs",
                         update_expectations=True)
    record = run_suite(select(["ch91"], root=chapter.parent), options)
    key = record.fingerprint["hardware_key"]
    assert record.pairs[0].ranks == 2 and pair_key(key, record.pairs[0]) == f"2x_{key}"
    assert (chapter / f"expectations_2x_{key}.json").exists()
    assert not (chapter / f"expectations_{key}.json").exists()
    again = run_suite(select(["ch91"], root=chapter.parent),
                      RunOptions(iterations=4, warmup=1, timeout_s=180, output_dir=tmp_path / "runs2"))
    assert again.rows[0].expectation.status != "new"  # gated against the 2x file


# A single-process baseline (nn.DataParallel's shape): rank 0 computes the whole answer from
# the global batch and rank 1's run() returns nothing; the variant splits the work by rank.
RANK0_COMMON = '''
import torch
import torch.distributed as dist

from core.benchmark import Benchmark, Requirements, Workload

N = 512


class SumRows(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2)
    rank0_output = True

    def make_inputs(self, seed):
        return self.randn(2, N, gen=self.generator(seed))  # row r is rank r's share

    def run(self, x):
        return x.sum(0) if dist.get_rank() == 0 else None

    def workload(self):
        return Workload(bytes=3 * N * 4)
'''
RANK0_SPLIT = '''
import torch.distributed as dist

from ._sum_common import SumRows


class Split(SumRows):
    def run(self, x):
        out = x[dist.get_rank()].clone()
        dist.all_reduce(out)
        return out


get_benchmark = Split
'''
RANK0_WRONG = '''
import torch.distributed as dist

from ._sum_common import SumRows


class OwnRowOnly(SumRows):
    def run(self, x):
        return x[dist.get_rank()].clone()  # forgot the all-reduce: rank 0 holds half the answer


get_benchmark = OwnRowOnly
'''
RANK0_MUTATES_LATE = '''
import torch.distributed as dist

from ._sum_common import SumRows


class MutatesOnceTimed(SumRows):
    """Honest through verification, then writes into its inputs on rank 0 alone: the check
    fails the side on rank 0 only, and rank 1 (which ran no baseline) must learn of it."""
    calls = 0

    def run(self, x):
        self.calls += 1
        if dist.get_rank() == 0 and self.calls > 8:
            x[0, 0] += 1.0
        out = x[dist.get_rank()].clone()
        dist.all_reduce(out)
        return out


get_benchmark = MutatesOnceTimed
'''


def test_a_rank0_only_answer_is_verified_on_rank0(make_chapter, tmp_path):
    chapter = make_chapter("ch98", {"_sum_common.py": RANK0_COMMON,
                                    "baseline_sum.py": "from ._sum_common import SumRows\n\n"
                                                       "get_benchmark = SumRows\n",
                                    "optimized_sum.py": RANK0_SPLIT,
                                    "optimized_sum_wrong.py": RANK0_WRONG,
                                    "optimized_sum_mutates.py": RANK0_MUTATES_LATE})
    options = RunOptions(iterations=4, warmup=1, timeout_s=180, output_dir=tmp_path / "runs")
    rows = {ex.name: ex for ex in run_suite(select(["ch98"], root=chapter.parent), options).rows}
    honest, wrong, mutates = rows["sum"], rows["sum_wrong"], rows["sum_mutates"]
    assert honest.status == "ok" and honest.speedup, honest.reason
    assert honest.verification.checks >= 3  # two seeds and at least one timed output, on rank 0
    assert wrong.status == "failed" and wrong.reason.startswith("verification failed"), wrong.reason
    # failed by rank 0 alone while timing: the others agree and the pair's other sides stand
    assert mutates.status == "failed" and "during timing" in mutates.reason, mutates.reason


ONE_PROCESS = '''
"""Two GPUs from one process: no ranks, no process group (on the CPU: the same device twice)."""
import torch.distributed as dist

from core.benchmark import Benchmark, Requirements


class TwoDevicesOneProcess(Benchmark):
    supports_cpu = True
    requires = Requirements(gpus=2, one_process=True)

    def make_inputs(self, seed):
        return self.randn(256, gen=self.generator(seed))

    def run(self, x):
        assert not dist.is_available() or not dist.is_initialized(), "one_process ran as ranks"
        return x * 2.0


get_benchmark = TwoDevicesOneProcess
'''


def test_a_one_process_pair_runs_as_one_process_not_as_ranks(make_chapter, tmp_path):
    optimized = "from ._two_common import TwoDevicesOneProcess as get_benchmark\n"
    chapter = make_chapter("ch93", {"_two_common.py": ONE_PROCESS, "baseline_two.py": optimized,
                                    "optimized_two.py": optimized})
    options = RunOptions(iterations=4, warmup=1, timeout_s=120.0, output_dir=tmp_path / "runs")
    record = run_suite(select(["ch93"], root=chapter.parent), options)
    row = record.rows[0]
    assert row.status == "ok", row.reason
    # a single process: no per-rank medians (launched as two ranks, run() would have failed)
    assert not row.baseline.rank_medians_ms


def test_ranks_start_afresh_when_a_forked_rank_could_not_use_the_gpu(make_chapter, tmp_path):
    """On a GPU the launcher has usually touched CUDA (torch refuses CUDA in its forked
    children), so its ranks start as fresh processes, with the token desk on their stdin. That
    path, forced here on CPU, measures and signs as the forked one does."""
    import json
    import sys

    from core.process import child_env
    from core.hardware import cuda_survives_fork
    from core.runner import pair_spec
    from tests.conftest import run_with_desk

    assert cuda_survives_fork()  # nothing here touched CUDA
    chapter = make_chapter("ch91", {"_ar_common.py": COMMON, "baseline_ar.py": BASELINE,
                                    "optimized_ar.py": HONEST})
    (pair, examples), = select(["ch91"], root=chapter.parent)
    spec, out = tmp_path / "spec.json", tmp_path / "out.json"
    spec.write_text(json.dumps(pair_spec(pair, examples, RunOptions(iterations=2, warmup=1)).to_dict()))
    script = ("import core.hardware, core.ranks as r\n"
              "core.hardware.cuda_survives_fork = lambda: False\n"
              f"o = r.launch(2, [{str(spec)!r}, {str(out)!r}])\n"
              "print('code', o.code, o.first_error)\n")
    stdout, stderr = run_with_desk([sys.executable, "-c", script], "tok123", 180,
                                   env=child_env(chapter.parent))
    assert "code 0 None" in stdout, stdout[-2000:] + stderr[-3000:]
    signed = json.loads(out.read_text())
    assert signed["token"] == "tok123"
    result = signed["payload"]
    assert result["status"] == "ok" and result["ranks"] == 2
    assert [e["status"] for e in result["examples"]] == ["ok"]


SCALING_COMMON = COMMON.replace("requires = Requirements(gpus=2)",
                                'requires = Requirements(gpus=2, scales="weak")')


def test_a_pair_that_scales_runs_on_the_gpus_asked_for_and_is_stored_by_the_count(
        make_chapter, tmp_path, store_noisy):
    """`scales`: the minimum by default on a CPU (there are no GPUs to count), `--gpus 3` runs
    3 ranks stored under `3x_`; a pair about exactly 2 GPUs stays at 2; `--gpus 1` SKIPs both."""
    chapter = make_chapter("ch91", {"_ar_common.py": SCALING_COMMON, "baseline_ar.py": BASELINE,
                                    "optimized_ar.py": HONEST})
    fixed = make_chapter("ch90", {"_ar_common.py": COMMON, "baseline_ar.py": BASELINE,
                                  "optimized_ar.py": HONEST})

    def run(gpus, folder, store=True):
        return run_suite(select([folder.name], root=folder.parent),
                         RunOptions(iterations=4, warmup=1, timeout_s=180, gpus=gpus,
                                    update_expectations=store,
                                    output_dir=tmp_path / f"runs-{folder.name}-{gpus}"))
    default = run(None, chapter)
    key = default.fingerprint["hardware_key"]
    assert default.pairs[0].ranks == 2 and (chapter / f"expectations_2x_{key}.json").exists()
    three = run(3, chapter)
    assert three.pairs[0].ranks == 3, three.rows[0].reason
    assert three.rows[0].status == "ok", three.rows[0].reason
    assert (chapter / f"expectations_3x_{key}.json").exists()
    assert run(3, fixed, store=False).pairs[0].ranks == 2  # a fixed count is not scaled
    cut = run(1, chapter, store=False)
    assert cut.rows[0].status == "skipped" and "--gpus 1 was given" in cut.rows[0].reason


DDP_SUM_NOT_MEAN = '''
import torch.distributed as dist

from ch04.baseline_ddp_overlap import AllReduceAfterBackward


class SumNotMean(AllReduceAfterBackward):
    def average(self):
        dist.all_reduce(self.flat)  # forgot to divide by the world size: every step twice as long


get_benchmark = SumNotMean
'''


def test_a_gradient_summed_instead_of_averaged_fails_the_real_ddp_pair(make_chapter, tmp_path):
    """ch04's data-parallel step, planted: the gradients' shape is right and only their scale
    is off (x world), which the log2 RMS output catches at any size."""
    chapter = make_chapter("ch97", {
        "baseline_ddp.py": "from ch04.baseline_ddp_overlap import AllReduceAfterBackward as get_benchmark\n",
        "optimized_ddp.py": "from ch04.baseline_ddp_overlap import AllReduceAfterBackward as get_benchmark\n",
        "optimized_ddp_sum.py": DDP_SUM_NOT_MEAN})
    options = RunOptions(iterations=4, warmup=1, timeout_s=180, output_dir=tmp_path / "runs")
    rows = {ex.name: ex for ex in run_suite(select(["ch97"], root=chapter.parent), options).rows}
    assert rows["ddp"].status == "ok", rows["ddp"].reason
    assert rows["ddp_sum"].status == "failed" and "verification failed" in rows["ddp_sum"].reason, \
        rows["ddp_sum"].reason
