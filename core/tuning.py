"""`hw tuning-check`: the host and GPU settings chapter 3 tunes, read and judged, never changed.

Each check reads one setting (NVML for the GPU; /proc and /sys for the host; getrlimit for the
locked-memory limit), says what the book recommends and why, and gives a status:

    OK       as recommended
    CHECK    differs from the recommendation: look at it (it may be deliberate)
    unknown  not readable here (no NVIDIA GPU or NVML; a VM or container that hides the file)

Nothing in this module writes anywhere. ch03/scripts/os_tuning.sh shows the commands that would
change these settings (documentation, never run by the tests). The readers are injected (a root
folder standing for `/`, a GPU reader, a limit reader), so the tests run on any machine.
"""
from __future__ import annotations

import re
import resource
from dataclasses import dataclass
from pathlib import Path
from typing import Callable, Literal

Status = Literal["OK", "CHECK", "unknown"]
NO_GPU = "no NVIDIA GPU/NVML"


@dataclass(frozen=True)
class Check:
    """One setting: what it is here, whether that is what the book recommends, and why."""

    name: str
    value: str
    status: Status
    recommended: str
    why: str
    subject: str = "host"  # "GPU 0", "GPU 1", ... per GPU; "GPU" where no GPU could be read

    @property
    def label(self) -> str:
        return self.name if self.subject == "host" else f"{self.subject} {self.name}"


@dataclass(frozen=True)
class GpuState:
    """What NVML says about one GPU (None: NVML could not read it on this GPU)."""

    index: int
    name: str
    persistence_mode: bool | None
    sm_clock_mhz: int | None
    max_sm_clock_mhz: int | None
    app_sm_clock_mhz: int | None
    default_app_sm_clock_mhz: int | None


class GpuUnavailable(RuntimeError):
    """NVML cannot be used here; the message says why."""


# --- readers ----------------------------------------------------------------------------------

def read_gpus() -> list[GpuState]:
    """Every GPU NVML sees (nvidia-ml-py); GpuUnavailable when there is no NVML or no GPU."""
    try:
        import pynvml
    except ImportError as exc:
        raise GpuUnavailable("pynvml (nvidia-ml-py) is not installed") from exc
    try:
        pynvml.nvmlInit()
    except pynvml.NVMLError as exc:
        raise GpuUnavailable(f"NVML did not initialize: {exc}") from exc
    try:
        count = pynvml.nvmlDeviceGetCount()
        if count == 0:
            raise GpuUnavailable("NVML sees no GPU")
        states = []
        for index in range(count):
            handle = pynvml.nvmlDeviceGetHandleByIndex(index)

            def read(fn: Callable[..., object], *args: object) -> object | None:
                try:
                    return fn(handle, *args)
                except pynvml.NVMLError:  # not supported on this GPU, or no permission
                    return None

            mode = read(pynvml.nvmlDeviceGetPersistenceMode)
            sm = pynvml.NVML_CLOCK_SM
            name = pynvml.nvmlDeviceGetName(handle)
            states.append(GpuState(
                index=index, name=name.decode() if isinstance(name, bytes) else str(name),
                persistence_mode=None if mode is None else mode == pynvml.NVML_FEATURE_ENABLED,
                sm_clock_mhz=read(pynvml.nvmlDeviceGetClockInfo, sm),
                max_sm_clock_mhz=read(pynvml.nvmlDeviceGetMaxClockInfo, sm),
                app_sm_clock_mhz=read(pynvml.nvmlDeviceGetApplicationsClock, sm),
                default_app_sm_clock_mhz=read(pynvml.nvmlDeviceGetDefaultApplicationsClock, sm)))
        return states
    finally:
        pynvml.nvmlShutdown()


def read_memlock() -> tuple[int, int]:
    """(soft, hard) RLIMIT_MEMLOCK in bytes; resource.RLIM_INFINITY means unlimited."""
    return resource.getrlimit(resource.RLIMIT_MEMLOCK)


def numa_node_count(root: Path = Path("/")) -> int:
    """NUMA nodes the kernel shows (`node0`, `node1`, ... in /sys/devices/system/node); 1 where
    the folder is missing (a kernel without NUMA, a non-Linux host)."""
    folder = root / "sys/devices/system/node"
    try:
        nodes = [p for p in folder.iterdir() if re.fullmatch(r"node\d+", p.name)]
    except OSError:
        return 1
    return max(1, len(nodes))


def _read(path: Path) -> str | None:
    try:
        return path.read_text().strip()
    except OSError:
        return None


# --- the checks -------------------------------------------------------------------------------

def tuning_checks(root: Path = Path("/"), gpus: Callable[[], list[GpuState]] = read_gpus,
                  memlock: Callable[[], tuple[int, int]] = read_memlock) -> list[Check]:
    """Every check, GPU settings first; `root` stands for `/` (the tests pass a fake tree)."""
    try:
        states, missing = gpus(), ""
    except GpuUnavailable as exc:
        states, missing = [], str(exc)
    return [*_persistence(states, missing), *_clocks(states, missing), _governor(root),
            _huge_pages(root), _memlock(memlock), _numa_balancing(root)]


PERSISTENCE_RECOMMENDED = "Enabled (nvidia-persistenced, or nvidia-smi -pm 1)"
PERSISTENCE_WHY = (
    "Without it the driver unloads the GPU's state when the last process exits: the next "
    "process pays driver initialization again (seconds on a multi-GPU node) and the GPU may "
    "drop to a low-power state between jobs.")
CLOCKS_RECOMMENDED = "application clocks at their default or higher (nvidia-smi -rac resets them)"
CLOCKS_WHY = (
    "Lowered application clocks make every kernel slower without any error. The current clock "
    "of an idle GPU is low by design; what matters is the clock it runs at under load, which "
    "the harness records for every pair. Lock clocks (nvidia-smi -lgc) only for A/B "
    "experiments, and say so beside the numbers.")


def _persistence(states: list[GpuState], missing: str) -> list[Check]:
    if not states:
        return [Check("persistence mode", f"unknown: {NO_GPU} ({missing})", "unknown",
                      PERSISTENCE_RECOMMENDED, PERSISTENCE_WHY, "GPU")]
    out = []
    for gpu in states:
        subject = f"GPU {gpu.index}"
        if gpu.persistence_mode is None:
            out.append(Check("persistence mode", "unknown: NVML cannot read it on this GPU",
                             "unknown", PERSISTENCE_RECOMMENDED, PERSISTENCE_WHY, subject))
        else:
            out.append(Check("persistence mode", "Enabled" if gpu.persistence_mode else "Disabled",
                             "OK" if gpu.persistence_mode else "CHECK",
                             PERSISTENCE_RECOMMENDED, PERSISTENCE_WHY, subject))
    return out


def _mhz(value: int | None) -> str:
    return "?" if value is None else f"{value}"


def _clocks(states: list[GpuState], missing: str) -> list[Check]:
    if not states:
        return [Check("clocks", f"unknown: {NO_GPU} ({missing})", "unknown",
                      CLOCKS_RECOMMENDED, CLOCKS_WHY, "GPU")]
    out = []
    for gpu in states:
        value = (f"SM {_mhz(gpu.sm_clock_mhz)} MHz now, max {_mhz(gpu.max_sm_clock_mhz)}; "
                 f"application {_mhz(gpu.app_sm_clock_mhz)} "
                 f"(default {_mhz(gpu.default_app_sm_clock_mhz)})")
        if gpu.app_sm_clock_mhz is None or gpu.default_app_sm_clock_mhz is None:
            status: Status = "unknown"
            value += "; application clocks not readable on this GPU"
        elif gpu.app_sm_clock_mhz < gpu.default_app_sm_clock_mhz:
            status = "CHECK"
            value += "; lowered below the default"
        else:
            status = "OK"
        out.append(Check("clocks", value, status, CLOCKS_RECOMMENDED, CLOCKS_WHY, f"GPU {gpu.index}"))
    return out


def _governor(root: Path) -> Check:
    recommended = "performance on every CPU (cpupower frequency-set -g performance)"
    why = ("The host launches kernels, feeds data and runs Python between them; a governor that "
           "lowers the clock of an idle-looking core makes that work slower and its timing "
           "noisier. Launch-bound and data-loading steps feel it first.")
    cpus = root / "sys/devices/system/cpu"
    try:
        files = sorted(cpus.glob("cpu[0-9]*/cpufreq/scaling_governor"))
    except OSError:
        files = []
    governors: dict[str, int] = {}
    for path in files:
        value = _read(path)
        if value:
            governors[value] = governors.get(value, 0) + 1
    if not governors:
        return Check("CPU frequency governor",
                     "unknown: no cpufreq in /sys (a VM or container often hides it; the "
                     "hypervisor or firmware decides)", "unknown", recommended, why)
    value = ", ".join(f"{name} ({count} CPUs)" for name, count in sorted(governors.items()))
    status: Status = "OK" if set(governors) == {"performance"} else "CHECK"
    return Check("CPU frequency governor", value, status, recommended, why)


def _huge_pages(root: Path) -> Check:
    recommended = "always for training hosts (never or madvise on latency-critical inference hosts)"
    why = ("Large host buffers (pinned staging, datasets in memory) on 2 MiB pages need 512x "
           "fewer TLB entries and page faults. With madvise, only memory that asks gets them "
           "(PyTorch's CPU allocator asks only with THP_MEM_ALLOC_ENABLE=1). The background "
           "compaction can add latency spikes, which is why inference hosts often turn it off.")
    text = _read(root / "sys/kernel/mm/transparent_hugepage/enabled")
    if text is None:
        return Check("transparent huge pages", "unknown: /sys/kernel/mm/transparent_hugepage "
                     "is not readable", "unknown", recommended, why)
    match = re.search(r"\[(\w+)\]", text)
    mode = match.group(1) if match else text
    return Check("transparent huge pages", mode, "OK" if mode == "always" else "CHECK",
                 recommended, why)


def _bytes(n: int) -> str:
    if n == resource.RLIM_INFINITY:
        return "unlimited"
    for unit in ("B", "KiB", "MiB", "GiB"):
        if n < 1024 or unit == "GiB":
            return f"{n:g} {unit}"
        n /= 1024
    return str(n)


def _memlock(memlock: Callable[[], tuple[int, int]]) -> Check:
    recommended = "unlimited (ulimit -l unlimited; docker run --ulimit memlock=-1)"
    why = ("Buffers registered with an RDMA NIC (NCCL over InfiniBand or RoCE, GPUDirect "
           "RDMA) and memory locked with mlock count against this limit. Containers often "
           "start with 64 KiB or 8 MiB; registration then fails, or the library falls back "
           "to a slower path.")
    try:
        soft, hard = memlock()
    except (OSError, ValueError) as exc:
        return Check("locked-memory limit (memlock)", f"unknown: {exc}", "unknown", recommended, why)
    value = f"soft {_bytes(soft)}, hard {_bytes(hard)}"
    status: Status = "OK" if soft == resource.RLIM_INFINITY else "CHECK"
    return Check("locked-memory limit (memlock)", value, status, recommended, why)


def _numa_balancing(root: Path) -> Check:
    recommended = "0 (off) on GPU nodes whose jobs bind threads and memory themselves"
    why = ("Automatic NUMA balancing unmaps pages now and then to see who touches them and "
           "migrates them; each sample is a page fault. A job that binds its threads to the "
           "GPU's NUMA node gains nothing from it, and pinned memory cannot move anyway.")
    text = _read(root / "proc/sys/kernel/numa_balancing")
    nodes = numa_node_count(root)
    if text is None:
        return Check("NUMA balancing", f"unknown: /proc/sys/kernel/numa_balancing is not "
                     f"readable ({nodes} NUMA node{'s' if nodes > 1 else ''})", "unknown",
                     recommended, why)
    if text == "0":
        return Check("NUMA balancing", f"0 ({nodes} NUMA node{'s' if nodes > 1 else ''})", "OK",
                     recommended, why)
    if nodes == 1:
        return Check("NUMA balancing", f"{text} (1 NUMA node: nothing to migrate)", "OK",
                     recommended, why)
    return Check("NUMA balancing", f"{text} ({nodes} NUMA nodes)", "CHECK", recommended, why)


def render(checks: list[Check]) -> str:
    """The table `hw tuning-check` prints, then why each setting matters."""
    from tabulate import tabulate

    table = tabulate([[c.label, c.value, c.status, c.recommended] for c in checks],
                     headers=["setting", "here", "status", "recommended"])
    reasons: dict[str, str] = {}
    for c in checks:  # once per setting, however many GPUs
        reasons.setdefault(c.name, f"- {c.name}: {c.why}")
    return (f"{table}\n\nRead-only: nothing was changed. Why each setting matters:\n"
            + "\n".join(reasons.values()))
