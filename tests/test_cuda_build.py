"""CUDA builds (core.cuda): every chapter .cu compiles for sm_90a; cache, errors, flags.

nvcc compiles without a GPU, so these run on a CPU-only machine with the toolkit; they skip
(with the reason) only where nvcc is absent.
"""
from __future__ import annotations

import time

import pytest

from core import cuda
from core.cuda import CudaBuildError, arch_flags, build, build_flags, build_many, cache_key

HOPPER = (9, 0)
CHAPTER_SOURCES = cuda.sources()

needs_nvcc = pytest.mark.skipif(cuda.nvcc_path() is None, reason="nvcc (CUDA toolkit) not found")

GOOD_CU = r'''
#include "aisp.cuh"
#include "local_helper.cuh"

__global__ void add_one(float* x, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) x[i] = helper_add(x[i], 1.0f);
}

extern "C" AISP_API int launch_add_one(float* x, int64_t n, cudaStream_t stream) {
  add_one<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(x, n);
  return AISP_LAUNCHED();
}
'''
HELPER_CUH = "#pragma once\n__device__ inline float helper_add(float a, float b) { return a + b; }\n"
BAD_CU = '#include "aisp.cuh"\n__global__ void broken(float* x) { x[0] = undeclared_name + ; }\n'


@pytest.fixture(scope="module")
def shared_build_dir(tmp_path_factory):
    return tmp_path_factory.mktemp("cuda_build")


@pytest.fixture
def build_env(shared_build_dir, monkeypatch):
    monkeypatch.setenv("AISP_BUILD_DIR", str(shared_build_dir))
    return shared_build_dir


@pytest.fixture
def good_source(tmp_path):
    (tmp_path / "local_helper.cuh").write_text(HELPER_CUH)
    path = tmp_path / "add_one.cu"
    path.write_text(GOOD_CU)
    return path


@pytest.fixture(scope="module")
def chapter_builds(shared_build_dir):
    """Every chapter .cu built once, in parallel (as `make cuda` and the runner do)."""
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("AISP_BUILD_DIR", str(shared_build_dir))
        return build_many(CHAPTER_SOURCES, HOPPER)


@needs_nvcc
@pytest.mark.parametrize("source", CHAPTER_SOURCES,
                         ids=[f"{p.parent.name}/{p.name}" for p in CHAPTER_SOURCES])
def test_chapter_source_compiles_for_sm90a(source, chapter_builds, build_env):
    library = chapter_builds[source.resolve()]
    if isinstance(library, Exception):
        pytest.fail(str(library), pytrace=False)
    assert library.exists() and library.suffix == ".so"
    assert library.parent == build_env
    assert library.name.startswith(source.stem + "-")
    assert build(source, HOPPER) == library  # built once: now a cache hit


def test_arch_flags():
    assert arch_flags((9, 0)) == ["-gencode=arch=compute_90a,code=sm_90a"]
    assert arch_flags((10, 0)) == ["-gencode=arch=compute_100a,code=sm_100a"]
    flags = arch_flags((8, 0))
    assert flags == ["-gencode=arch=compute_80,code=[sm_80,compute_80]"]
    assert "sm_80" in flags[0] and "compute_80]" in flags[0]  # SASS plus PTX to JIT from
    assert arch_flags((8, 9)) == ["-gencode=arch=compute_89,code=[sm_89,compute_89]"]


@pytest.mark.parametrize("env, capability", [("90", (9, 0)), ("90a", (9, 0)), ("100a", (10, 0)),
                                             ("80", (8, 0)), ("120", (12, 0))])
def test_device_capability_from_env(monkeypatch, env, capability):
    monkeypatch.setenv("AISP_CUDA_ARCH", env)
    assert cuda.device_capability() == capability


def test_file_flags_and_build_flags(tmp_path):
    path = tmp_path / "k.cu"
    path.write_text("// nvcc-flags: -maxrregcount=64 --use_fast_math\n__global__ void k() {}\n")
    flags = build_flags(path, HOPPER)
    assert flags[-2:] == ["-maxrregcount=64", "--use_fast_math"]
    assert "-O3" in flags and "-lineinfo" in flags and f"-I{cuda.INCLUDE_DIR}" in flags
    assert "-gencode=arch=compute_90a,code=sm_90a" in flags


@needs_nvcc
def test_cache_key_tracks_source_includes_and_flags(good_source):
    flags = build_flags(good_source, HOPPER)
    key = cache_key(good_source, flags)
    assert key == cache_key(good_source, list(flags))  # deterministic
    assert cache_key(good_source, build_flags(good_source, (8, 0))) != key
    assert cache_key(good_source, [*flags, "-DEXTRA=1"]) != key
    good_source.write_text(GOOD_CU + "\n// an edit\n")
    edited = cache_key(good_source, flags)
    assert edited != key
    (good_source.parent / "local_helper.cuh").write_text(HELPER_CUH + "// helper edit\n")
    assert cache_key(good_source, flags) != edited  # local includes are part of the key


@needs_nvcc
def test_second_build_is_a_cache_hit(good_source, tmp_path, monkeypatch):
    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path / "fresh_build"))
    first = build(good_source, HOPPER)
    assert first.exists()
    mtime = first.stat().st_mtime_ns

    def no_compiling(*args, **kwargs):
        raise AssertionError(f"nvcc ran again: {args}")

    monkeypatch.setattr(cuda.subprocess, "run", no_compiling)  # nvcc_version is memoized
    started = time.perf_counter()
    second = build(good_source, HOPPER)
    assert second == first and first.stat().st_mtime_ns == mtime
    assert time.perf_counter() - started < 0.5
    leftovers = [p.name for p in first.parent.iterdir() if not p.name.endswith((".so", ".lock"))]
    assert leftovers == []  # the temporary build dir is gone


@needs_nvcc
def test_edit_rebuilds_to_a_new_library(good_source, build_env):
    first = build(good_source, HOPPER)
    good_source.write_text(GOOD_CU.replace("1.0f", "2.0f"))
    second = build(good_source, HOPPER)
    assert second != first and second.exists() and first.exists()


@needs_nvcc
def test_syntax_error_names_file_and_shows_nvcc_output(tmp_path, build_env):
    bad = tmp_path / "broken_kernel.cu"
    bad.write_text(BAD_CU)
    with pytest.raises(CudaBuildError) as err:
        build(bad, HOPPER)
    message = str(err.value)
    assert str(bad) in message and "broken_kernel.cu" in message
    assert "nvcc failed" in message
    assert "error" in message and "undeclared_name" in message  # nvcc's own diagnostic
    assert not list(build_env.glob("broken_kernel-*.so"))


@needs_nvcc
def test_build_many_returns_failures(tmp_path, good_source, build_env):
    bad = tmp_path / "broken_kernel.cu"
    bad.write_text(BAD_CU)
    built = build_many([good_source, bad], HOPPER, jobs=2)
    assert built[good_source.resolve()].exists()
    assert isinstance(built[bad.resolve()], CudaBuildError)


def test_missing_source_is_a_build_error(tmp_path):
    with pytest.raises(CudaBuildError, match="no such CUDA source"):
        build(tmp_path / "nope.cu", HOPPER)


def test_missing_nvcc_is_a_build_error(good_source, monkeypatch):
    monkeypatch.setattr(cuda, "nvcc_path", lambda: None)
    with pytest.raises(CudaBuildError, match="nvcc not found"):
        build(good_source, HOPPER)


def test_sources_finds_chapter_cu_files(tmp_path):
    (tmp_path / "ch95" / "sub").mkdir(parents=True)
    (tmp_path / "ch95" / "a.cu").write_text("")
    (tmp_path / "ch95" / "sub" / "b.cu").write_text("")
    (tmp_path / "build").mkdir()
    (tmp_path / "build" / "c.cu").write_text("")
    assert [p.relative_to(tmp_path).as_posix() for p in cuda.sources(tmp_path)] == [
        "ch95/a.cu", "ch95/sub/b.cu"]
