"""Shared by the `grace_coherent_memory` pair (Grace superchips only): a kernel consumes 256 MiB
that live in the CPU's memory, once per step, over NVLink-C2C.

On a Grace Blackwell (GB200, GB300) or Grace Hopper (GH200) superchip the GPU is attached to
the Grace CPU by NVLink-C2C, not PCIe: ~450 GB/s each way instead of PCIe Gen5's ~55 measured,
and cache-coherent, so the GPU reads host memory through the CPU's own page tables (address
translation services) with ordinary loads. Systems built on it keep what does not fit in HBM
(offloaded weights, optimizer state, KV-cache blocks) in the CPU's LPDDR5X and stream it in.

The workload is ch02 `zero_copy`'s kernel (zero_copy.cu: out = x · 0.5 + 1, one 16-byte load
per thread) at the size where, on PCIe, zero-copy loses: 256 MiB of fresh host data per step,
read once. Both sides take the same pinned host buffer:
- baseline: `cudaMemcpyAsync` host → device (a DMA by the copy engine), then the kernel on the
  device copy: the bytes cross the link, are written to HBM and read back.
- optimized: the kernel reads the host buffer itself, so the HBM round trip and the
  serialization of copy then kernel disappear, if every SM's loads keep C2C as busy as the
  copy engine does.
On the H100 host here (PCIe Gen5) `python -m ch02.sweep_zero_copy` measured the zero-copy
side 0.96x at this size (the link, not the copy's fixed cost, sets the time); the pair asks
whether C2C reverses that, and has not run on a Grace machine yet. The buffer stays pinned
so that the baseline's copy is a DMA, its fastest form; over C2C the kernel could read
pageable memory as well, which PCIe GPUs cannot do without the driver staging it (ch02
`memory_transfer`).

Requirements: compute capability 9.0 or newer (Hopper or Blackwell), and `unavailable()` asks
the host: an aarch64 CPU whose GPU reads pageable memory through the host's page tables
(CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES, which the CUDA driver sets
only where the GPU translates CPU addresses itself, over NVLink-C2C). An x86 host, or an Arm
server with a PCIe GPU, SKIPs with the reason: the Hopper pairs beside it, `zero_copy` and
`memory_transfer`, show the PCIe side of the same question.
"""
from __future__ import annotations

import ctypes
import platform

from ch02._zero_copy_common import ZeroCopyBench
from core.benchmark import Requirements

GRACE_FLOATS = 64 * 1024 * 1024  # 256 MiB of fp32, the largest size of the zero_copy sweep
# cuda.h: CUdevice_attribute
PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES = 100


def device_attribute(attribute: int, ordinal: int) -> int:
    """A CUDA driver device attribute (cuDeviceGetAttribute through libcuda), or -1 unknown."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return -1
    device, value = ctypes.c_int(), ctypes.c_int()
    if (libcuda.cuInit(0) or libcuda.cuDeviceGet(ctypes.byref(device), ordinal)
            or libcuda.cuDeviceGetAttribute(ctypes.byref(value), attribute, device)):
        return -1
    return value.value


def c2c_unavailable(machine: str | None = None,
                    uses_host_page_tables: int | None = None) -> str | None:
    """Why this host cannot show NVLink-C2C (None on a Grace superchip). The arguments stand
    in for the host's answers (tests); left out, they are asked of this machine."""
    machine = machine or platform.machine()
    want = ("needs a Grace superchip (GB200, GB300 or GH200: an aarch64 Grace CPU with the GPU "
            "on NVLink-C2C, reading host memory through the CPU's page tables)")
    if machine not in ("aarch64", "arm64"):
        return (f"{want}; this host is {machine}, so its GPU is on PCIe "
                f"(ch02 zero_copy and memory_transfer measure that link)")
    if uses_host_page_tables is None:
        import torch

        uses_host_page_tables = device_attribute(PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES,
                                                 torch.cuda.current_device())
    if uses_host_page_tables != 1:
        return (f"{want}; this aarch64 host's GPU does not use the host's page tables "
                f"(driver attribute {uses_host_page_tables}), so it is not on NVLink-C2C")
    return None


class GraceCoherentBench(ZeroCopyBench):
    only_on = "Grace Hopper or Grace Blackwell (a GPU on NVLink-C2C)"
    floats = GRACE_FLOATS
    timing_mode = "hot"  # ~0.5 ms a side at C2C rates: no graph replay needed
    requires = Requirements(nvcc=True, min_compute_capability=(9, 0))

    def unavailable(self) -> str | None:
        return c2c_unavailable()
