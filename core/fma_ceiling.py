"""The fp32 CUDA-core ceiling: a Triton kernel that does nothing but fused multiply-adds.

cuBLAS's fp32 GEMM (`matmul_fp32_tflops`) is not the fp32 roof: on an H100 it sustains ~52
TFLOP/s, and ch08's loop-unrolled polynomial (pure FMAs in registers) ran 52.7, 102% of it.
Here every element runs CHAINS independent chains of ITERS dependent FMAs in registers
(independent chains hide the FMA's latency inside a thread, many programs hide it across
warps), reading and writing one float: compute-bound by ~4000 FLOP per byte.
"""
from __future__ import annotations

from typing import Callable

import torch
import triton
import triton.language as tl

ITERS = 1024
CHAINS = 4
BLOCK = 1024


@triton.jit
def fma_chains(x_ptr, out_ptr, iters: tl.constexpr, BLOCK: tl.constexpr):
    offsets = tl.program_id(0) * BLOCK + tl.arange(0, BLOCK)
    a = tl.load(x_ptr + offsets)
    b, c, d = a + 1.0, a + 2.0, a + 3.0
    for _ in range(iters):  # 4 chains (CHAINS) of one FMA each per iteration
        a = tl.fma(a, 0.999, 0.001)
        b = tl.fma(b, 0.999, 0.001)
        c = tl.fma(c, 0.999, 0.001)
        d = tl.fma(d, 0.999, 0.001)
    tl.store(out_ptr + offsets, a + b + c + d)


def fma_call(x: torch.Tensor, out: torch.Tensor, iters: int = ITERS) -> Callable[[], object]:
    """One launch over x (a multiple of BLOCK floats) into out; its FLOPs: flops(x, iters)."""
    grid = (x.numel() // BLOCK,)
    return lambda: fma_chains[grid](x, out, iters, BLOCK)


def flops(x: torch.Tensor, iters: int = ITERS) -> int:
    return 2 * CHAINS * iters * x.numel()


def reference(x: torch.Tensor, iters: int) -> torch.Tensor:
    """What fma_chains computes, in float64 (tests check the kernel does every FMA it counts)."""
    chains = [x.double() + k for k in range(CHAINS)]
    for _ in range(iters):
        chains = [c * 0.999 + 0.001 for c in chains]
    return sum(chains)
