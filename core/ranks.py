"""Pairs that need several GPUs: launched through torchrun, kept in step across ranks.

A pair whose baseline declares `requires = Requirements(gpus=N)` with N > 1 runs as N ranks
under `torchrun` (torch.distributed.run): the pair's child process becomes the launcher,
running `torchrun --standalone --nproc_per_node N -m core.child SPEC RESULT` in itself. The
ranks are forked from it where they can still use the GPU (it has imported torch and the
harness already: each fresh process would import them again, ~2 s of a CPU each), and start
afresh once it has touched CUDA; every rank inherits the token desk on its stdin, and rank 0
asks it for the token when it signs the result (core.signing). Every rank runs the same verification and timing
loop; the pair's own work uses the default process group (NCCL on GPUs, gloo on a CPU-only
machine, where a `supports_cpu` pair runs its N ranks as CPU processes — the tests do this),
and the harness agrees its decisions over a separate gloo group:

- the random seeds and capture positions come from one seed broadcast by rank 0;
- how many calls each round makes, and when to stop, are rank 0's, broadcast;
- a variant that fails a check on any rank fails on every rank (union of failures);
- anything that ends the whole pair on one rank (a side raising, a baseline mismatch, a
  replaced timing function) ends it on all: that rank writes its reason and exits, torchrun
  stops the others, and the launcher reports the reason of the first rank that failed.

Rank 0 gathers every rank's samples: the headline sample is the slowest rank's (a step is as
slow as its slowest rank), and each rank's median is kept.

Several nodes: AISP_TORCHRUN_ARGS holds torchrun's rendezvous arguments (`--nnodes 2
--rdzv-backend c10d --rdzv-endpoint HOST:PORT --rdzv-id ID`) and every node runs the same
`bench run`. A pair's ranks (its `requires.gpus`, or the count it scales to) are the world
size, split evenly over the nodes (`--nproc-per-node` = ranks / nodes; a count the nodes
cannot share evenly is a SKIP); each pair meets at a rendezvous of its own (the ID tagged
with the pair), so nodes never pair up different pairs. Rank 0's node writes the result; on
the other nodes the launcher finds that rank 0 did not run there (each rank leaves a mark in
the launcher's rank folder) and reports the pair SKIPPED, naming where the results are. A rank
that aborts also leaves its reason in the pair's store, so a node whose ranks fail only
because another node's rank went first reports that first reason. `hw peak` stays on one
machine (it measures this machine's ceilings).
"""
from __future__ import annotations

import ctypes
import os
import re
import shlex
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

# NVLink multicast (NVLS) is unavailable on the lent 2xH200 machine and must stay off there;
# the defaults below keep NCCL, symmetric memory and NVSHMEM from trying it. A user whose
# NVSwitch system supports it can export other values: these are only defaults.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
RANK_DIR_ENV = "AISP_RANK_DIR"  # where a failing rank writes its reason (set by the launcher)
TORCHRUN_ENV = "AISP_TORCHRUN_ARGS"  # torchrun's rendezvous arguments, for several nodes
ABORT_KEY = "aisp_abort_rank"  # + the rank: its reason, in the store every rank of the pair shares


@dataclass
class Ranks:
    """This process's place among the ranks of one pair (rank 0 of 1 when not distributed)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    control: Any = None  # the gloo group the harness agrees its decisions over
    across_nodes: bool = False  # some ranks run on other nodes (AISP_TORCHRUN_ARGS)

    @property
    def distributed(self) -> bool:
        return self.world > 1

    def from_rank0(self, value: Any) -> Any:
        """Rank 0's `value` on every rank."""
        if not self.distributed:
            return value
        import torch.distributed as dist

        box = [value]
        dist.broadcast_object_list(box, src=0, group=self.control)
        return box[0]

    def barrier(self, when: bool = True) -> None:
        """Every rank waits for the others, where `when`. Before each batch of a pair whose
        baseline runs on rank 0 alone (rank0_output, nn.DataParallel's shape): rank 0's
        baseline drives every GPU, and a rank that ran ahead into the next side's batch would
        start that side's collectives on a GPU rank 0's step still uses (its NCCL kernel
        spinning in another process while rank 0's kernels wait their turn)."""
        if self.distributed and when:
            import torch.distributed as dist

            dist.barrier(group=self.control)

    def slowest(self, samples_ms: dict[str, list[float]]) -> dict[str, list[float]]:
        """Each side's samples become the slowest rank's (ranks time the same calls, in step),
        in place; returns each side's median on every rank. One rank: nothing changes."""
        if not self.distributed:
            return {}
        from core.stats import summarize

        every, medians = self.all(samples_ms), {}
        for name in samples_ms:
            per_rank = [samples[name] for samples in every]
            samples_ms[name] = [max(values) for values in zip(*per_rank)]
            medians[name] = [summarize(samples).median for samples in per_rank]
        return medians

    def all(self, value: Any) -> list[Any]:
        """Every rank's `value`, in rank order, on every rank."""
        if not self.distributed:
            return [value]
        import torch.distributed as dist

        out: list[Any] = [None] * self.world
        dist.all_gather_object(out, value, group=self.control)
        return out

    def any(self, flag: bool) -> bool:
        return any(self.all(bool(flag)))

    def union(self, items: set[str]) -> set[str]:
        return set().union(*self.all(set(items)))

    def abort(self, reason: str) -> None:
        """End the pair on every rank: write the reason for the launcher, exit at once
        (torchrun then stops the other ranks, wherever they are waiting). Across nodes the
        reason also goes into the pair's store, and the reasons other ranks left there come
        back: a rank on another node may have failed first (its launcher's folder is not ours)."""
        noted = {self.rank: f"{time.time():.6f}\n{reason}"}
        if self.across_nodes:
            noted.update(_share_abort(self.rank, self.world, noted[self.rank]))
        folder = os.environ.get(RANK_DIR_ENV)
        for rank, text in noted.items() if folder else ():
            (Path(folder) / f"rank{rank}.error").write_text(text)
        sys.stderr.write(f"[rank {self.rank}] {reason}\n")
        sys.stderr.flush()
        os._exit(1)


STORE_WAIT_S = 2.0  # the most an aborting rank waits on the pair's store (its host may be gone)
WATCH_S = 0.5  # how often a rank of a pair on several nodes looks for another rank's abort
REJOIN_S = 1800.0  # how long a node joins its pair's rendezvous again (the pair's timeout is sooner)


def _abort_key(rank: int) -> str:
    return f"{ABORT_KEY}{rank}"


def _share_abort(rank: int, world: int, mine: str) -> dict[int, str]:
    """Leave this rank's abort (`stamp\nreason`) in the default group's store and return
    the other ranks' found there; {} when the store does not answer within STORE_WAIT_S."""
    import threading

    found: dict[int, str] = {}

    def exchange() -> None:
        try:
            store = _store()
            store.set(_abort_key(rank), mine)
            for other in range(world):
                if other != rank and store.check([_abort_key(other)]):
                    found[other] = store.get(_abort_key(other)).decode()
        except Exception:  # noqa: BLE001 - its host ended: this rank's own reason stands
            pass
    worker = threading.Thread(target=exchange, daemon=True)
    worker.start()
    worker.join(STORE_WAIT_S)
    return dict(found) if not worker.is_alive() else {}


def _store() -> Any:
    from torch.distributed.distributed_c10d import _get_default_store

    return _get_default_store()


def _watch_other_nodes(ranks: Ranks) -> None:
    """Several nodes: a thread that ends this rank once another rank aborted. On one node
    torchrun stops every rank when one fails; another node's failure reaches this node's
    agent late or never, and NCCL waits for the missing rank until the pair's timeout."""
    import threading

    keys = [_abort_key(other) for other in range(ranks.world) if other != ranks.rank]

    def watch() -> None:
        store = _store()
        while True:
            time.sleep(WATCH_S)
            try:
                ended = [key for key in keys if store.check([key])]
            except Exception as exc:  # noqa: BLE001
                # its host is the launcher of one node, and it outlives that node's ranks
                # unless they failed: every node waits for all at the end of a pair
                ranks.abort(f"the pair's rendezvous store stopped answering ({type(exc).__name__}): "
                            f"the node that held it ended the pair; its result says why")
            if ended:
                ranks.abort(f"rank {ended[0][len(ABORT_KEY):]} (on another node) aborted the pair")
    threading.Thread(target=watch, name="aisp-watch-ranks", daemon=True).start()


def from_environment(device: str) -> Ranks:
    """Inside torchrun: join the process group (NCCL on CUDA, gloo on CPU) and a gloo group
    for the harness's own agreement; outside it: a single rank."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if os.environ.get("OMP_NUM_THREADS", "").isdigit():  # a rank forked after torch loaded keeps
        torch.set_num_threads(int(os.environ["OMP_NUM_THREADS"]))  # the launcher's thread count
    if device.startswith("cuda"):
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    control = dist.new_group(backend="gloo")
    across = world > int(os.environ.get("LOCAL_WORLD_SIZE", world))
    ranks = Ranks(dist.get_rank(), world, local_rank, control, across)
    folder = os.environ.get(RANK_DIR_ENV)
    if folder:  # the launcher learns which ranks ran on its node (rank 0's writes the result)
        (Path(folder) / f"rank{ranks.rank}.here").write_text(str(world))
    if across:
        _watch_other_nodes(ranks)
    return ranks


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent (torchrun) dies. torchrun starts each
    rank in a session of its own, so killing the pair's process group alone would leave
    ranks waiting in a collective forever."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def rendezvous_args() -> list[str]:
    """AISP_TORCHRUN_ARGS, split as a shell would ([] when unset: one machine)."""
    return shlex.split(os.environ.get(TORCHRUN_ENV, ""))


def nodes() -> int:
    """How many nodes a pair's ranks span: `--nnodes` in AISP_TORCHRUN_ARGS (1 without it). A
    range (`1:2`, torchrun's elastic membership) is refused: a pair's world size is fixed."""
    args, count = rendezvous_args(), "1"
    for i, arg in enumerate(args):
        if arg == "--nnodes" and i + 1 < len(args):
            count = args[i + 1]
        elif arg.startswith("--nnodes="):
            count = arg.split("=", 1)[1]
    low, _, high = count.partition(":")
    if not low.isdigit() or (high and high != low) or int(low) < 1:
        raise ValueError(f"{TORCHRUN_ENV}: --nnodes {count}: give a fixed node count (e.g. 2); "
                         f"a pair's ranks are split evenly over the nodes")
    return int(low)


def split_problem(ranks: int) -> str | None:
    """Why a pair of `ranks` ranks cannot run over the nodes of AISP_TORCHRUN_ARGS (each
    node starts ranks / nodes of them), or None."""
    count = nodes()
    if count > 1 and ranks % count:
        return (f"runs as {ranks} ranks, which the {count} nodes of {TORCHRUN_ENV} cannot "
                f"share evenly")
    return None


def ranks_per_node(ranks: int) -> int:
    """The ranks this node starts for a pair of `ranks` ranks (all of them on one machine)."""
    return ranks // nodes()


def torchrun_args(nproc: int, child_args: list[str], module: str = "core.child",
                  pair: str = "", local: bool = False) -> list[str]:
    """torchrun's arguments for one pair (`nproc`: the ranks this node starts): standalone
    on this machine (`local`, or AISP_TORCHRUN_ARGS unset), or the rendezvous arguments in
    AISP_TORCHRUN_ARGS (several nodes: `--nnodes 2 --rdzv-backend c10d --rdzv-endpoint
    HOST:29500 --rdzv-id aisp`) with the rendezvous id tagged with `pair`: each pair meets at
    a rendezvous of its own, so nodes that drifted apart never join two different pairs."""
    extra = [] if local else rendezvous_args()
    if pair and extra:
        tag, tagged = re.sub(r"[^A-Za-z0-9_.-]", "_", pair), False
        for i, arg in enumerate(extra):
            if arg.startswith(("--rdzv-id=", "--rdzv_id=")):
                extra[i], tagged = f"{arg}-{tag}", True
            elif arg in ("--rdzv-id", "--rdzv_id") and i + 1 < len(extra):
                extra[i + 1], tagged = f"{extra[i + 1]}-{tag}", True
        if not tagged:
            extra += ["--rdzv-id", f"aisp-{tag}"]
    return [*(extra or ["--standalone"]), f"--nproc-per-node={nproc}", "--max-restarts=0",
            "-m", module, *child_args]


@dataclass
class LaunchOutcome:
    code: int
    first_error: str | None  # the reason of the first rank that aborted, if any
    here: list[int] = field(default_factory=list)  # the ranks that ran on this node
    world: int = 0  # every node's ranks together (0: no rank got that far)

    def verdict(self, pair: str) -> tuple[str, str]:
        """The reason and status of the pair's result when no rank of this node wrote one:
        SKIPPED on a node where rank 0 did not run (its node writes the result), else FAILED."""
        if self.code == 0 and self.here and 0 not in self.here:
            shown = f"rank{'s' * (len(self.here) > 1)} {', '.join(map(str, self.here))}"
            return (f"measured on the node that ran rank 0, whose results.json holds "
                    f"it; {shown} of {self.world} ran here ({TORCHRUN_ENV})", "skipped")
        return (self.first_error or f"{pair}: torchrun exited with code {self.code} and no rank "
                f"wrote a result (see the log)", "failed")


Torchrun = Callable[[list[str], dict[str, str]], int]


def torchrun_here(args: list[str], env: dict[str, str]) -> int:
    """torchrun (torch.distributed.run) in this process, which exists only to launch the
    ranks: `env` becomes its environment; the ranks inherit its stdin (the token desk, which
    rank 0 asks when it signs: core.signing). The ranks are forked from
    this process (torch and the harness are imported already) where a forked process can
    still use the GPU; once this process has touched CUDA (torch then refuses CUDA in its
    forked children), they start afresh, as torchrun's own command starts them.
    Its exit code: 0, or 1 when a rank failed.

    Several nodes: the rendezvous store lives in the launcher of one node, one launcher per
    pair. A node that finished the previous pair first may reach that pair's store while its
    launcher is still ending (a failed pair ends sooner on one node than the other), and lose
    it before the other node comes; or reach the port before the next store is up and give up
    waiting (60 s). Before any rank of this node has started, that is joined again."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.elastic.rendezvous.api import RendezvousConnectionError
    from torch.distributed.launcher.api import elastic_launch
    from torch.distributed.run import config_from_args, parse_args

    from core.hardware import cuda_survives_fork

    os.environ.clear()
    os.environ.update(env)
    parsed = parse_args(args)
    if parsed.standalone:  # as torch.distributed.run.run() does: a local store on a free port
        # 127.0.0.1, not localhost: a rank forked from this threaded process that looked the
        # name up could wait forever on a resolver lock another thread held at the fork (seen
        # once in ~30 launches of 8 CPU ranks)
        parsed.rdzv_backend, parsed.rdzv_endpoint, parsed.rdzv_id = "c10d", "127.0.0.1:0", str(uuid.uuid4())
        # and the ranks' MASTER_ADDR: without it the agent publishes socket.getfqdn(), which
        # every forked rank then resolves to reach the store (one of 8 CPU ranks hung there in
        # a CI run, the other seven waiting for it in init_process_group)
        parsed.local_addr = parsed.local_addr or "127.0.0.1"
    given_up = time.monotonic() + REJOIN_S
    while True:
        config, command, command_args = config_from_args(parsed)
        try:
            if cuda_survives_fork():
                config.start_method = "fork"
                elastic_launch(config, _rank)(parsed.training_script, parsed.training_script_args)
            else:
                elastic_launch(config, command)(*command_args)
        except ChildFailedError:
            return 1
        except RendezvousConnectionError as exc:
            started = list(Path(env.get(RANK_DIR_ENV, "/nonexistent")).glob("rank*.here"))
            if parsed.standalone or started or time.monotonic() > given_up:
                raise
            sys.stderr.write(f"[launcher] the rendezvous store went away before the pair's ranks "
                             f"started ({exc.__cause__ or exc}); joining again\n")
            time.sleep(1.0)
            continue
        return 0


def _rank(module: str, argv: list[str]) -> None:
    """One rank, as torchrun's agent calls it in the process it forked (RANK and the rest are
    in its environment). The harness's child exits at once after its result (os._exit), while
    the agent waits for this function to return: so the rank runs in a process of its own,
    forked once more, and this one reports how it ended."""
    from core.signing import run_main

    pid = os.fork()
    if pid == 0:
        run_main(module, argv)  # rank 0 asks for the token when it signs (core.signing)
    _, status = os.waitpid(pid, 0)
    code = os.waitstatus_to_exitcode(status)
    if code:
        raise RuntimeError(f"rank {os.environ.get('RANK', '?')} exited with code {code}")


def launch(nproc: int, child_args: list[str], run: Torchrun = torchrun_here,
           module: str = "core.child", pair: str = "") -> LaunchOutcome:
    """Run `nproc` ranks under torchrun and wait; the ranks inherit this process's
    stdout/stderr (the pair's log) and its stdin (the token desk). A pair (`pair` named) may
    span the nodes of AISP_TORCHRUN_ARGS, this node starting its share of the ranks; other
    launches (`hw peak`) stay on this machine."""
    with tempfile.TemporaryDirectory(prefix="aisp-ranks-") as folder:
        env = {**os.environ, RANK_DIR_ENV: folder}
        for key, value in MULTICAST_OFF.items():
            env.setdefault(key, value)
        env.setdefault("OMP_NUM_THREADS", "1")  # as torchrun's command does: N ranks, not N x cores threads
        here = ranks_per_node(nproc) if pair else nproc
        code = run(torchrun_args(here, child_args, module, pair, local=not pair), env)
        errors = []
        for path in Path(folder).glob("rank*.error"):
            stamp, _, reason = path.read_text().partition("\n")
            errors.append((float(stamp), f"rank {path.stem[4:]}: {reason}"))
        marks = {int(p.stem[4:]): int(p.read_text() or 0) for p in Path(folder).glob("rank*.here")}
        return LaunchOutcome(code, min(errors)[1] if errors else None, sorted(marks),
                             max(marks.values(), default=0))
