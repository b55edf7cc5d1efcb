"""`aisp tools inspect-compiled TARGET`: what Inductor generated for one side of a pair.

The side is set up and called once in a fresh child process whose Inductor and Triton caches
start empty (core.compile_time.fresh_cache_env), so everything in them afterwards is what
this side compiled. The output-code modules (Python files with the generated Triton or C++
kernels and the `call()` that launches them) are copied to the output directory, and their
kernels listed: a reader sees how many kernels torch.compile made of the model, and their
fused names (`triton_per_fused__to_copy_add_mean_mul_pow_rsqrt_0` ...).
"""
from __future__ import annotations

import re
import shutil
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from core.compile_time import fresh_cache_env

# Inductor's output code defines each kernel with async_compile.triton('name', ...) on a GPU
# and async_compile.cpp_pybinding([...], '''...''') (named cpp_fused_*) on a CPU.
_KERNEL = re.compile(r"async_compile\.triton\(\s*'(\w+)'|^\s*(cpp_fused_\w+)\s*=\s*async_compile",
                     re.MULTILINE)


@dataclass
class CompiledCode:
    """The output code of one side: files copied to `out_dir`, kernels by file."""

    out_dir: Path
    kernels: dict[str, list[str]] = field(default_factory=dict)  # file name -> kernel names

    @property
    def kernel_count(self) -> int:
        return sum(len(names) for names in self.kernels.values())


def collect(cache_dir: Path, out_dir: Path) -> CompiledCode:
    """Copy the output-code modules found under an Inductor cache dir and list their kernels."""
    out_dir.mkdir(parents=True, exist_ok=True)
    found = CompiledCode(out_dir)
    for path in sorted(cache_dir.rglob("*.py")):
        text = path.read_text(errors="replace")
        if "async_compile" not in text or "def call(" not in text:
            continue  # a kernel's own module or a helper, not an output-code module
        names = [a or b for a, b in _KERNEL.findall(text)]
        shutil.copy2(path, out_dir / path.name)
        found.kernels[path.name] = names
    return found


def fresh_caches() -> tuple[tempfile.TemporaryDirectory, dict[str, str]]:
    """A temporary directory and the environment pointing the compiler caches into it."""
    tmp = tempfile.TemporaryDirectory(prefix="aisp-inspect-")
    return tmp, fresh_cache_env(Path(tmp.name))
