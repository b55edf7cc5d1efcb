"""The harness's tool processes: everything a child process does besides measuring a pair
(core.child). Each mode signs its result with the token it asks for on stdin when it is
done (core.signing).

    python -m core.toolchild --probe OUT                          # fingerprint + ceilings
    python -m core.toolchild --peak-ranks N ... OUT               # hw peak --gpus N (its ranks)
    python -m core.toolchild --cold-start SPEC SIDE OUT [--seed S] [--answer PATH]
                                         # one cold start (goal compile_time, precompile, inspect)
    python -m core.toolchild --compare SPEC OUT    # cold-start answers, baseline vs variant
    python -m core.toolchild --load-test SPEC SIDE SECONDS OUT    # tools load-test
    python -m core.toolchild --occupancy SPEC SIDE PRESETS OUT    # tools occupancy-tuning
    python -m core.toolchild --profile-minimal SPEC OUT           # traces (core.profiling)
    python -m core.toolchild --profile-memory SPEC OUT            # allocator snapshots
    python -m core.toolchild --profile-side SPEC SIDE             # under ncu/nsys; no result
"""
from __future__ import annotations

import os
import random
import sys
import time
from pathlib import Path
from typing import Any

from core.record import PairSpec
from core.signing import deliver, read_token


def _device() -> str:
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def _seed() -> int:
    return random.SystemRandom().randrange(1, 2**31 - 1)


def cold_start(spec: PairSpec, side: str, seed: int | None, answer: str | None) -> dict[str, Any]:
    """One side's imports, setup() and first call in this fresh process (core.compile_time),
    timed from the process's start (AISP_SPAWNED_AT, stamped by the parent); its first answer
    is saved to `answer` for the comparison with the baseline's."""
    from core.benchmark import BenchContext
    from core.compile_time import SPAWNED_AT, time_cold_start
    from core.pairfile import load_benchmark, unmet_requirement

    try:
        bench = load_benchmark(Path(spec.path_of(side)))
        why = unmet_requirement(bench, _device(), spec.gpus)
        if why:  # a side this machine cannot run (a Blackwell variant on a Hopper): nothing to warm
            return {"skipped": why}
        spawned = os.environ.get(SPAWNED_AT)
        import_s = time.time() - float(spawned) if spawned else 0.0
        timing, out = time_cold_start(bench, BenchContext(seed=spec.seed, device=_device(),
                                                          mode=spec.mode), seed or _seed(), import_s)
        if answer:
            import torch

            from core.verify import snapshot

            torch.save(snapshot(out), answer)
        bench.teardown()
    except Exception as exc:  # noqa: BLE001 - reported to the runner, which fails the side
        return {"error": f"{type(exc).__name__}: {exc}"}
    return timing.to_dict()


def compare_answers(spec_path: str) -> dict[str, Any]:
    """Each pair of saved answers (baseline, variant) compared with the variant's resolved
    tolerance; this process imports no pair code."""
    import json

    import torch

    from core.benchmark import Tolerance
    from core.verify import compare

    spec = json.loads(Path(spec_path).read_text())
    tolerance = Tolerance(*spec["tolerance"]) if spec.get("tolerance") else None
    for index, (expected, actual) in enumerate(spec["pairs"]):
        check = compare(torch.load(expected, weights_only=True), torch.load(actual, weights_only=True),
                        tolerance, bounded=tolerance is not None)
        if not check.ok:
            return {"problem": f"its first answer in cold start {index + 1} differs from the "
                               f"baseline's on the same inputs: {check.message}"}
    return {"problem": None}


def load_test(spec: PairSpec, side: str, duration_s: float) -> dict[str, Any]:
    """One side's engine under its pair's trace for a duration (`aisp tools load-test`); the
    trace and SLO are the baseline's."""
    from core import goodput
    from core.benchmark import BenchContext
    from core.pairfile import load_benchmark, relative

    try:
        baseline = load_benchmark(Path(spec.baseline))
        bench = baseline if side == "baseline" else load_benchmark(Path(spec.path_of(side)))
        if not callable(getattr(bench, "engine", None)):
            return {"error": f"{relative(spec.path_of(side))} has no engine(): load tests need a "
                             f"serving pair (goal goodput: trace(seed), engine(), slo)"}
        for b in {id(baseline): baseline, id(bench): bench}.values():
            b.ctx = BenchContext(seed=spec.seed, device=_device())
            b.setup(b.ctx)
        timings, replays = goodput.load_test(baseline.trace, bench.engine, duration_s, _seed())
        stats = goodput.summarize(timings, baseline.slo)
        bench.teardown()
    except Exception as exc:  # noqa: BLE001 - reported to the command line
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"stats": stats.to_dict(), "replays": replays, "slo": str(baseline.slo)}


def peak_ranks(needed: int, argv: list[str], out: Path) -> dict[str, Any]:
    """Outside torchrun: launch `needed` ranks of this same command and report their failure
    if rank 0 wrote nothing. Inside: measure (core.multigpu); only rank 0 returns."""
    from core import multigpu, ranks

    if "RANK" not in os.environ:
        outcome = ranks.launch(needed, argv, module="core.toolchild")
        if out.exists():
            os._exit(0)
        return {"error": outcome.first_error or f"torchrun exited with code {outcome.code}"}
    here = ranks.from_environment("cuda")
    try:
        payload = multigpu.measure(here.rank)
    except Exception as exc:  # noqa: BLE001
        here.abort(f"{type(exc).__name__}: {exc}")
    if here.rank != 0:
        os._exit(0)
    return payload


def occupancy(spec: PairSpec, side: str, presets: str) -> dict[str, Any]:
    from dataclasses import asdict

    from core.occupancy import measure, parse_presets

    try:
        rows = measure(spec.baseline, spec.path_of(side), spec.seed, parse_presets(presets), _device())
        return {"rows": [asdict(r) for r in rows]}
    except Exception as exc:  # noqa: BLE001 - reported by the command
        return {"error": f"{type(exc).__name__}: {exc}"}


def _keep_no_launch_config_picks() -> None:
    """In a precompile process (core.precompile): Inductor benchmarks a generated kernel's
    launch configurations at its first call and, by default, keeps the winner on disk for
    later processes. A choice made here, while other compiles share the GPU, must not be the
    one a pair's child uses: the kernels compiled here are told not to keep or read picks
    (the setting is not part of Inductor's cache key), so the pair's child benchmarks them
    itself, on an idle GPU, as it always did."""
    import torch._inductor.config as inductor_config

    inductor_config.autotune_local_cache = False


def _option(argv: list[str], name: str) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else None


def main(argv: list[str]) -> int:
    mode = argv[0]
    rank = int(os.environ.get("RANK", "0"))
    if "RANK" in os.environ:
        from core.ranks import die_with_parent

        die_with_parent()
    if os.environ.get("AISP_PRECOMPILING") == "1":
        _keep_no_launch_config_picks()
    if mode == "--profile-side":
        from core.profiling import profile_side

        profile_side(PairSpec.read(argv[1]), argv[2])
        return 0
    if mode == "--probe":
        from core.hardware import probe

        gpus = _option(argv, "--gpus")
        out, payload = Path(argv[1]), probe(int(gpus) if gpus else None)
    elif mode == "--peak-ranks":
        out = Path(argv[2])
        payload = peak_ranks(int(argv[1]), argv, out)
    elif mode == "--cold-start":
        out = Path(argv[3])
        seed = _option(argv, "--seed")
        payload = cold_start(PairSpec.read(argv[1]), argv[2], int(seed) if seed else None,
                             _option(argv, "--answer"))
    elif mode == "--compare":
        out, payload = Path(argv[2]), compare_answers(argv[1])
    elif mode == "--profile-memory":
        from core.profiling import profile_memory

        out = Path(argv[2])
        payload = profile_memory(PairSpec.read(argv[1]), out.parent)
    elif mode == "--load-test":
        out = Path(argv[4])
        payload = load_test(PairSpec.read(argv[1]), argv[2], float(argv[3]))
    elif mode == "--occupancy":
        out = Path(argv[4])
        payload = occupancy(PairSpec.read(argv[1]), argv[2], argv[3])
    elif mode == "--profile-minimal":
        from core.profiling import profile_minimal

        out = Path(argv[2])
        payload = profile_minimal(PairSpec.read(argv[1]), out.parent)
    else:
        sys.exit(f"core.toolchild: unknown mode {mode!r} (see the module's docstring)")
    # the token is asked for now, when the work is done; ranks share the launcher's stdin:
    # only rank 0 signs (--profile-side runs under ncu/nsys and writes no result)
    deliver(out, read_token() if rank == 0 else "", payload)
    return 0  # not reached: deliver() exits


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
