"""Where the harness's own time goes in a pair's child: `AISP_CPROFILE=DIR` runs the pair under
cProfile and writes DIR/<pair>.rank<N>.prof (read with `python -m pstats FILE`, then
`sort cumtime` and `stats 30`): for a pair whose harness time the run's summary does not
explain (on 2xH200 ddp_overlap's 168 s were mostly re-run setups, which the summary did
not name then). Off by default:
cProfile slows every Python call the pair makes too, so a profiled run's numbers are not
results."""
from __future__ import annotations

import cProfile
import os
from pathlib import Path
from typing import Callable, TypeVar

T = TypeVar("T")
ENV = "AISP_CPROFILE"


def run(function: Callable[..., T], *args: object, pair: str = "pair") -> T:
    """`function(*args)`, under cProfile when AISP_CPROFILE names a directory."""
    folder = os.environ.get(ENV)
    if not folder:
        return function(*args)
    profile = cProfile.Profile()
    try:
        return profile.runcall(function, *args)
    finally:
        Path(folder).mkdir(parents=True, exist_ok=True)
        rank = os.environ.get("RANK", "0")
        profile.dump_stats(str(Path(folder) / f"{pair.replace(':', '__')}.rank{rank}.prof"))
