"""Runs one pair (a baseline and its optimized variants) inside a child process.

    python -m core.child SPEC.json RESULT.json     # a pair; SPEC written by core.runner
    python -m core.child --probe RESULT.json       # fingerprint + same-run ceilings

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


def run_once(bench: object, seed: int, device: str) -> Any:
    from core.verify import flatten, snapshot

    bench.setup(BenchContext(seed=seed, device=device))
    out = snapshot(bench.run())
    flatten(out)  # a non-tensor output raises here, where the caller names the file
    _sync(device)
    return out


def run_pair(spec: dict[str, Any]) -> dict[str, Any]:
    import torch

    from core.hardware import clocks
    from core.verify import compare, outputs_equal

    device = "cuda" if torch.cuda.is_available() else "cpu"
    seed = int(spec.get("seed", 0))
    result: dict[str, Any] = {"pair": spec["pair"], "device": device, "status": "ok",
                              "clocks_start": clocks() if device == "cuda" else {}}
    examples = {e["name"]: {"name": e["name"], "id": e["id"], "file": relative(e["path"]),
                            "status": "ok"} for e in spec["examples"]}
    result["examples"] = list(examples.values())

    def fail_all(status: str, reason: str) -> dict[str, Any]:
        result.update(status=status, reason=reason)
        for ex in examples.values():
            if ex["status"] == "ok":
                ex.update(status=status, reason=reason)
        return result

    # 1. load every side
    try:
        baseline = load_benchmark(Path(spec["baseline"]))
    except PairError as exc:
        return fail_all("failed", str(exc))
    result["teaching"] = bool(option(baseline, "teaching", False))
    why = unmet_requirement(baseline, device)
    if why:
        return fail_all("skipped", f"{relative(spec['baseline'])}: {why}")
    sides: dict[str, object] = {}
    for e in spec["examples"]:
        try:
            bench = load_benchmark(Path(e["path"]))
        except PairError as exc:
            examples[e["name"]].update(status="failed", reason=str(exc))
            continue
        why = unmet_requirement(bench, device)
        if why:
            examples[e["name"]].update(status="skipped", reason=f"{relative(e['path'])}: {why}")
            continue
        sides[e["name"]] = bench

    # 2. verification on two seeds; leaves every side set up on `seed` for timing
    outputs: dict[int, dict[str, Any]] = {seed + 1: {}, seed: {}}
    for s in (seed + 1, seed):
        try:
            outputs[s]["baseline"] = run_once(baseline, s, device)
        except Exception as exc:  # noqa: BLE001
            return fail_all("failed", f"{relative(spec['baseline'])}: baseline raised "
                                      f"{type(exc).__name__} in setup/run:\n{_short_traceback(exc)}")
        for name in list(sides):
            try:
                outputs[s][name] = run_once(sides[name], s, device)
            except Exception as exc:  # noqa: BLE001
                examples[name].update(status="failed", reason=f"{examples[name]['file']}: raised "
                                      f"{type(exc).__name__} in setup/run:\n{_short_traceback(exc)}")
                del sides[name]
    if option(baseline, "seed_sensitive", True) and outputs_equal(outputs[seed]["baseline"],
                                                                  outputs[seed + 1]["baseline"]):
        return fail_all("failed", f"{relative(spec['baseline'])}: baseline output is identical for "
                                  f"seeds {seed} and {seed + 1}; setup() must build inputs from ctx.seed")
    for name in list(sides):
        bench = sides[name]
        tol = option(bench, "tolerance", None) or option(baseline, "tolerance", None)
        tol = Tolerance(*tol) if isinstance(tol, (tuple, list)) else tol
        checks = [compare(outputs[s]["baseline"], outputs[s][name], tol) for s in (seed, seed + 1)]
        failed = next((c for c in checks if not c.ok), None)
        check = failed or checks[0]
        examples[name]["verification"] = check.to_dict()
        if failed:
            examples[name].update(status="failed", reason=f"verification failed: {failed.message}")
        elif option(bench, "seed_sensitive", True) and outputs_equal(outputs[seed][name],
                                                                     outputs[seed + 1][name]):
            examples[name].update(status="failed", reason=(
                f"verification failed: output is identical for seeds {seed} and {seed + 1}; "
                f"run() returns a cached result or ignores its inputs"))
            examples[name]["verification"]["ok"] = False
        if examples[name]["status"] != "ok":
            del sides[name]
    del outputs

    # 3. time baseline and verified variants in interleaved rounds
    if not sides:
        result["status"] = "failed" if any(e["status"] == "failed" for e in examples.values()) else "skipped"
        return result
    all_benches = {"baseline": baseline, **sides}
    cold = any(option(b, "timing_mode", "hot") == "cold" for b in all_benches.values())
    flush = L2Flusher() if cold and device == "cuda" else None
    policy = StopPolicy(fixed_samples=spec.get("iterations"))
    try:
        measurement = interleaved({k: b.run for k, b in all_benches.items()}, policy, device,
                                  flush, spec.get("warmup"))
    except Exception as exc:  # noqa: BLE001
        return fail_all("failed", f"timing raised {type(exc).__name__}:\n{_short_traceback(exc)}")
    result.update(timing_mode="cold" if cold else "hot", stop_reason=measurement.stop_reason,
                  rounds=measurement.rounds, warmup_calls=measurement.warmup_calls)
    base_samples = measurement.samples_ms["baseline"]
    result["baseline"] = {"stats": summarize(base_samples).to_dict(),
                          "workload": _workload(baseline)}
    for name, bench in sides.items():
        samples = measurement.samples_ms[name]
        stats = summarize(samples)
        examples[name].update(
            stats=stats.to_dict(), workload=_workload(bench),
            speedup=result["baseline"]["stats"]["median"] / stats.median,
            speedup_ci=list(speedup_interval(base_samples, samples)),
            timing_check=[{"span_ms": b.span_ms, "wall_ms": b.wall_ms}
                          for b in measurement.batches[name]],
        )
    for bench in all_benches.values():
        teardown = getattr(bench, "teardown", None)
        if callable(teardown):
            teardown()
    result["clocks_end"] = clocks() if device == "cuda" else {}
    return result


def _workload(bench: object) -> dict[str, Any]:
    w = bench.workload()
    return {"bytes": w.bytes, "flops": w.flops, "flops_dtype": w.flops_dtype,
            "units": w.units, "unit_name": w.unit_name, "bound": w.bound}


def probe() -> dict[str, Any]:
    import torch

    from core.hardware import fingerprint, measure_ceilings

    info: dict[str, Any] = {"fingerprint": fingerprint(), "ceilings": {}}
    if torch.cuda.is_available():
        info["capability"] = list(torch.cuda.get_device_capability())
        info["ceilings"] = measure_ceilings()
    return info


def main(argv: list[str]) -> int:
    if argv[:1] == ["--probe"]:
        out = Path(argv[1])
        payload = probe()
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
