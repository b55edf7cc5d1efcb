"""Runs one pair (a baseline and its optimized variants) inside a child process.

    python -m core.child SPEC.json RESULT.json     # a pair; SPEC written by core.runner
    python -m core.child --probe RESULT.json       # fingerprint + same-run ceilings
    python -m core.child --profile-minimal SPEC.json OUT.json   # traces (core.profiling)
    python -m core.child --profile-side SPEC.json SIDE          # one iteration, for ncu/nsys

The parent only reads RESULT.json; a crash, hang or CUDA error here costs this pair only.
Steps: load every side → check requirements → run every side on seed s+1, then on seed s
(verification: variants match the baseline on both seeds, and each side's output changes
with the seed) → time the verified sides in interleaved rounds.
"""
from __future__ import annotations

import importlib
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from core.benchmark import BenchContext, Requirements, Tolerance, option, validate
from core.stats import speedup_interval, summarize
from core.timing import L2Flusher, StopPolicy, interleaved


class PairError(RuntimeError):
    """A problem with a pair file; the message names the file and what to do."""


def relative(path: str | Path) -> str:
    """`chNN/file.py`: how messages name a pair file, wherever the chapters live."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}"


def load_benchmark(path: Path) -> object:
    """Import `chNN/<file>.py` as module `chNN.<file>` and call its get_benchmark()."""
    name = f"{path.parent.name}.{path.stem}"
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the pair file's problem
        raise PairError(f"{relative(path)}: import failed: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, "get_benchmark", None)
    if not callable(factory):
        raise PairError(f"{relative(path)}: defines no get_benchmark(); add one returning the "
                        f"benchmark object (see README, 'Adding a pair')")
    try:
        bench = factory()
    except Exception as exc:  # noqa: BLE001
        raise PairError(f"{relative(path)}: get_benchmark() raised {type(exc).__name__}: {exc}") from exc
    try:
        validate(bench, relative(path))
    except TypeError as exc:
        raise PairError(str(exc)) from exc
    return bench


def unmet_requirement(bench: object, device: str) -> str | None:
    """Why this benchmark cannot run here, or None."""
    req: Requirements = option(bench, "requires", Requirements())
    if device == "cpu":
        if req.cuda and not option(bench, "supports_cpu", False):
            return "needs a CUDA GPU; none is available on this machine"
        return None
    import torch

    if req.gpus > torch.cuda.device_count():
        return f"needs {req.gpus} GPUs; this machine has {torch.cuda.device_count()}"
    if req.min_compute_capability and torch.cuda.get_device_capability() < req.min_compute_capability:
        want = ".".join(map(str, req.min_compute_capability))
        have = ".".join(map(str, torch.cuda.get_device_capability()))
        return f"needs compute capability ≥ {want}; this GPU is {have}"
    for module in req.modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return f"needs the Python module '{module}', which is not installed"
    if req.nvcc:
        from core.cuda import nvcc_path

        if nvcc_path() is None:
            return "needs nvcc (the CUDA toolkit) to build its .cu file; set CUDA_HOME"
    return None


def _short_traceback(exc: BaseException) -> str:
    lines = traceback.format_exception(type(exc), exc, exc.__traceback__)
    return "".join(lines[-6:]).strip()


def _sync(device: str) -> None:
    if device.startswith("cuda"):
        import torch

        torch.cuda.synchronize()


class IntegrityError(RuntimeError):
    """run() broke a rule of the contract (mutated inputs, returned a stale buffer)."""


REVERIFY_EVERY = 4  # re-verify on fresh inputs after timing rounds 1, 5, 9, ...


def run_once(bench: object, seed: int, device: str) -> Any:
    """setup(seed) then one run(); returns a private copy of the output.

    Also checks that run() neither changed its inputs nor returned a buffer prepared in
    setup() that it did not write (core.integrity).
    """
    from core.integrity import copy_state, input_mutations, output_tensors, stale_outputs
    from core.verify import snapshot

    bench.setup(BenchContext(seed=seed, device=device))
    before = copy_state(bench)
    out = bench.run()
    _sync(device)
    tensors = output_tensors(out)  # a non-tensor output raises here, where the caller names the file
    problem = stale_outputs(bench, before, tensors)
    if problem is None and not option(bench, "mutates_inputs", False):
        problem = input_mutations(bench, before, tensors)
    if problem:
        raise IntegrityError(problem)
    return snapshot(out)


def _tolerance(bench: object, baseline: object) -> Tolerance | None:
    tol = option(bench, "tolerance", None) or option(baseline, "tolerance", None)
    return Tolerance(*tol) if isinstance(tol, (tuple, list)) else tol


def _seed_problem(bench: object, first: Any, second: Any, seeds: tuple[int, int]) -> str | None:
    from core.verify import outputs_equal

    if option(bench, "seed_sensitive", True) and outputs_equal(first, second):
        return (f"output is identical for seeds {seeds[0]} and {seeds[1]}; run() returns a "
                f"cached result or ignores its inputs")
    return None


class PairRun:
    """The state of one pair inside the child: its sides, their outputs, the results."""

    def __init__(self, spec: dict[str, Any], device: str):
        self.spec, self.device = spec, device
        self.baseline: object | None = None
        self.sides: dict[str, object] = {}  # verified variants still being timed
        self.examples = {e["name"]: {"name": e["name"], "id": e["id"], "file": relative(e["path"]),
                                     "status": "ok"} for e in spec["examples"]}
        self.reference: dict[str, Any] = {}  # each side's output on the timing seed

    def fail(self, name: str, reason: str, status: str = "failed") -> None:
        self.examples[name].update(status=status, reason=reason)
        self.sides.pop(name, None)

    def side_raised(self, name: str, exc: BaseException) -> None:
        file = self.examples[name]["file"]
        if isinstance(exc, IntegrityError):
            self.fail(name, f"{file}: {exc}")
        else:
            self.fail(name, f"{file}: raised {type(exc).__name__} in setup/run:\n"
                            f"{_short_traceback(exc)}")

    def run_all(self, seed: int) -> dict[str, Any]:
        """Every side on `seed`; raises PairError if the baseline fails."""
        outs: dict[str, Any] = {}
        try:
            outs["baseline"] = run_once(self.baseline, seed, self.device)
        except IntegrityError as exc:
            raise PairError(f"{relative(self.spec['baseline'])}: {exc}") from exc
        except Exception as exc:  # noqa: BLE001
            raise PairError(f"{relative(self.spec['baseline'])}: baseline raised "
                            f"{type(exc).__name__} in setup/run:\n{_short_traceback(exc)}") from exc
        for name in list(self.sides):
            try:
                outs[name] = run_once(self.sides[name], seed, self.device)
            except Exception as exc:  # noqa: BLE001
                self.side_raised(name, exc)
        return outs

    def verify(self, outs: dict[str, Any], earlier: dict[str, Any], seeds: tuple[int, int],
               when: str = "") -> None:
        """Variants must match the baseline on `outs` and differ from `earlier` (another seed)."""
        from core.verify import compare

        problem = _seed_problem(self.baseline, outs["baseline"], earlier["baseline"], seeds)
        if problem:
            raise PairError(f"{relative(self.spec['baseline'])}: baseline {problem}")
        for name in list(self.sides):
            check = compare(outs["baseline"], outs[name], _tolerance(self.sides[name], self.baseline))
            record = self.examples[name].setdefault("verification", check.to_dict())
            record["max_abs_err"] = max(record["max_abs_err"], check.max_abs_err)
            record["max_rel_err"] = max(record["max_rel_err"], check.max_rel_err)
            problem = None if check.ok else check.message
            problem = problem or _seed_problem(self.sides[name], outs[name], earlier[name], seeds)
            if problem:
                record["ok"] = False
                self.fail(name, f"verification failed{when}: {problem}")

    def reverify(self, round_index: int) -> set[str]:
        """Between timing rounds: every REVERIFY_EVERY rounds, fresh inputs, check again."""
        if (round_index - 1) % REVERIFY_EVERY:  # rounds 1, 1+K, 1+2K, ...
            return set()
        before = set(self.sides)
        fresh = int(self.spec.get("seed", 0)) + 1 + round_index
        outs = self.run_all(fresh)
        self.verify(outs, self.reference, (fresh, int(self.spec.get("seed", 0))),
                    f" on fresh inputs after timing round {round_index}")
        return before - set(self.sides)

    def teardown(self) -> None:
        for bench in [self.baseline, *self.sides.values()]:
            teardown = getattr(bench, "teardown", None)
            if callable(teardown):
                try:
                    teardown()
                except Exception:  # noqa: BLE001 - a failing teardown must not lose results
                    pass


def run_pair(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from core.hardware import clocks

    device = "cuda" if torch.cuda.is_available() else "cpu"
    seed = int(spec.get("seed", 0))
    pair = PairRun(spec, device)
    result: dict[str, Any] = {"pair": spec["pair"], "device": device, "status": "ok",
                              "clocks_start": clocks() if device == "cuda" else {},
                              "examples": list(pair.examples.values())}

    def fail_all(status: str, reason: str) -> dict[str, Any]:
        result.update(status=status, reason=reason)
        for name, ex in pair.examples.items():
            if ex["status"] == "ok":
                pair.fail(name, reason, status)
        return result

    # 1. load every side
    try:
        pair.baseline = load_benchmark(Path(spec["baseline"]))
    except PairError as exc:
        return fail_all("failed", str(exc))
    result["teaching"] = bool(option(pair.baseline, "teaching", False))
    why = unmet_requirement(pair.baseline, device)
    if why:
        return fail_all("skipped", f"{relative(spec['baseline'])}: {why}")
    for e in spec["examples"]:
        try:
            bench = load_benchmark(Path(e["path"]))
        except PairError as exc:
            pair.fail(e["name"], str(exc))
            continue
        why = unmet_requirement(bench, device)
        if why:
            pair.fail(e["name"], f"{relative(e['path'])}: {why}", "skipped")
            continue
        pair.sides[e["name"]] = bench

    try:
        # 2. verify on seed+1, then seed (which leaves every side set up for timing)
        other = pair.run_all(seed + 1)
        pair.reference = pair.run_all(seed)
        pair.verify(pair.reference, other, (seed, seed + 1))
        del other
        if not pair.sides:
            result["status"] = ("failed" if any(e["status"] == "failed" for e in pair.examples.values())
                                else "skipped")
            return result
        # 3. time baseline and verified variants in interleaved rounds
        measure_pair(pair, spec, result)
    except PairError as exc:
        return fail_all("failed", str(exc))
    except Exception as exc:  # noqa: BLE001
        return fail_all("failed", f"timing raised {type(exc).__name__}:\n{_short_traceback(exc)}")
    finally:
        pair.teardown()
    result["clocks_end"] = clocks() if device == "cuda" else {}
    return result


def measure_pair(pair: PairRun, spec: dict[str, Any], result: dict[str, Any]) -> None:
    from core.integrity import escaped_work

    device = pair.device
    benches = {"baseline": pair.baseline, **pair.sides}
    cold = any(option(b, "timing_mode", "hot") == "cold" for b in benches.values())
    flush = L2Flusher() if cold and device == "cuda" else None
    policy = StopPolicy(fixed_samples=spec.get("iterations"))
    measurement = interleaved({k: b.run for k, b in benches.items()}, policy, device, flush,
                              spec.get("warmup"), between_rounds=pair.reverify)
    result.update(timing_mode="cold" if cold else "hot", stop_reason=measurement.stop_reason,
                  rounds=measurement.rounds, warmup_calls=measurement.warmup_calls)
    escaped = escaped_work(measurement.batches["baseline"], device)
    if escaped:
        raise PairError(f"{relative(spec['baseline'])}: {escaped}")
    base_samples = measurement.samples_ms["baseline"]
    result["baseline"] = {"stats": summarize(base_samples).to_dict(),
                          "workload": _workload(pair.baseline)}
    for name, bench in list(pair.sides.items()):
        escaped = escaped_work(measurement.batches[name], device)
        if escaped:
            pair.fail(name, f"{pair.examples[name]['file']}: {escaped}")
            continue
        samples = measurement.samples_ms[name]
        stats = summarize(samples)
        pair.examples[name].update(
            stats=stats.to_dict(), workload=_workload(bench),
            speedup=result["baseline"]["stats"]["median"] / stats.median,
            speedup_ci=list(speedup_interval(base_samples, samples)),
            timing_check=[{"span_ms": b.span_ms, "wall_ms": b.wall_ms}
                          for b in measurement.batches[name]],
        )


def _workload(bench: object) -> dict[str, Any]:
    w = bench.workload()
    return {"bytes": w.bytes, "flops": w.flops, "flops_dtype": w.flops_dtype,
            "units": w.units, "unit_name": w.unit_name, "bound": w.bound}


def _profiled_sides(spec: dict[str, Any]) -> dict[str, object]:
    sides = {"baseline": load_benchmark(Path(spec["baseline"]))}
    sides.update({e["name"]: load_benchmark(Path(e["path"])) for e in spec["examples"]})
    return sides


def _prepare(name: str, bench: object, seed: int, device: str) -> None:
    """setup and warm-up of one side, each inside its own NVTX range."""
    from core.profiling import nvtx_range, range_name

    with nvtx_range(range_name(name, "setup")):
        bench.setup(BenchContext(seed=seed, device=device))
    with nvtx_range(range_name(name, "warmup")):
        for _ in range(2):
            bench.run()
        _sync(device)


def profile_minimal(spec: dict[str, Any], out_dir: Path) -> dict[str, Any]:
    """One torch.profiler trace per side (NVTX-annotated), with its top kernels."""
    import torch

    from core.profiling import trace

    device = "cuda" if torch.cuda.is_available() else "cpu"
    report = {}
    for name, bench in _profiled_sides(spec).items():
        _prepare(name, bench, int(spec.get("seed", 0)), device)
        path = out_dir / f"{name}.trace.json"
        report[name] = {"trace": str(path), "top": trace(bench.run, path, name, device)}
    return report


def profile_side(spec: dict[str, Any], side: str) -> None:
    """One timed iteration of one side inside its NVTX range, for ncu/nsys to capture."""
    import torch

    from core.profiling import nvtx_range, range_name

    device = "cuda" if torch.cuda.is_available() else "cpu"
    bench = _profiled_sides(spec)[side]
    _prepare(side, bench, int(spec.get("seed", 0)), device)
    with nvtx_range(range_name(side, "timed")):
        bench.run()
    _sync(device)


def probe() -> dict[str, Any]:
    import torch

    from core.hardware import cached_peaks, fingerprint, measure_ceilings

    info: dict[str, Any] = {"fingerprint": fingerprint(), "ceilings": {}}
    if torch.cuda.is_available():
        info["capability"] = list(torch.cuda.get_device_capability())
        measured = measure_ceilings()
        # `hw peak` measures more precisions (fp16, fp8); use those it cached for this device.
        cached = (cached_peaks(info["fingerprint"]) or {}).get("ceilings", {})
        info["ceilings"] = {**cached, **measured}
        info["ceilings_from_hw_peak"] = sorted(set(cached) - set(measured))
    return info


def main(argv: list[str]) -> int:
    if argv[:1] == ["--profile-side"]:
        profile_side(json.loads(Path(argv[1]).read_text()), argv[2])
        return 0
    if argv[:1] == ["--probe"]:
        out = Path(argv[1])
        payload = probe()
    elif argv[:1] == ["--profile-minimal"]:
        out = Path(argv[2])
        payload = profile_minimal(json.loads(Path(argv[1]).read_text()), out.parent)
    else:
        spec = json.loads(Path(argv[0]).read_text())
        out = Path(argv[1])
        started = time.perf_counter()
        payload = run_pair(spec)
        payload["duration_s"] = round(time.perf_counter() - started, 3)
    tmp = out.with_suffix(".tmp")
    tmp.write_text(json.dumps(payload))
    tmp.replace(out)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
