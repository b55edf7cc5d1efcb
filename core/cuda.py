"""Build chapter .cu files into shared libraries with nvcc, cache them, load them with ctypes.

Why not torch.utils.cpp_extension.load_inline? It costs ~50 s per file; nvcc → .so takes
~2 s, and ctypes is all a launcher taking pointers, sizes and a stream needs.

The cache key is a hash of the source, its local includes, the flags and the nvcc version,
so an edit, a new flag or a new toolkit rebuilds and nothing else does. Builds of several
files run in parallel; a per-file lock stops two processes building the same library.

A .cu file may ask for extra nvcc flags on a line of its own:
    // nvcc-flags: -maxrregcount=64
"""
from __future__ import annotations

import ctypes
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
from concurrent.futures import ThreadPoolExecutor
from functools import lru_cache
from pathlib import Path
from typing import Any, Iterable

from filelock import FileLock  # a dependency of torch: the same lock on every platform

from core import REPO_ROOT
INCLUDE_DIR = Path(__file__).resolve().parent / "include"
BASE_FLAGS = ("-O3", "-lineinfo", "-std=c++17", "-shared", "-Xcompiler", "-fPIC")
_INCLUDE_RE = re.compile(r'^\s*#\s*include\s+"([^"]+)"', re.MULTILINE)
_FLAGS_RE = re.compile(r"^\s*//\s*nvcc-flags:(.*)$", re.MULTILINE)


class CudaBuildError(RuntimeError):
    """nvcc failed or is missing; the message names the file and carries nvcc's output."""


def build_dir() -> Path:
    return Path(os.environ.get("AISP_BUILD_DIR", REPO_ROOT / "build" / "cuda"))


def nvcc_path() -> str | None:
    found = shutil.which("nvcc")
    if found:
        return found
    for home in (os.environ.get("CUDA_HOME"), "/usr/local/cuda"):
        if home and (Path(home) / "bin" / "nvcc").exists():
            return str(Path(home) / "bin" / "nvcc")
    return None


@lru_cache(maxsize=1)
def nvcc_version() -> str:
    nvcc = nvcc_path()
    if nvcc is None:
        raise CudaBuildError("nvcc not found: install the CUDA toolkit or set CUDA_HOME")
    out = subprocess.run([nvcc, "--version"], capture_output=True, text=True, check=True).stdout
    return out.strip().splitlines()[-1]


def arch_flags(capability: tuple[int, int]) -> list[str]:
    """nvcc -gencode flags for a device of this compute capability.

    Hopper (9.0) and Blackwell (10.x) get their arch-specific targets (sm_90a, sm_100a),
    which wgmma/TMA/tcgen05 need; anything else gets its SASS plus PTX to JIT from.
    """
    major, minor = capability
    cc = f"{major}{minor}"
    if (major, minor) in ((9, 0), (10, 0), (10, 3)):
        return [f"-gencode=arch=compute_{cc}a,code=sm_{cc}a"]
    return [f"-gencode=arch=compute_{cc},code=[sm_{cc},compute_{cc}]"]


def device_capability() -> tuple[int, int]:
    """Capability to build for: AISP_CUDA_ARCH (e.g. "90"), else the current GPU, else 9.0."""
    env = os.environ.get("AISP_CUDA_ARCH")
    if env:
        digits = env.rstrip("a")
        return int(digits[:-1]), int(digits[-1])
    try:
        import torch

        if torch.cuda.is_available():
            return torch.cuda.get_device_capability()
    except ImportError:
        pass
    return (9, 0)


def _local_includes(path: Path, seen: set[Path] | None = None) -> list[Path]:
    """Quoted includes reachable from `path`, resolved next to the file or in core/include."""
    seen = set() if seen is None else seen
    found: list[Path] = []
    for name in _INCLUDE_RE.findall(path.read_text()):
        for base in (path.parent, INCLUDE_DIR):
            candidate = (base / name).resolve()
            if candidate.exists() and candidate not in seen:
                seen.add(candidate)
                found.append(candidate)
                found.extend(_local_includes(candidate, seen))
                break
    return found


def file_flags(path: Path) -> list[str]:
    return [flag for line in _FLAGS_RE.findall(path.read_text()) for flag in line.split()]


def build_flags(path: Path, capability: tuple[int, int]) -> list[str]:
    return [*BASE_FLAGS, *arch_flags(capability), f"-I{INCLUDE_DIR}", *file_flags(path)]


def cache_key(path: Path, flags: list[str]) -> str:
    digest = hashlib.sha256()
    for part in (path, *_local_includes(path)):
        digest.update(part.name.encode())
        digest.update(part.read_bytes())
    digest.update(" ".join(flags).encode())
    digest.update(nvcc_version().encode())
    return digest.hexdigest()[:16]


def build(path: str | Path, capability: tuple[int, int] | None = None,
          extra_flags: Iterable[str] = ()) -> Path:
    """Compile `path` into a cached shared library and return the library's path.
    `extra_flags` (e.g. `-DAISP_TUNE_BLOCK=256`, `-maxrregcount=64`) build a variant of it,
    cached apart (`tools occupancy-tuning`)."""
    path = Path(path).resolve()
    if not path.exists():
        raise CudaBuildError(f"{path}: no such CUDA source file")
    nvcc = nvcc_path()
    if nvcc is None:
        raise CudaBuildError(f"{path}: nvcc not found; install the CUDA toolkit or set CUDA_HOME")
    flags = [*build_flags(path, capability or device_capability()), *extra_flags]
    out_dir = build_dir()
    out_dir.mkdir(parents=True, exist_ok=True)
    target = out_dir / f"{path.stem}-{cache_key(path, flags)}.so"
    if target.exists():
        return target
    with FileLock(out_dir / f"{target.stem}.lock"):  # another process may be building it
        if target.exists():
            return target
        with tempfile.TemporaryDirectory(dir=out_dir) as tmp:
            partial = Path(tmp) / target.name
            proc = subprocess.run([nvcc, *flags, "-o", str(partial), str(path)],
                                  capture_output=True, text=True)
            if proc.returncode != 0:
                raise CudaBuildError(
                    f"{path}: nvcc failed (exit {proc.returncode})\n"
                    f"command: nvcc {' '.join(flags)} {path.name}\n{proc.stderr.strip()}")
            os.replace(partial, target)  # atomic: readers never see a half-written library
    return target


def build_many(paths: Iterable[str | Path], capability: tuple[int, int] | None = None,
               jobs: int | None = None) -> dict[Path, Path | CudaBuildError]:
    """Build several files in parallel; failures are returned, not raised."""
    paths = [Path(p).resolve() for p in paths]
    capability = capability or device_capability()

    def one(path: Path) -> Path | CudaBuildError:
        try:
            return build(path, capability)
        except CudaBuildError as exc:
            return exc

    with ThreadPoolExecutor(max_workers=jobs or min(16, os.cpu_count() or 1)) as pool:
        return dict(zip(paths, pool.map(one, paths)))


class CudaLaunchError(RuntimeError):
    pass


class CudaLibrary:
    """A loaded .so whose launchers are called like Python functions.

    `lib.launch_copy(x, y, n)` passes tensors as device pointers, ints as int64, floats as
    float32, and appends torch's current CUDA stream as the last argument. A non-zero
    return code raises CudaLaunchError with CUDA's message.
    """

    def __init__(self, so_path: Path, source: Path):
        self._dll = ctypes.CDLL(str(so_path))
        self._dll.aisp_error_string.restype = ctypes.c_char_p
        self.source = source

    def __getattr__(self, name: str) -> Any:
        func = getattr(self._dll, name)
        func.restype = ctypes.c_int

        def call(*args: Any) -> None:
            import torch

            stream = ctypes.c_void_p(torch.cuda.current_stream().cuda_stream)
            code = func(*[_to_c(a) for a in args], stream)
            if code != 0:
                message = self._dll.aisp_error_string(code).decode()
                raise CudaLaunchError(f"{self.source.name}:{name} failed: {message} ({code})")

        call.__name__ = name
        return call


def _to_c(value: Any) -> Any:
    if hasattr(value, "data_ptr"):
        return ctypes.c_void_p(value.data_ptr())
    if isinstance(value, bool):
        return ctypes.c_int(int(value))
    if isinstance(value, int):
        return ctypes.c_int64(value)
    if isinstance(value, float):
        return ctypes.c_float(value)
    if value is None:
        return ctypes.c_void_p(None)
    return value  # already a ctypes value (e.g. a struct passed by value)


@lru_cache(maxsize=None)
def _load_cached(path: Path, extra_flags: tuple[str, ...]) -> CudaLibrary:
    return CudaLibrary(build(path, extra_flags=extra_flags), path)


def load(path: str | Path, extra_flags: Iterable[str] = ()) -> CudaLibrary:
    """Build (if needed) and load a .cu file; pass `Path(__file__).with_name("x.cu")`.
    With `extra_flags`, a variant of it built with those nvcc flags (loaded beside the others)."""
    return _load_cached(Path(path).resolve(), tuple(extra_flags))


def sources(root: Path = REPO_ROOT) -> list[Path]:
    """Every chapter .cu file in the repo, for `make cuda` and the compile test."""
    return sorted(p for p in root.glob("ch[0-9][0-9]/**/*.cu"))
