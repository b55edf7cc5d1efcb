"""Smoke runs, several pairs at a time on one GPU.

A smoke run (`bench run --mode smoke`) checks that every pair runs and verifies; it keeps no
timing, so nothing it reports suffers when pairs share the GPU. One pair after another, a
smoke run of every chapter is mostly waiting: process starts, imports, compiles and
verification on the host while the GPU idles. `run()` keeps `jobs` pairs going at once, each
in its own fresh child process (forked from the job thread's own fork server, which imported
torch once), as the runner would run it alone but with its share of the host's cores for
torch's and Inductor's thread pools (`child_env`).

Sharing can still break a pair that would pass alone (the GPU's memory, a host-side timeout),
so a pair that fails beside others is not reported: it is handed back, and the runner runs it
again alone, after the rest, and keeps that result. Ctrl-C kills every child in flight
(core.process.kill_running); pairs cut short that way are left out, so `--resume` runs them.

A full run never comes here: timings need the GPU to themselves.
"""
from __future__ import annotations

import os
import threading
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from typing import Callable, TypeVar

from core.record import PairResult

Job = TypeVar("Job")


MOST_JOBS = 6  # the default's cap


def default_jobs(cpus: int | None = None) -> int:
    """Pairs at a time: 6 on a 16-core host, one per 2 cores on smaller ones (each child keeps
    a core busy with its own Python, and compiles use more). On the lent H100 (16 cores) a
    smoke run of every chapter took 2 min 35 s at 6, forked from per-thread fork servers."""
    return max(1, min(MOST_JOBS, (cpus or os.cpu_count() or 2) // 2))


def child_env(parallel: int, cpus: int | None = None) -> dict[str, str]:
    """Each child's share of the host's cores. Alone, torch's intra-op pool and Inductor's
    compile workers each take every core, so four such children on 16 cores would ask for 64
    busy threads (ch03's README measures what oversubscribed pools cost). Without these shares,
    ch03 pinned_host took 201 s beside others against ~20 s alone on an H100 host (not yet
    measured with them). Nothing a smoke run checks depends on the count."""
    share = str(max(1, (cpus or os.cpu_count() or 2) // parallel))
    return {"OMP_NUM_THREADS": share, "MKL_NUM_THREADS": share,
            "TORCHINDUCTOR_COMPILE_THREADS": share}


def failed_anywhere(result: PairResult) -> bool:
    """The pair failed, or one of its variants did (the others may have passed)."""
    return result.status == "failed" or any(ex.status == "failed" for ex in result.examples)


def run(jobs: list[Job], measure: Callable[[Job], PairResult],
        keep: Callable[[Job, PairResult], None], parallel: int,
        env: dict[str, str] | None = None) -> list[tuple[Job, PairResult]]:
    """Measure every job, `parallel` at a time; `keep` each one that did not fail (called from
    one thread at a time). Returns the jobs that failed, with their result, to run again alone.
    Each job thread forks its pairs' children from a fork server of its own, started with
    `env` (the children's share of the cores; `measure` passes the same `env` to run_child).
    On KeyboardInterrupt: kills the children in flight, waits for their threads, re-raises."""
    from core.process import accept_children, kill_running, open_fork_server, use_fork_server

    failed: list[tuple[Job, PairResult]] = []
    lock = threading.Lock()
    stopping = threading.Event()
    servers: list = []  # one per job thread, closed when every thread is done
    local = threading.local()

    def one(job: Job) -> None:
        if stopping.is_set():
            return
        if not getattr(local, "has_server", False):  # this thread's first job
            local.has_server = True
            server = open_fork_server(env)
            use_fork_server(server)
            if server is not None:
                with lock:
                    servers.append(server)
        try:
            result = measure(job)
        except BaseException:
            stopping.set()  # before this thread can take another job
            raise
        if stopping.is_set():  # killed by the interrupt: not a result
            return
        with lock:
            if failed_anywhere(result):
                failed.append((job, result))
            else:
                keep(job, result)

    pool = ThreadPoolExecutor(max_workers=parallel, thread_name_prefix="smoke")
    pending: set[Future] = {pool.submit(one, job) for job in jobs}
    try:
        while pending:
            done, pending = wait(pending, timeout=0.5, return_when=FIRST_COMPLETED)
            for future in done:
                future.result()  # a bug in measure() or keep() surfaces here, not silently
    except BaseException:
        stopping.set()
        for future in pending:
            future.cancel()
        kill_running()
        pool.shutdown(wait=True, cancel_futures=True)
        raise
    finally:
        accept_children()
        pool.shutdown(wait=True)
        for server in servers:
            server.close()
    return failed
