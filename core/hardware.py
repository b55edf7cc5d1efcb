"""What machine this is: the device fingerprint, the hardware key, the measured ceilings."""
from __future__ import annotations

import json
import os
import platform
import re
import subprocess
from datetime import datetime, timezone
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable

from core import REPO_ROOT, atomic

if TYPE_CHECKING:  # torch is imported where it is used: the parent process stays light
    import torch

# Device name fragments → hardware key, most specific first.
_KEYS = (("gh200", "gh200"), ("h200", "h200"), ("h100", "h100"), ("h800", "h800"),
         ("gb200", "gb200"), ("b200", "b200"), ("b100", "b100"), ("a100", "a100"),
         ("l40s", "l40s"), ("l4", "l4"), ("a10", "a10"))


def cpu_model() -> str:
    """The processor's model name (/proc/cpuinfo), e.g. 'AMD EPYC 9454 48-Core Processor'."""
    try:
        with open("/proc/cpuinfo") as handle:
            for line in handle:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "unknown"


def usable_cores() -> int:
    """CPUs this process may run on (its affinity mask: a container's share, not the host's)."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else os.cpu_count() or 1


def cpu_key(model: str | None = None) -> str:
    """`AMD EPYC 9454 48-Core Processor` → `cpu_amd_epyc_9454`: CPU timings are stored per
    CPU model, so one machine's numbers never gate another's."""
    words = (model or cpu_model()).lower()
    words = re.sub(r"\((r|tm)\)|@.*$|\b\d+-core\b|\bprocessor\b|\bcpu\b", " ", words)
    slug = re.sub(r"[^a-z0-9]+", "_", words).strip("_")
    return f"cpu_{slug}" if slug else "cpu"


def hardware_key(device_name: str | None) -> str:
    """`NVIDIA H100 80GB HBM3` → `h100`; no GPU → `cpu_<model>`; unknown GPUs get a slug."""
    if not device_name:
        return cpu_key()
    lowered = device_name.lower()
    for fragment, key in _KEYS:
        if re.search(rf"\b{fragment}\b", lowered):
            return key
    slug = re.sub(r"[^a-z0-9]+", "_", lowered.replace("nvidia", "")).strip("_")
    return slug or "unknown_gpu"


def git_commit() -> str | None:
    """HEAD of the repo (`-dirty` with local changes); $AISP_GIT_COMMIT where there is no
    .git (e.g. a copied working tree on a GPU machine)."""
    if os.environ.get("AISP_GIT_COMMIT"):
        return os.environ["AISP_GIT_COMMIT"]
    try:
        out = subprocess.run(["git", "rev-parse", "--short=12", "HEAD"], cwd=REPO_ROOT,
                             capture_output=True, text=True, timeout=5)
        if out.returncode != 0:
            return None
        dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                               cwd=REPO_ROOT, capture_output=True, text=True, timeout=5).stdout
        return out.stdout.strip() + ("-dirty" if dirty.strip() else "")
    except (OSError, subprocess.SubprocessError):
        return None


def _nvml_facts(index: int) -> dict[str, Any]:
    """Driver, clocks, power, bus and link facts from NVML; empty when NVML is absent."""
    try:
        import pynvml
    except ImportError:
        return {}
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError:
        return {}
    try:
        handle = pynvml.nvmlDeviceGetHandleByIndex(index)
        facts: dict[str, Any] = {"driver": pynvml.nvmlSystemGetDriverVersion()}
        for key, call in (
            ("max_sm_clock_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_SM)),
            ("max_mem_clock_mhz", lambda: pynvml.nvmlDeviceGetMaxClockInfo(handle, pynvml.NVML_CLOCK_MEM)),
            ("power_limit_w", lambda: pynvml.nvmlDeviceGetPowerManagementLimit(handle) / 1000),
            ("pci_bus_id", lambda: pynvml.nvmlDeviceGetPciInfo(handle).busId),
            ("serial", lambda: pynvml.nvmlDeviceGetSerial(handle)),
            ("pcie_max_gen", lambda: pynvml.nvmlDeviceGetMaxPcieLinkGeneration(handle)),
            ("pcie_max_width", lambda: pynvml.nvmlDeviceGetMaxPcieLinkWidth(handle)),
        ):
            try:
                value = call()
                facts[key] = value.decode() if isinstance(value, bytes) else value
            except pynvml.NVMLError:
                pass
        return facts
    finally:
        pynvml.nvmlShutdown()


def this_gpu(pynvml: Any, torch: Any) -> Any:
    """NVML's handle of this process's GPU, found by its PCI address: NVML numbers GPUs
    ignoring CUDA_VISIBLE_DEVICES, which gives each rank of a multi-GPU pair its own device 0
    (by index every rank read physical GPU 0). The CUDA index where the address is unknown."""
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    try:
        bus = f"{props.pci_domain_id:08X}:{props.pci_bus_id:02X}:{props.pci_device_id:02X}.0"  # as NVML prints it
        return pynvml.nvmlDeviceGetHandleByPciBusId(bus)
    except Exception:  # noqa: BLE001 - an older torch or driver
        return pynvml.nvmlDeviceGetHandleByIndex(torch.cuda.current_device())


def clocks() -> dict[str, Any]:
    """This process's GPU's SM clock, temperature and throttle reasons (drift/throttle reports)."""
    try:
        import pynvml
        import torch

        pynvml.nvmlInit()
    except Exception:  # noqa: BLE001 - NVML missing or no driver: nothing to report
        return {}
    try:
        handle = this_gpu(pynvml, torch)
        return {
            "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(handle, pynvml.NVML_CLOCK_SM),
            "temperature_c": pynvml.nvmlDeviceGetTemperature(handle, pynvml.NVML_TEMPERATURE_GPU),
            "throttle_reasons": int(pynvml.nvmlDeviceGetCurrentClocksEventReasons(handle)),
        }
    except Exception:  # noqa: BLE001
        return {}
    finally:
        pynvml.nvmlShutdown()


class SmClock:
    """The SM clock read after each timed batch of each side (NVML), so a side that ran
    throttled or boosted shows it beside its rate (SideResult.sm_clock_mhz). Nothing on a
    machine without NVML or a GPU."""

    def __init__(self, device: str) -> None:
        self.samples: dict[str, list[int]] = {}
        self._nvml = self._handle = None
        if not device.startswith("cuda"):
            return
        try:
            import pynvml
            import torch

            pynvml.nvmlInit()  # reference-counted: clocks()'s shutdowns leave it open
            self._handle = this_gpu(pynvml, torch)
            self._nvml = pynvml
        except Exception:  # noqa: BLE001 - NVML missing or no driver: no clock to read
            self._handle = None

    def sample(self, side: str) -> None:
        if self._handle is None:
            return
        try:
            clock = self._nvml.nvmlDeviceGetClockInfo(self._handle, self._nvml.NVML_CLOCK_SM)
        except Exception:  # noqa: BLE001
            return
        self.samples.setdefault(side, []).append(int(clock))

    def median(self, side: str) -> float | None:
        values = sorted(self.samples.get(side, []))
        return float(values[len(values) // 2]) if values else None


def fingerprint() -> dict[str, Any]:
    """Everything a stored number depends on: device, driver, toolkit, library versions."""
    import torch

    info: dict[str, Any] = {
        "torch": torch.__version__, "cuda_runtime": torch.version.cuda,
        "python": platform.python_version(), "host": platform.node(),
        "git_commit": git_commit(), "cpu": cpu_model(), "cpu_cores": usable_cores(),
    }
    if not torch.cuda.is_available():
        info.update(device="cpu", hardware_key=cpu_key())
        return info
    index = torch.cuda.current_device()
    props = torch.cuda.get_device_properties(index)
    info.update(
        device=props.name, hardware_key=hardware_key(props.name),
        compute_capability=f"{props.major}.{props.minor}", sm_count=props.multi_processor_count,
        memory_gib=round(props.total_memory / 2**30, 1),
        l2_mib=round(props.L2_cache_size / 2**20, 1), gpu_count=torch.cuda.device_count(),
    )
    info.update(_nvml_facts(index))
    try:
        from core.cuda import nvcc_version

        info["nvcc"] = nvcc_version()
    except Exception:  # noqa: BLE001 - nvcc is optional for fingerprinting
        info["nvcc"] = None
    return info


SUSTAIN_S = 1.0  # each ceiling runs this long, in windows of WINDOW_MS, and is the best window:
WINDOW_MS = 25.0  # a pair's side runs in rounds of this length (core.timing.StopPolicy).
# Why the best window and not the whole second's median: pairs run in such short rounds, at
# clocks above the power-capped sustained ones, and on an H100/H200 nine stored GEMM results sat
# at 102-118% of a sustained ceiling (ch02's TF32 GEMM at 117%). The best window is the op at the
# clocks a short round gets; a side below it ran slower, and its SM clock (SideResult) says why.


HOST_LINK_BYTES = 256 * 2**20  # per host<->device copy: 4.2 ms even at PCIe Gen5 x16's 64 GB/s
HOST_LINK_SUSTAIN_S = 0.25  # the link's speed does not follow the SM clock, so a quarter second
# per direction and memory kind is enough, and the four of them cost a run's probe about 1.5 s
HOST_LINK_CEILINGS = ("h2d_pinned_gbps", "d2h_pinned_gbps", "h2d_pageable_gbps",
                      "d2h_pageable_gbps")


def host_link_copies(device_buffer: torch.Tensor, pinned: torch.Tensor, pageable: torch.Tensor
                     ) -> dict[str, Callable[[], object]]:
    """The four host<->device copies behind the link ceilings, by ceiling name.

    Pinned: the copy engine DMAs straight from/to page-locked memory (non_blocking, as a pair
    that stages through a pinned buffer issues it). Pageable: torch's ordinary `copy_`; the
    driver copies through its own pinned staging buffers and the call returns when the copy
    is done. Each moves the buffer's bytes once, in one direction.
    """
    return {
        "h2d_pinned_gbps": lambda: device_buffer.copy_(pinned, non_blocking=True),
        "d2h_pinned_gbps": lambda: pinned.copy_(device_buffer, non_blocking=True),
        "h2d_pageable_gbps": lambda: device_buffer.copy_(pageable),
        "d2h_pageable_gbps": lambda: pageable.copy_(device_buffer),
    }


def measure_ceilings(device: str = "cuda", full: bool = False,
                     conditions: dict[str, Any] | None = None) -> dict[str, float]:
    """Same-run ceilings: torch copy bandwidth, host<->device link bandwidth, matmul
    TFLOP/s (bf16, tf32, fp32; with `full`, also fp16 and fp8 where the GPU has it) and the
    fp32 FMA rate of the CUDA cores (core.fma_ceiling, where Triton is installed), each
    the best WINDOW_MS window of SUSTAIN_S (the link copies: of HOST_LINK_SUSTAIN_S).

    Copy: 1 GiB device-to-device, counting bytes read + written. Link: HOST_LINK_BYTES host
    to device and device to host, from pinned and from pageable host memory, counting the
    bytes once (`host_link_copies`); the host buffers sit wherever the OS placed this
    process, so on a two-socket host the figure is that NUMA node's. Matmul: 8192³ on random
    data (zeros run faster and would flatter the ceiling); fp8 on per-tensor-scaled e4m3 data,
    as a real fp8 GEMM gets it. `conditions`, if given, receives each ceiling's SM clock,
    temperature and throttle reasons at its end (NVML).
    """
    import torch

    from core.stats import summarize
    from core.timing import measure_cuda, warm_up

    def sustained_ms(fn: Callable[[], object], seconds: float = SUSTAIN_S) -> float:
        """The op's time per call: the least median of its windows over `seconds`."""
        last, _ = warm_up(fn, measure_cuda)
        per_window = max(1, min(200, int(WINDOW_MS / max(last, 1e-3))))
        windows: list[float] = []
        while len(windows) * per_window * last < seconds * 1e3 or len(windows) < 3:
            samples = measure_cuda(fn, per_window).samples_ms
            windows.append(summarize(samples).median)
            last = windows[-1]
        return min(windows)

    def record(name: str, value: float) -> None:
        ceilings[name] = value
        if conditions is not None:
            conditions[name] = clocks()

    ceilings: dict[str, float] = {}
    src = torch.randn(2**28, device=device)  # 1 GiB of fp32
    dst = torch.empty_like(src)
    record("copy_gbps", 2 * src.numel() * 4 / sustained_ms(lambda: dst.copy_(src)) / 1e6)
    del src, dst
    device_buffer = torch.ones(HOST_LINK_BYTES, dtype=torch.uint8, device=device)
    pinned = torch.ones(HOST_LINK_BYTES, dtype=torch.uint8, pin_memory=True)
    pageable = torch.ones(HOST_LINK_BYTES, dtype=torch.uint8)  # written: every page is mapped
    for name, copy in host_link_copies(device_buffer, pinned, pageable).items():
        record(name, HOST_LINK_BYTES / sustained_ms(copy, HOST_LINK_SUSTAIN_S) / 1e6)
    del device_buffer, pinned, pageable
    n = 8192
    kinds = [("bf16", torch.bfloat16, False), ("tf32", torch.float32, True),
             ("fp32", torch.float32, False)]
    if full:
        kinds.insert(1, ("fp16", torch.float16, False))
    previous_tf32 = torch.backends.cuda.matmul.allow_tf32
    try:
        for label, dtype, tf32 in kinds:
            torch.backends.cuda.matmul.allow_tf32 = tf32
            a = torch.randn(n, n, device=device, dtype=dtype)
            b = torch.randn(n, n, device=device, dtype=dtype)
            record(f"matmul_{label}_tflops", 2 * n**3 / sustained_ms(lambda: torch.mm(a, b)) / 1e9)
            del a, b
    finally:
        torch.backends.cuda.matmul.allow_tf32 = previous_tf32
    try:  # the fp32 CUDA cores' own roof, which cuBLAS's fp32 GEMM does not reach
        from core import fma_ceiling
    except ImportError:  # no Triton: fp32 FLOPs are judged against the fp32 GEMM alone
        fma_ceiling = None
    if fma_ceiling is not None:
        x = torch.randn(1 << 22, device=device)
        fma = fma_ceiling.fma_call(x, torch.empty_like(x))
        record("fma_fp32_tflops", fma_ceiling.flops(x) / sustained_ms(fma) / 1e9)
        del x
    if full and torch.cuda.get_device_capability(device) >= (8, 9):
        # fp8 e4m3 through cuBLASLt on scaled data (amax → 448, e4m3's largest value: the
        # values fill e4m3's range as in a quantized GEMM); B column-major, fp32 scales.
        def scaled(x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
            scale = x.abs().amax() / 448.0
            return (x / scale).to(torch.float8_e4m3fn), scale.float()
        a, scale_a = scaled(torch.randn(n, n, device=device))
        bt, scale_b = scaled(torch.randn(n, n, device=device))
        fp8 = lambda: torch._scaled_mm(a, bt.t(), scale_a, scale_b, out_dtype=torch.bfloat16)  # noqa: E731
        record("matmul_fp8_tflops", 2 * n**3 / sustained_ms(fp8) / 1e9)
        del a, bt
    torch.cuda.empty_cache()
    return ceilings


# The host link's theoretical rate per direction: PCIe Gen5 x16 is 32 GT/s x 16 lanes = 64 GB/s
# (63 after 128b/130b encoding; packet headers and flow control take more), Gen4 x16 half.
# Pinned and pageable copies cross the same link, so both are shown against it.
PCIE_GEN5_X16_GBPS = 64
PCIE_GEN4_X16_GBPS = 32

# Vendor datasheet figures (dense, SXM parts): HBM bandwidth in GB/s and TFLOP/s, and the host
# link's theoretical GB/s per direction (HOST_LINK_DATASHEET_NOTE). Leads for comparison only;
# every %-of-ceiling figure uses measured ceilings.
DATASHEET: dict[str, dict[str, float]] = {
    "h100": {"copy_gbps": 3350, "matmul_fp32_tflops": 67, "fma_fp32_tflops": 67, "matmul_tf32_tflops": 495,
             "matmul_bf16_tflops": 989, "matmul_fp16_tflops": 989, "matmul_fp8_tflops": 1979,
             **dict.fromkeys(HOST_LINK_CEILINGS, PCIE_GEN5_X16_GBPS)},
    "h200": {"copy_gbps": 4800, "matmul_fp32_tflops": 67, "fma_fp32_tflops": 67, "matmul_tf32_tflops": 495,
             "matmul_bf16_tflops": 989, "matmul_fp16_tflops": 989, "matmul_fp8_tflops": 1979,
             **dict.fromkeys(HOST_LINK_CEILINGS, PCIE_GEN5_X16_GBPS)},
    "a100": {"copy_gbps": 2039, "matmul_fp32_tflops": 19.5, "fma_fp32_tflops": 19.5, "matmul_tf32_tflops": 156,
             "matmul_bf16_tflops": 312, "matmul_fp16_tflops": 312,
             **dict.fromkeys(HOST_LINK_CEILINGS, PCIE_GEN4_X16_GBPS)},
}
HOST_LINK_DATASHEET_NOTE = (
    f"h2d/d2h: host<->device copies of {HOST_LINK_BYTES >> 20} MiB from/to pinned or pageable "
    f"host memory. Their datasheet figure is the PCIe link's theoretical rate per direction "
    f"(Gen5 x16: {PCIE_GEN5_X16_GBPS} GB/s, Gen4 x16: {PCIE_GEN4_X16_GBPS}), which no copy "
    f"reaches: packet headers and flow control share the link.")


def cache_dir() -> Path:
    """$AISP_CACHE_DIR, else aisp under the XDG cache directory ($XDG_CACHE_HOME, ~/.cache)."""
    if os.environ.get("AISP_CACHE_DIR"):
        return Path(os.environ["AISP_CACHE_DIR"])
    return Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "aisp"


def _cache_file() -> Path:
    return cache_dir() / "peaks.json"


def device_id(info: dict[str, Any]) -> str:
    """What a cached ceiling belongs to: the device, its bus slot, driver and torch."""
    return "|".join(str(info.get(k)) for k in ("device", "pci_bus_id", "driver", "torch"))


def _peaks_key(info: dict[str, Any], gpus: int) -> str:
    """A cache entry's key: the device, and for one GPU the way its ceilings were measured
    (entries from before the best-window ceilings are measured again)."""
    return device_id(info) + (f"|x{gpus}" if gpus > 1 else f"|window{WINDOW_MS:g}ms")


def cached_peaks(info: dict[str, Any], gpus: int = 1) -> dict[str, Any] | None:
    """What `hw peak` cached for this device (`gpus` > 1: for that many of them together)."""
    try:
        return json.loads(_cache_file().read_text()).get(_peaks_key(info, gpus))
    except (OSError, json.JSONDecodeError):
        return None


def store_peaks(info: dict[str, Any], peaks: dict[str, float], gpus: int = 1,
                extra: dict[str, Any] | None = None) -> Path:
    path = _cache_file()
    try:
        cache = json.loads(path.read_text())
    except (OSError, json.JSONDecodeError):
        cache = {}
    cache[_peaks_key(info, gpus)] = {"ceilings": peaks, **(extra or {}), "measured": datetime.now(timezone.utc)
                  .strftime("%Y-%m-%dT%H:%M:%SZ")}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic.write_text(path, json.dumps(cache, indent=2, sort_keys=True))
    return path


def probe(gpus: int | None = None) -> dict[str, Any]:
    """What a run records about the device: fingerprint, capability and same-run ceilings
    (plus the precisions `hw peak` cached for this device, and the link ceilings `hw peak
    --gpus N` cached for the run's GPU count: `gpus`, `--gpus N`, else every GPU). Runs in a
    child process."""
    import torch

    info: dict[str, Any] = {"fingerprint": fingerprint(), "ceilings": {}}
    if torch.cuda.is_available():
        info["capability"] = list(torch.cuda.get_device_capability())
        info["ceiling_conditions"] = {}
        measured = measure_ceilings(conditions=info["ceiling_conditions"])
        cached = (cached_peaks(info["fingerprint"]) or {}).get("ceilings", {})
        gpus = gpus or torch.cuda.device_count()  # `--gpus 2` on 4 GPUs: the 2-GPU ceilings
        if gpus > 1:  # link ceilings of `hw peak --gpus N`, for the multi-GPU pairs' % column
            cached.update((cached_peaks(info["fingerprint"], gpus) or {}).get("ceilings", {}))
        info["ceilings"] = {**cached, **measured}
        info["ceilings_from_hw_peak"] = sorted(set(cached) - set(measured))
    return info


def cuda_survives_fork() -> bool:
    """Whether a child forked now can use the GPU (or finds none): False when something in
    this process started CUDA, which a forked child cannot use ("initialization error"; torch
    refuses it once even `torch.cuda.is_available()` ran here). The fork server checks it at
    every start, and the launcher of a multi-GPU pair before it forks its ranks."""
    pid = os.fork()
    if pid == 0:
        code = 1
        try:
            import torch

            code = 0 if not torch.cuda.is_available() else int(torch.ones(1, device="cuda").item() != 1)
        finally:
            os._exit(code)  # never the parent's atexit handlers, never its pipes
    _, status = os.waitpid(pid, 0)
    return os.waitstatus_to_exitcode(status) == 0
