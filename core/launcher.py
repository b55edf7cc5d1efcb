"""A multi-GPU pair's child before any rank runs: how many ranks, whether any variant can
run here, and launching them.

core.child's main() asks here first: a pair whose baseline needs several GPUs (and is not
`one_process`) makes its child the launcher of its ranks (core.ranks, torchrun); each rank
is core.child again, and rank 0 signs the result. A pair none of whose variants can run on
this machine is SKIPPED before torchrun starts ranks for nothing.
"""
from __future__ import annotations

import os
import sys
from pathlib import Path

import torch

from core.benchmark import PairError, Requirements, option
from core.pairfile import load_benchmark, ranks_for, relative, unmet_requirement
from core.record import ExampleResult, PairResult, PairSpec
from core.signing import deliver, read_token


def device() -> str:
    return "cuda" if torch.cuda.is_available() else "cpu"


def ranks_needed(spec: PairSpec) -> int:
    """How many ranks the pair's baseline asks for (core.pairfile.ranks_for), when it can run here;
    1 for a `one_process` pair (it drives its GPUs itself), and otherwise (the session itself
    then reports the SKIP or the error)."""
    try:
        bench = load_benchmark(Path(spec.baseline))
    except PairError:
        return 1
    requires = option(bench, "requires", Requirements())
    needed = requires.gpus
    if needed <= 1 or requires.one_process or unmet_requirement(bench, device(), spec.gpus):
        return 1
    return ranks_for(bench, device(), spec.gpus)


def launch_ranks(spec: PairSpec, argv: list[str], out: Path, needed: int) -> None:
    """This child becomes the launcher of the pair's ranks (core.ranks); rank 0 signs the
    result. When no rank here did, the launcher reports why. Never returns."""
    from core.ranks import launch
    from core.stacks import RANKS_LINE

    # into the pair's log before any rank runs: a pair killed at its timeout leaves no
    # result, and the runner still files its FAILED row under its GPU count (`4x_h200`)
    print(f"{RANKS_LINE}{needed}", flush=True)
    outcome = launch(needed, argv, pair=spec.pair)  # this node's share of the ranks
    if out.exists():
        sys.stdout.flush()
        os._exit(0)
    result = empty_result(spec, device())
    result.ranks = outcome.world or needed
    result.fail_all(*outcome.verdict(spec.pair))  # rank 0 ran on another node, or failed
    deliver(out, read_token(), result.to_dict())


def empty_result(spec: PairSpec, device: str) -> PairResult:
    """A result with the pair's examples and no measurement yet (to be failed or skipped)."""
    result = PairResult(pair=spec.pair, device=device)
    result.examples = [ExampleResult(name=e.name, id=e.id, file=relative(e.path))
                       for e in spec.examples]
    return result


def none_can_run(spec: PairSpec, device: str, ranks: int) -> PairResult | None:
    """The SKIPPED result of a multi-rank pair none of whose variants can run here (each states
    a requirement this machine lacks), decided before torchrun starts ranks for nothing."""
    result = PairResult(pair=spec.pair, device=device, ranks=ranks, status="skipped")
    for e in spec.examples:
        try:
            why = unmet_requirement(load_benchmark(Path(e.path)), device)
        except PairError:
            return None  # its session reports the import error
        if not why:
            return None
        result.examples.append(ExampleResult(name=e.name, id=e.id, file=relative(e.path)))
        result.examples[-1].fail(f"{relative(e.path)}: {why}", "skipped")
    return result
