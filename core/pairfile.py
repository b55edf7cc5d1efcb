"""Loading one pair file and deciding whether it can run here."""
from __future__ import annotations

import importlib
from pathlib import Path

from core import goals
from core.benchmark import Benchmark, PairError, Requirements, option, validate
from core.ranks import nodes, split_problem
from core.tuning import numa_node_count


def relative(path: str | Path) -> str:
    """`chNN/file.py`: how messages name a pair file, wherever the chapters live."""
    path = Path(path)
    return f"{path.parent.name}/{path.name}"


def load_benchmark(path: Path) -> Benchmark:
    """Import `chNN/<file>.py` as module `chNN.<file>` and call its get_benchmark()."""
    name = f"{path.parent.name}.{path.stem}"
    try:
        module = importlib.import_module(name)
    except Exception as exc:  # noqa: BLE001 - any import failure is the pair file's problem
        raise PairError(f"{relative(path)}: import failed: {type(exc).__name__}: {exc}") from exc
    factory = getattr(module, "get_benchmark", None)
    if not callable(factory):
        raise PairError(f"{relative(path)}: defines no get_benchmark(); end the file with "
                        f"`get_benchmark = YourBenchmark` (see README, 'Adding a pair')")
    try:
        bench = factory()
    except Exception as exc:  # noqa: BLE001
        raise PairError(f"{relative(path)}: get_benchmark() raised {type(exc).__name__}: {exc}") from exc
    try:
        validate(bench, relative(path))
        goals.check_contract(bench, relative(path))
    except TypeError as exc:
        raise PairError(str(exc)) from exc
    return bench


def unmet_requirement(bench: object, device: str, gpus: int | None = None) -> str | None:
    """Why this benchmark cannot run here, or None (`gpus`: `bench run --gpus N`, the most
    GPUs a pair may use)."""
    req: Requirements = option(bench, "requires", Requirements())
    if gpus and req.gpus > gpus:
        return f"needs {req.gpus} GPUs; --gpus {gpus} was given"
    if req.gpus > 1 and not req.one_process and (split := split_problem(ranks_for(bench, device, gpus))):
        return split  # its ranks over the nodes of AISP_TORCHRUN_ARGS (core.ranks)
    if req.one_node and req.gpus > 1 and not req.one_process and nodes() > 1:
        return (f"needs all its ranks on one node (peers' memory mapped over NVLink); "
                f"AISP_TORCHRUN_ARGS spans {nodes()} nodes: run it on one machine")
    if device == "cpu":
        if req.cuda and not option(bench, "supports_cpu", False):
            return "needs a CUDA GPU; none is available on this machine"
        return _missing_module(req) or _unmet_on_host(req) or _unavailable(bench)
    import torch

    here = req.gpus if req.one_process else -(-req.gpus // nodes())  # several nodes: a share
    if here > torch.cuda.device_count():
        share = f" ({here} on each of {nodes()} nodes)" if here < req.gpus else ""
        return f"needs {req.gpus} GPUs{share}; this machine has {torch.cuda.device_count()}"
    if req.min_compute_capability and torch.cuda.get_device_capability() < req.min_compute_capability:
        want = ".".join(map(str, req.min_compute_capability))
        have = ".".join(map(str, torch.cuda.get_device_capability()))
        return f"needs compute capability ≥ {want}; this GPU is {have}"
    missing = _missing_module(req)
    if missing:
        return missing
    if req.nvcc:
        from core.cuda import nvcc_path

        if nvcc_path() is None:
            return "needs nvcc (the CUDA toolkit) to build its .cu file; set CUDA_HOME"
    return _unmet_on_host(req) or _unavailable(bench)


def ranks_for(bench: object, device: str, gpus: int | None = None) -> int:
    """How many ranks a multi-GPU pair runs as: its `requires.gpus`, or, for a pair that
    scales (`requires.scales`), `--gpus N` when given, else every GPU present, on every node
    of AISP_TORCHRUN_ARGS (on a CPU machine, where ranks are CPU processes, its minimum)."""
    req: Requirements = option(bench, "requires", Requirements())
    if not req.scales:
        return req.gpus
    if gpus:
        return max(req.gpus, gpus)
    if device.startswith("cuda"):
        import torch

        return max(req.gpus, torch.cuda.device_count() * nodes())  # every node's GPUs
    return req.gpus


def _missing_module(req: Requirements) -> str | None:
    """The first of `req.modules` that cannot be imported here (CPU or GPU alike)."""
    for module in req.modules:
        try:
            importlib.import_module(module)
        except ImportError:
            return f"needs the Python module '{module}', which is not installed"
    return None


def _unavailable(bench: object) -> str | None:
    """The pair's own reason this machine cannot show its technique (Benchmark.unavailable),
    asked only once its declared requirements are met."""
    check = option(bench, "unavailable", None)
    return check() if callable(check) else None


def _unmet_on_host(req: Requirements) -> str | None:
    """What the host itself lacks, whatever the device."""
    if req.numa_nodes > 1 and (nodes := numa_node_count()) < req.numa_nodes:
        return f"needs {req.numa_nodes} NUMA nodes; this machine has {nodes}"
    return None
