"""Two nodes on one machine: the README's multi-node path, as gloo ranks on the CPU.

Two `bench run` processes start at once, each a "node" (torchrun's c10d rendezvous on a
localhost port, `--nnodes 2`); a 2-rank pair then runs one rank on each. torchrun orders the
nodes by address, so the node given `--local-addr 127.0.0.1` runs rank 0 of every pair and
writes the results; the other one (127.0.0.2) reports each pair SKIPPED, naming where the
results are. A rank that fails on one node ends the pair on both, with its reason, though
the other node's rank waits outside any collective (as NCCL would: torchrun does not tell
the other node's ranks). Not tested here: two real machines, GPUs, NCCL.
"""
from __future__ import annotations

import json
import os
import signal
import socket
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from core import REPO_ROOT
from core.ranks import LaunchOutcome, nodes, split_problem, torchrun_args
from tests.test_ranks import BASELINE, COMMON, HONEST

DEADLINE_S = 150  # both nodes: ~10-20 s each on a loaded 2-core machine; a hang ends here
RANK1_RAISES_RANK0_WAITS = '''
import time

import torch.distributed as dist

from ._ar_common import AllReduce


class Rank1RaisesRank0Waits(AllReduce):
    def run(self, x):
        if dist.get_rank() == 1:
            raise RuntimeError("boom on rank 1")
        time.sleep(3600)  # outside any collective: NCCL would wait the same, unaware


get_benchmark = Rank1RaisesRank0Waits
'''


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def _two_nodes(root: Path, target: str, tmp_path: Path, timeout_s: int = 60) -> dict[str, dict]:
    """`bench run TARGET` as node a (rank 0's) and node b, started together; waits for both
    (each in a session of its own, killed at the deadline). Per node: its exit code, its
    output and its results.json."""
    rendezvous = (f"--nnodes 2 --rdzv-backend c10d --rdzv-endpoint 127.0.0.1:{_free_port()} "
                  f"--rdzv-id test-{uuid.uuid4().hex[:8]}")
    procs = {}
    for node, addr in (("a", "127.0.0.1"), ("b", "127.0.0.2")):
        env = {**os.environ, "AISP_ROOT": str(root), "AISP_TEST_RANK_PIDS": str(tmp_path / "pids"),
               "AISP_TORCHRUN_ARGS": f"{rendezvous} --local-addr {addr}"}
        out = open(tmp_path / f"{node}.out", "w")
        procs[node] = subprocess.Popen(
            [sys.executable, "-m", "cli.aisp", "bench", "run", target, "--iterations", "4",
             "--warmup", "1", "--timeout", str(timeout_s), "--output-dir", str(tmp_path / node)],
            cwd=REPO_ROOT, env=env, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        out.close()
    deadline = time.monotonic() + DEADLINE_S
    try:
        while any(p.poll() is None for p in procs.values()) and time.monotonic() < deadline:
            time.sleep(0.2)
    finally:
        late = [node for node, p in procs.items() if p.poll() is None]
        for p in procs.values():
            if p.poll() is None:
                os.killpg(p.pid, signal.SIGKILL)
                p.wait()
    found = {}
    for node, p in procs.items():
        output = (tmp_path / f"{node}.out").read_text()
        assert node not in late, f"node {node} still ran after {DEADLINE_S} s:\n{output[-3000:]}"
        runs = list((tmp_path / node).glob("*/results.json"))
        assert len(runs) == 1, output[-3000:]
        found[node] = {"code": p.returncode, "output": output, "pid": p.pid,
                       "pairs": {r["pair"]: r for r in json.loads(runs[0].read_text())["pairs"]}}
    return found


def _left_running(nodes_run: dict[str, dict], pids_file: Path) -> list[int]:
    """Processes still alive: a rank (pids written in setup()) or anything in a node's session."""
    alive = []
    for pid in {int(p) for p in pids_file.read_text().split()} if pids_file.exists() else ():
        try:
            os.kill(pid, 0)
            alive.append(pid)
        except ProcessLookupError:
            pass
    for run in nodes_run.values():
        try:
            os.killpg(run["pid"], 0)
            alive.append(run["pid"])
        except ProcessLookupError:
            pass
    return alive


def _none_left(nodes_run: dict[str, dict], pids_file: Path) -> None:
    gone_by = time.monotonic() + 15
    while _left_running(nodes_run, pids_file) and time.monotonic() < gone_by:
        time.sleep(0.2)
    assert not _left_running(nodes_run, pids_file), "a process outlived its node's run"


def test_two_nodes_split_the_ranks_and_rank0s_node_writes_the_results(make_chapter, tmp_path):
    """Two pairs in a row, each at a rendezvous of its own: one fails on node b's rank (both
    nodes end it, with that reason), then one that works is measured once, on node a."""
    chapter = make_chapter("ch95", {"_ar_common.py": COMMON,
                                    "baseline_fails.py": BASELINE,
                                    "optimized_fails.py": RANK1_RAISES_RANK0_WAITS,
                                    "baseline_works.py": BASELINE, "optimized_works.py": HONEST})
    run = _two_nodes(chapter.parent, "ch95", tmp_path)
    a, b = run["a"], run["b"]
    assert sorted(a["pairs"]) == sorted(b["pairs"]) == ["ch95:fails", "ch95:works"], a["output"]
    assert a["code"] == b["code"] == 1, a["output"][-3000:] + b["output"][-3000:]  # ch95:fails
    for node in (a, b):  # rank 0's node too reports rank 1's reason, not a timeout of its own
        failed = node["pairs"]["ch95:fails"]
        assert failed["status"] == "failed", node["output"][-3000:]
        assert failed["reason"].startswith("rank 1: ch95/optimized_fails.py: raised RuntimeError "
                                           "in run()"), failed["reason"]
        assert "boom on rank 1" in failed["reason"]
    measured, other = a["pairs"]["ch95:works"], b["pairs"]["ch95:works"]
    # one rank per node: world 2, as the pair declares (not 2 per node)
    assert measured["status"] == "ok" and measured["ranks"] == 2, measured["reason"]
    assert len(measured["baseline"]["rank_medians_ms"]) == 2
    [example] = measured["examples"]
    assert example["status"] == "ok" and example["verification"]["ok"] and example["speedup"]
    # the other node: a clean SKIP that says where the result is, and no numbers
    assert other["status"] == "skipped" and other["baseline"] is None, other
    assert other["reason"] == ("measured on the node that ran rank 0, whose results.json holds "
                               "it; rank 1 of 2 ran here (AISP_TORCHRUN_ARGS)")
    [skipped] = other["examples"]
    assert skipped["status"] == "skipped" and not {"timing", "speedup"} & set(skipped)
    assert "SKIPPED ch95:works: measured on the node that ran rank 0" in b["output"]
    _none_left(run, tmp_path / "pids")


def test_a_node_without_rank_0_reports_a_skip_and_one_with_it_a_failure():
    elsewhere = LaunchOutcome(0, None, [2, 3], 4).verdict("ch04:dp")
    assert elsewhere == ("measured on the node that ran rank 0, whose results.json holds it; "
                         "ranks 2, 3 of 4 ran here (AISP_TORCHRUN_ARGS)", "skipped")
    reason, status = LaunchOutcome(0, None, [0, 1], 4).verdict("ch04:dp")  # rank 0 wrote nothing
    assert status == "failed" and "no rank wrote a result" in reason
    assert LaunchOutcome(1, "rank 3: boom", [2, 3], 4).verdict("ch04:dp") == ("rank 3: boom", "failed")


def test_the_rendezvous_splits_a_pairs_ranks_over_the_nodes(monkeypatch):
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes=2 --rdzv-backend c10d "
                                             "--rdzv-endpoint h0:29500 --rdzv-id run7")
    assert nodes() == 2 and split_problem(4) is None
    assert split_problem(3) == ("runs as 3 ranks, which the 2 nodes of AISP_TORCHRUN_ARGS "
                                "cannot share evenly")
    args = torchrun_args(1, ["s", "o"], pair="ch04:dp")
    assert args[args.index("--rdzv-id") + 1] == "run7-ch04_dp"  # a rendezvous per pair
    assert "--standalone" not in args and "--nproc-per-node=1" in args
    assert "--standalone" in torchrun_args(2, ["s", "o"], "core.toolchild", local=True)
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 2 --rdzv-endpoint h0:29500 --rdzv_id=r")
    assert "--rdzv_id=r-ch04_dp" in torchrun_args(1, ["s", "o"], pair="ch04:dp")
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 2 --rdzv-endpoint h0:29500")
    args = torchrun_args(1, ["s", "o"], pair="ch04:dp")
    assert args[args.index("--rdzv-id") + 1] == "aisp-ch04_dp"
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 1:2 --rdzv-endpoint h0:29500")
    with pytest.raises(ValueError, match="give a fixed node count"):
        nodes()


def test_each_node_needs_gpus_for_its_share_and_an_uneven_split_is_a_skip(monkeypatch):
    import torch

    from core.benchmark import Benchmark, Requirements
    from core.pairfile import unmet_requirement

    class TwoGpus(Benchmark):
        supports_cpu = True
        requires = Requirements(gpus=2)

    class ThreeGpus(TwoGpus):
        requires = Requirements(gpus=3)

    class TwoInOneProcess(TwoGpus):
        requires = Requirements(gpus=2, one_process=True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 1)
    monkeypatch.delenv("AISP_TORCHRUN_ARGS", raising=False)
    assert unmet_requirement(TwoGpus(), "cuda") == "needs 2 GPUs; this machine has 1"
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 2 --rdzv-endpoint h0:29500")
    assert unmet_requirement(TwoGpus(), "cuda") is None  # one rank, one GPU on each node
    assert unmet_requirement(TwoInOneProcess(), "cuda") == "needs 2 GPUs; this machine has 1"
    assert unmet_requirement(ThreeGpus(), "cpu") == (
        "runs as 3 ranks, which the 2 nodes of AISP_TORCHRUN_ARGS cannot share evenly")


def test_symmetric_memory_sides_skip_over_several_nodes_and_their_baselines_still_run(monkeypatch):
    """Torch symmetric memory maps peers' buffers over NVLink, which one machine's GPUs share.
    Two nodes on one 4xH200 host failed every such side in the rendezvous ("allocations from
    overlapping devices") and took the stem's other sides down with them."""
    from pathlib import Path

    from core.pairfile import load_benchmark, unmet_requirement

    root = Path(__file__).resolve().parents[1]
    one_node = ["optimized_symmetric_memory", "optimized_tensor_parallel_async",
                "optimized_nvshmem_pipeline", "optimized_nvshmem_pipeline_store"]
    either = ["baseline_symmetric_memory", "baseline_tensor_parallel", "optimized_tensor_parallel"]
    monkeypatch.setenv("AISP_TORCHRUN_ARGS", "--nnodes 2 --rdzv-endpoint h0:29500")
    for stem in one_node:
        why = unmet_requirement(load_benchmark(root / "ch04" / f"{stem}.py"), "cpu")
        assert why and "one node" in why and "2 nodes" in why, stem
    for stem in either:
        assert unmet_requirement(load_benchmark(root / "ch04" / f"{stem}.py"), "cpu") is None, stem
    monkeypatch.delenv("AISP_TORCHRUN_ARGS")
    why = unmet_requirement(load_benchmark(root / "ch04" / "optimized_tensor_parallel_async.py"), "cpu")
    assert why and "one node" not in why  # on one machine only the CPU stops it
