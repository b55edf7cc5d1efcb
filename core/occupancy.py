"""`tools occupancy-tuning TARGET`: one kernel under preset launch configurations.

The book's occupancy lesson is a sweep: the same device code with another block size, other
launch bounds or a register cap changes how many warps an SM holds, and so how much memory
latency it can hide, until registers spill. A pair opts in by building its kernel from macros
(see ch08/ssm_scan.cu: `AISP_TUNE_BLOCK`, `AISP_TUNE_MIN_BLOCKS`) and declaring

    tuning_source = "ssm_scan.cu"               # rebuilt once per preset
    tuning_query = "ssm_scan_tuned_occupancy"   # (threads, registers, spill bytes, blocks/SM)
    def run_tuned(self, lib, inputs): ...       # run() through that build of the kernel

Each preset is a build with its own nvcc flags. In one child process on the GPU, every build
is checked against the pair's baseline output (with the pair's tolerance) and all of them are
timed in alternating rounds by the harness's timing loop, so clocks and drift hit them alike.
The table gives threads, registers, spills, blocks and warps per SM, the time and the speedup
over the first preset. It is a sweep to read, not a gated result: nothing is stored.
"""
from __future__ import annotations

import re
from dataclasses import dataclass

# Block sizes from a warp to the maximum; launch bounds that ask for more resident blocks;
# one register cap (ch08's README: capping at 64 spills inside the scan's time loop).
DEFAULT_PRESETS = "128,256,512,1024,256x2,256x3,256x4,512x2,256r64"
_PRESET = re.compile(r"(\d+)(?:x(\d+))?(?:r(\d+))?")


class PresetError(ValueError):
    """A --presets string that does not parse; the message shows the form."""


@dataclass(frozen=True)
class Preset:
    """`256x3r64`: 256-thread blocks, __launch_bounds__(256, 3), at most 64 registers."""

    threads: int
    min_blocks: int = 1
    max_registers: int | None = None

    @property
    def name(self) -> str:
        return (f"{self.threads}" + (f"x{self.min_blocks}" if self.min_blocks > 1 else "")
                + (f"r{self.max_registers}" if self.max_registers else ""))

    def flags(self) -> list[str]:
        out = [f"-DAISP_TUNE_BLOCK={self.threads}", f"-DAISP_TUNE_MIN_BLOCKS={self.min_blocks}"]
        return out + ([f"-maxrregcount={self.max_registers}"] if self.max_registers else [])


def parse_presets(text: str) -> list[Preset]:
    """`"256,256x3,512r64"` → presets; threads a multiple of 32 up to 1024."""
    presets = []
    for item in filter(None, (part.strip() for part in text.split(","))):
        match = _PRESET.fullmatch(item)
        if not match:
            raise PresetError(f"--presets: {item!r} is not THREADS[xMIN_BLOCKS][rMAX_REGISTERS], "
                              f"e.g. 256, 256x3 or 512r64")
        threads, blocks, regs = int(match[1]), int(match[2] or 1), match[3] and int(match[3])
        if threads % 32 or not 32 <= threads <= 1024:
            raise PresetError(f"--presets: {item!r}: threads per block must be a multiple of "
                              f"32 from 32 to 1024")
        if regs is not None and not 16 <= regs <= 255:
            raise PresetError(f"--presets: {item!r}: a register cap is 16 to 255")
        presets.append(Preset(threads, blocks, regs))
    if not presets:
        raise PresetError("--presets: name at least one preset, e.g. 256,512")
    if len({p.name for p in presets}) != len(presets):
        raise PresetError("--presets: a preset is named twice")
    return presets


@dataclass
class PresetResult:
    preset: str
    threads: int = 0
    registers: int = 0
    spill_bytes: int = 0
    blocks_per_sm: int = 0
    median_ms: float | None = None
    verified: str = ""  # "ok" or why not
    error: str = ""  # the build or launch failed

    @property
    def warps_per_sm(self) -> int:
        return self.blocks_per_sm * self.threads // 32


def table_rows(results: list[PresetResult], max_warps: int = 64) -> list[list[str]]:
    """preset, threads, registers, spills, blocks/SM, warps/SM (occupancy), ms, speedup, verify;
    the speedup is over the first preset that was timed."""
    first = next((r.median_ms for r in results if r.median_ms), None)
    rows = []
    for r in results:
        if r.error:
            rows.append([r.preset, "-", "-", "-", "-", "-", "-", "-", f"failed: {r.error}"])
            continue
        speedup = f"{first / r.median_ms:.2f}x" if first and r.median_ms else "-"
        rows.append([r.preset, str(r.threads), str(r.registers),
                     f"{r.spill_bytes} B" if r.spill_bytes else "none", str(r.blocks_per_sm),
                     f"{r.warps_per_sm} ({100 * r.warps_per_sm / max_warps:.0f}%)",
                     f"{r.median_ms:.4f}" if r.median_ms else "-", speedup, r.verified])
    return rows


HEADERS = ["preset", "threads", "regs", "spills", "blocks/SM", "warps/SM", "ms", "speedup", "verify"]


# --- in the child (core.toolchild --occupancy) -------------------------------------------------------
def measure(baseline_path: str, side_path: str, seed: int, presets: list[Preset],
            device: str) -> list[PresetResult]:
    """Each preset's build of the side's kernel: its attributes, its output checked against
    the baseline's, and the verified ones timed together in alternating rounds."""
    import ctypes
    import inspect
    from pathlib import Path

    from core import timing
    from core.benchmark import BenchContext, option
    from core.cuda import load
    from core.benchmark import PairError
    from core.pairfile import load_benchmark, relative
    from core.verify import compare, snapshot

    if not device.startswith("cuda"):
        raise PairError("occupancy tuning times a CUDA kernel: it needs a CUDA GPU")
    baseline, bench = load_benchmark(Path(baseline_path)), load_benchmark(Path(side_path))
    source, query = option(bench, "tuning_source", ""), option(bench, "tuning_query", "")
    if not (source and query and callable(getattr(bench, "run_tuned", None))):
        raise PairError(f"{relative(side_path)}: declares no tuning_source, tuning_query and "
                        f"run_tuned(lib, inputs) (see core/occupancy.py)")
    for b in (baseline, bench):
        b.ctx = BenchContext(seed=seed, device=device)
        b.setup(b.ctx)
    inputs = baseline.make_inputs(seed + 1)
    expected = snapshot(baseline.run(inputs))
    tolerance = option(bench, "tolerance", None)
    here = Path(inspect.getfile(type(bench))).parent
    results, timed = [], {}
    for preset in presets:
        found = PresetResult(preset.name)
        results.append(found)
        try:
            lib = load(here / source, preset.flags())
            values = [ctypes.c_int64(0) for _ in range(4)]
            getattr(lib, query)(*[ctypes.byref(v) for v in values])
            found.threads, found.registers, found.spill_bytes, found.blocks_per_sm = \
                (v.value for v in values)
            check = compare(expected, bench.run_tuned(lib, inputs), tolerance)
        except Exception as exc:  # noqa: BLE001 - one preset's failure is its row's
            found.error = f"{type(exc).__name__}: {exc}"[:300]
            continue
        found.verified = "ok" if check.ok else check.message
        if check.ok:
            timed[preset.name] = lambda lib=lib: bench.run_tuned(lib, inputs)
    if timed:
        measured = timing.interleaved(timed, timing.StopPolicy(), device)
        for found in results:
            samples = measured.samples_ms.get(found.preset)
            if samples:
                found.median_ms = sorted(samples)[len(samples) // 2]
    return results
