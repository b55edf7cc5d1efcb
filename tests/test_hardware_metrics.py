"""Hardware keys (core.hardware), rates and % of ceiling (core.metrics), the run's exit code."""
from __future__ import annotations

from pathlib import Path

import pytest

from core.benchmark import BenchContext, Benchmark, Requirements, Workload, validate
from core.gate import GateResult
from core.hardware import fingerprint, hardware_key
from core.metrics import headline, rates
from core.record import ExampleResult, PairResult, Rates, RunRecord
from tests.conftest import CPU_KEY, cpu_only


@pytest.mark.parametrize("name, key", [
    ("NVIDIA H100 80GB HBM3", "h100"),
    ("NVIDIA H100 PCIe", "h100"),
    ("NVIDIA H200", "h200"),
    ("NVIDIA H200 NVL", "h200"),
    ("NVIDIA GH200 480GB", "gh200"),
    ("NVIDIA B200", "b200"),
    ("NVIDIA GB200", "gb200"),
    ("NVIDIA A100-SXM4-80GB", "a100"),
    ("NVIDIA L4", "l4"),
    ("NVIDIA L40S", "l40s"),
    (None, CPU_KEY),
    ("", CPU_KEY),
    ("NVIDIA GeForce RTX 4090", "geforce_rtx_4090"),
    ("Tesla V100-SXM2-16GB", "tesla_v100_sxm2_16gb"),
])
def test_hardware_key(name, key):
    assert hardware_key(name) == key


@cpu_only
def test_fingerprint_on_cpu():
    info = fingerprint()
    assert info["device"] == "cpu" and info["hardware_key"] == CPU_KEY
    assert info["torch"]


CEILINGS = {"copy_gbps": 4000.0, "matmul_bf16_tflops": 800.0, "matmul_tf32_tflops": 400.0,
            "matmul_fp32_tflops": 50.0}


def test_memory_bound_rates():
    w = Workload(bytes=2e9, flops=1e9)  # 0.5 FLOP/byte
    assert w.bound == "memory"
    r = rates(w, 1.0, CEILINGS)  # 2 GB in 1 ms
    assert isinstance(r, Rates) and r.bound == "memory"
    assert r.gbps == pytest.approx(2000.0)
    assert r.ceiling == "copy_gbps" and r.pct_of_ceiling == pytest.approx(50.0)
    assert r.tflops == pytest.approx(1.0) and r.units_per_s is None
    assert headline(r) == "2000 GB/s"
    assert Rates.from_dict(r.to_dict()) == r


@pytest.mark.parametrize("dtype, ceiling, pct", [
    ("bf16", "matmul_bf16_tflops", 12.5), ("fp16", "matmul_bf16_tflops", 12.5),
    ("tf32", "matmul_tf32_tflops", 25.0), ("fp32", "matmul_fp32_tflops", 200.0),
])
def test_compute_bound_rates_use_matching_dtype_ceiling(dtype, ceiling, pct):
    w = Workload(bytes=1e9, flops=1e12, flops_dtype=dtype)  # 1000 FLOP/byte
    assert w.bound == "compute"
    r = rates(w, 10.0, CEILINGS)  # 1 TFLOP in 10 ms
    assert r.tflops == pytest.approx(100.0)
    assert r.ceiling == ceiling and r.pct_of_ceiling == pytest.approx(pct)
    assert headline(r) == "100.0 TFLOP/s"


def test_rates_without_ceilings_and_units():
    r = rates(Workload(bytes=1e6), 1.0, {})
    assert r.gbps == pytest.approx(1.0) and r.pct_of_ceiling is None and r.ceiling is None
    assert "pct_of_ceiling" not in r.to_dict()
    r = rates(Workload(flops=1e9, flops_dtype="fp8"), 1.0, CEILINGS)  # no fp8 ceiling measured
    assert r.bound == "compute" and r.pct_of_ceiling is None
    r = rates(Workload(units=4096, unit_name="tokens"), 2.0, {})
    assert r.bound == "units" and r.units_per_s == pytest.approx(2.048e6)
    assert r.unit_name == "tokens" and r.gbps is None and r.tflops is None
    assert headline(r) == "2.05M tokens/s"
    assert rates(Workload(units=10), 1.0, {}).unit_name == "units"
    assert headline(rates(Workload(), 1.0, {})) == "-"
    assert headline(None) == "-"


# ---------------------------------------------------------------- contract helpers

def test_validate_names_origin():
    class Ok(Benchmark):
        def setup(self, ctx: BenchContext) -> None: ...
        def make_inputs(self, seed: int): ...
        def run(self, inputs): ...

    validate(Ok(), "ch95/x.py")
    with pytest.raises(TypeError, match=r"ch95/x\.py: get_benchmark\(\) returned int"):
        validate(3, "ch95/x.py")
    bad = Ok()
    bad.timing_mode = "warm"
    with pytest.raises(TypeError, match="ch95/x.py: timing_mode"):
        validate(bad, "ch95/x.py")
    assert Requirements().cuda and BenchContext(device="cuda:0").is_cuda

    class V1Style(Benchmark):  # contract v1: data built in setup(), run() without inputs
        def setup(self, ctx: BenchContext) -> None: ...
        def run(self): ...

    with pytest.raises(TypeError, match=r"ch95/x\.py: V1Style does not define make_inputs\b"):
        validate(V1Style(), "ch95/x.py")

    class NoRun(Benchmark):
        def make_inputs(self, seed: int): ...

    with pytest.raises(TypeError, match=r"NoRun does not define run\b"):
        validate(NoRun(), "ch95/x.py")


# ---------------------------------------------------------------- exit codes

def _result(*rows: ExampleResult, interrupted=False) -> RunRecord:
    return RunRecord(Path("."), {}, {}, pairs=[PairResult(pair="ch95:x", examples=list(rows))],
                     interrupted=interrupted)


def _row(status="ok", gate="pass") -> ExampleResult:
    return ExampleResult(name="x", id="ch95:x", file="ch95/optimized_x.py", status=status,
                         expectation=GateResult(gate, gate) if gate != "-" else None)


def test_exit_codes():
    assert _result(_row(), _row(gate="new")).exit_code() == 0
    assert _result(_row(status="skipped", gate="-")).exit_code() == 0
    assert _result(_row(), _row(status="failed")).exit_code() == 1
    assert _result(_row(gate="regression")).exit_code() == 1
    assert _result(_row(gate="regression")).exit_code(updating=True) == 0
    assert _result(_row(status="failed")).exit_code(updating=True) == 1
    assert _result(_row(gate="inconclusive")).exit_code() == 0
    assert _result(_row(gate="inconclusive")).exit_code(strict=True) == 1
    assert _result(_row(), interrupted=True).exit_code() == 130


def test_bound_comes_from_the_measured_ridge_of_the_pair_precision():
    """12 FLOP/byte in fp32 is memory-bound on a GPU whose fp32 ridge is 17 (the old fixed
    10 FLOP/byte rule called it compute-bound and scored it against the wrong roof)."""
    from core.metrics import rates, ridge

    ceilings = {"copy_gbps": 3000.0, "matmul_fp32_tflops": 51.0, "matmul_bf16_tflops": 795.0}
    fp32 = Workload(bytes=1e9, flops=12e9, flops_dtype="fp32")
    assert ridge(fp32, ceilings) == pytest.approx(17.0)
    r = rates(fp32, 1.0, ceilings)
    assert r.bound == "memory" and r.ceiling == "copy_gbps"
    assert r.pct_of_ceiling == pytest.approx(100 / 3) and r.pct_of_matmul == pytest.approx(1200 / 51)
    heavy = rates(Workload(bytes=1e9, flops=30e9, flops_dtype="fp32"), 1.0, ceilings)
    assert heavy.bound == "compute" and heavy.ceiling == "matmul_fp32_tflops"
    assert heavy.pct_of_copy == pytest.approx(100 / 3)  # both percentages are kept
    # the same 30 FLOP/byte in bf16 sits far below bf16's ridge (265): memory-bound
    assert rates(Workload(bytes=1e9, flops=30e9, flops_dtype="bf16"), 1.0, ceilings).bound == "memory"
    # without measured ceilings (CPU), the workload's rule of thumb stands
    assert rates(fp32, 1.0, {}).bound == fp32.bound


def test_a_collective_is_judged_against_the_nccl_ceiling():
    from core.metrics import headline, rates

    work = Workload(bus_bytes=2 * (2 - 1) / 2 * 64e6)  # all-reduce of 64 MB over 2 ranks
    assert work.bound == "network"
    r = rates(work, 0.4, {"copy_gbps": 4200.0, "nccl_allreduce_gbps": 320.0})
    assert r.bound == "network" and r.ceiling == "nccl_allreduce_gbps"
    assert abs(r.bus_gbps - 160.0) < 1e-6 and abs(r.pct_of_ceiling - 50.0) < 1e-6
    assert headline(r) == "160 GB/s bus"
    unmeasured = rates(work, 0.4, {"copy_gbps": 4200.0})  # no `hw peak --gpus 2` cached
    assert unmeasured.pct_of_ceiling is None and unmeasured.bus_gbps is not None


def test_bytes_over_a_host_or_peer_link_are_judged_against_that_link():
    import pytest

    from core.benchmark import Workload
    from core.metrics import headline, rates

    r = rates(Workload(link_bytes=1e9, link="h2d"), 20.0, {"h2d_pinned_gbps": 55.0, "copy_gbps": 3000.0})
    assert r.bound == "link" and r.link_gbps == pytest.approx(50.0)
    assert r.ceiling == "h2d_pinned_gbps" and r.pct_of_ceiling == pytest.approx(100 * 50 / 55)
    assert headline(r) == "50.0 GB/s h2d" and r.pct_of_copy is None
    with pytest.raises(ValueError, match="link_bytes needs link set to one of h2d, d2h"):
        Workload(link_bytes=1.0, link="pcie")


def test_the_cache_follows_xdg_unless_aisp_cache_dir_is_set(monkeypatch, tmp_path):
    from core.hardware import cache_dir

    monkeypatch.delenv("AISP_CACHE_DIR", raising=False)
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "xdg"))
    assert cache_dir() == tmp_path / "xdg" / "aisp"  # it ignored XDG_CACHE_HOME before
    monkeypatch.delenv("XDG_CACHE_HOME")
    assert cache_dir() == Path.home() / ".cache" / "aisp"
    monkeypatch.setenv("AISP_CACHE_DIR", str(tmp_path / "mine"))
    assert cache_dir() == tmp_path / "mine"


def test_the_sm_clock_finds_this_processs_gpu_by_its_pci_address():
    from types import SimpleNamespace

    from core.hardware import SmClock, this_gpu

    props = SimpleNamespace(pci_domain_id=0, pci_bus_id=0x1B, pci_device_id=0)
    torch_stub = SimpleNamespace(cuda=SimpleNamespace(current_device=lambda: 0,
                                                      get_device_properties=lambda d: props))
    asked = []
    nvml = SimpleNamespace(nvmlDeviceGetHandleByPciBusId=lambda bus: asked.append(bus) or "by-bus",
                           nvmlDeviceGetHandleByIndex=lambda i: f"index {i}")
    assert this_gpu(nvml, torch_stub) == "by-bus" and asked == ["00000000:1B:00.0"]

    def unknown(bus):
        raise RuntimeError("NVML_ERROR_NOT_FOUND")
    nvml.nvmlDeviceGetHandleByPciBusId = unknown
    assert this_gpu(nvml, torch_stub) == "index 0"
    clock = SmClock("cpu")  # no GPU: nothing sampled, no median
    clock.sample("baseline")
    assert clock.median("baseline") is None


@pytest.mark.parametrize("gpus, expected", [(None, 4), (2, 2)])
def test_the_probe_takes_the_link_ceilings_of_the_runs_gpu_count(gpus, expected, monkeypatch):
    """`bench run --gpus 2` on a 4-GPU machine measures 2-rank pairs: their NCCL figures
    come from `hw peak --gpus 2`, not from the 4-GPU ones."""
    import torch

    from core import hardware

    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 4)
    monkeypatch.setattr(torch.cuda, "get_device_capability", lambda *a: (9, 0))
    monkeypatch.setattr(hardware, "fingerprint", lambda: {"device": "NVIDIA H200"})
    monkeypatch.setattr(hardware, "measure_ceilings", lambda **kw: {"copy_gbps": 4200.0})
    asked = []

    def cached(info, count=1):
        asked.append(count)
        return {"ceilings": {"nccl_allreduce_gbps": 100.0 * count}} if count > 1 else None
    monkeypatch.setattr(hardware, "cached_peaks", cached)
    info = hardware.probe(gpus)
    assert info["ceilings"]["nccl_allreduce_gbps"] == 100.0 * expected and expected in asked
    assert info["ceilings"]["copy_gbps"] == 4200.0
