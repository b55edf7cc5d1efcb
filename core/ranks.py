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
slow as its slowest rank), and each rank's median is kept. Multi-node: set
AISP_TORCHRUN_ARGS to torchrun's rendezvous arguments (README, 'More than one GPU').
"""
from __future__ import annotations

import ctypes
import os
import shlex
import signal
import sys
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

# NVLink multicast (NVLS) is unavailable on the lent 2xH200 machine and must stay off there;
# the defaults below keep NCCL, symmetric memory and NVSHMEM from trying it. A user whose
# NVSwitch system supports it can export other values: these are only defaults.
MULTICAST_OFF = {"NCCL_NVLS_ENABLE": "0", "TORCH_SYMM_MEM_DISABLE_MULTICAST": "1",
                 "NVSHMEM_DISABLE_NVLS": "1"}
RANK_DIR_ENV = "AISP_RANK_DIR"  # where a failing rank writes its reason (set by the launcher)


@dataclass
class Ranks:
    """This process's place among the ranks of one pair (rank 0 of 1 when not distributed)."""

    rank: int = 0
    world: int = 1
    local_rank: int = 0
    control: Any = None  # the gloo group the harness agrees its decisions over

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
        (torchrun then stops the other ranks, wherever they are waiting)."""
        folder = os.environ.get(RANK_DIR_ENV)
        if folder:
            path = Path(folder) / f"rank{self.rank}.error"
            path.write_text(f"{time.time():.6f}\n{reason}")
        sys.stderr.write(f"[rank {self.rank}] {reason}\n")
        sys.stderr.flush()
        os._exit(1)


def from_environment(device: str) -> Ranks:
    """Inside torchrun: join the process group (NCCL on CUDA, gloo on CPU) and a gloo group
    for the harness's own agreement; outside it: a single rank."""
    world = int(os.environ.get("WORLD_SIZE", "1"))
    if world <= 1:
        return Ranks()
    import torch
    import torch.distributed as dist

    local_rank = int(os.environ.get("LOCAL_RANK", "0"))
    if device.startswith("cuda"):
        torch.cuda.set_device(local_rank)
    dist.init_process_group("nccl" if device.startswith("cuda") else "gloo")
    control = dist.new_group(backend="gloo")
    return Ranks(dist.get_rank(), world, local_rank, control)


def die_with_parent() -> None:
    """Linux: this process gets SIGKILL when its parent (torchrun) dies. torchrun starts each
    rank in a session of its own, so killing the pair's process group alone would leave
    ranks waiting in a collective forever."""
    try:
        libc = ctypes.CDLL(None, use_errno=True)
        libc.prctl(1, int(signal.SIGKILL))  # PR_SET_PDEATHSIG
    except (OSError, AttributeError):
        pass


def torchrun_args(nproc: int, child_args: list[str], module: str = "core.child") -> list[str]:
    """torchrun's arguments for one pair: standalone on this machine, or the rendezvous
    arguments in AISP_TORCHRUN_ARGS (multi-node: `--nnodes 2 --rdzv-backend c10d
    --rdzv-endpoint HOST:29500 --rdzv-id aisp`)."""
    extra = shlex.split(os.environ.get("AISP_TORCHRUN_ARGS", "")) or ["--standalone"]
    return [*extra, f"--nproc-per-node={nproc}", "--max-restarts=0", "-m", module, *child_args]


@dataclass
class LaunchOutcome:
    code: int
    first_error: str | None  # the reason of the first rank that aborted, if any


Torchrun = Callable[[list[str], dict[str, str]], int]


def torchrun_here(args: list[str], env: dict[str, str]) -> int:
    """torchrun (torch.distributed.run) in this process, which exists only to launch the
    ranks: `env` becomes its environment; the ranks inherit its stdin (the token desk, which
    rank 0 asks when it signs: core.signing). The ranks are forked from
    this process (torch and the harness are imported already) where a forked process can
    still use the GPU; once this process has touched CUDA (torch then refuses CUDA in its
    forked children), they start afresh, as torchrun's own command starts them.
    Its exit code: 0, or 1 when a rank failed."""
    from torch.distributed.elastic.multiprocessing.errors import ChildFailedError
    from torch.distributed.launcher.api import elastic_launch
    from torch.distributed.run import config_from_args, parse_args

    from core.hardware import cuda_survives_fork

    os.environ.clear()
    os.environ.update(env)
    parsed = parse_args(args)
    if parsed.standalone:  # as torch.distributed.run.run() does: a local store on a free port
        parsed.rdzv_backend, parsed.rdzv_endpoint, parsed.rdzv_id = "c10d", "localhost:0", str(uuid.uuid4())
    config, command, command_args = config_from_args(parsed)
    try:
        if cuda_survives_fork():
            config.start_method = "fork"
            elastic_launch(config, _rank)(parsed.training_script, parsed.training_script_args)
        else:
            elastic_launch(config, command)(*command_args)
    except ChildFailedError:
        return 1
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
           module: str = "core.child") -> LaunchOutcome:
    """Run the pair's ranks under torchrun and wait; the ranks inherit this process's
    stdout/stderr (the pair's log) and its stdin (the token desk)."""
    with tempfile.TemporaryDirectory(prefix="aisp-ranks-") as folder:
        env = {**os.environ, RANK_DIR_ENV: folder}
        for key, value in MULTICAST_OFF.items():
            env.setdefault(key, value)
        code = run(torchrun_args(nproc, child_args, module), env)
        errors = []
        for path in Path(folder).glob("rank*.error"):
            stamp, _, reason = path.read_text().partition("\n")
            errors.append((float(stamp), f"rank {path.stem[4:]}: {reason}"))
        return LaunchOutcome(code, min(errors)[1] if errors else None)
