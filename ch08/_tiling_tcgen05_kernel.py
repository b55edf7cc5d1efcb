"""A Triton GEMM written for Blackwell's tensor cores (imported lazily: needs triton).

Used by ch08 `tiling_tcgen05`, ch09 `triton_matmul_tcgen05_tma` and ch10 `matmul_tcgen05`.
C[M, N] = A[M, K] @ B[K, N], row-major, fp32 accumulation, stored in C's dtype. The operands
are read through TMA tensor descriptors (`TensorDescriptor`, built on the host per call): one
thread asks the copy engine for a whole BLOCK_M x BLOCK_K tile of A and BLOCK_K x BLOCK_N of B
(`cp.async.bulk.tensor` in PTX), which lands swizzled in shared memory, where the tensor cores
read it. Triton's pipeliner keeps `num_stages` such tiles in flight. On sm_100 `tl.dot` becomes
`tcgen05.mma` with the accumulator in tensor memory (TMEM), read back into registers once, in
the epilogue, before a TMA store of C. With `warp_specialize` the K loop is split into
partitions (one issues the TMA copies, a single warp issues the MMAs, the kernel's own warps
run the epilogue) that hand stages to each other through mbarriers: the structure of CUTLASS's sm100
GEMMs. Programs walk C's tiles in grouped order (GROUP_M tile-rows at a time, as ch09's tuned
kernel does). TMA pads reads past the edge with zeros and clips stores, so M, N and K need not
divide the tiles; the row strides must be multiples of 16 bytes.

`compile_for` compiles the kernel for a GPU that need not be present (Triton's compiler runs
on the CPU): the tests read its PTX for tcgen05 and TMA instructions, and its cubin's register
and stack use. For sm_90 the same source lowers to wgmma with the accumulator in registers;
the pairs that use it require compute capability 10.0, so on Hopper they SKIP, and Hopper's
GEMM kernels are ch09 `triton_matmul`'s (pointer loads, wgmma).
"""
from __future__ import annotations

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

from ch08._tiling_tcgen05_common import TileConfig


@triton.jit
def matmul_tma_kernel(a_desc, b_desc, c_desc, M, N, K,
                      BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr,
                      GROUP_M: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    pid = tl.program_id(0)
    grid_m = tl.cdiv(M, BLOCK_M)
    grid_n = tl.cdiv(N, BLOCK_N)
    per_group = GROUP_M * grid_n
    first_m = (pid // per_group) * GROUP_M
    group_m = min(grid_m - first_m, GROUP_M)  # the last group may be shorter
    off_m = (first_m + (pid % per_group) % group_m) * BLOCK_M
    off_n = ((pid % per_group) // group_m) * BLOCK_N
    acc = tl.zeros((BLOCK_M, BLOCK_N), dtype=tl.float32)  # TMEM on sm_100, registers on sm_90
    for k in tl.range(0, tl.cdiv(K, BLOCK_K), warp_specialize=WARP_SPECIALIZE):
        a = a_desc.load([off_m, k * BLOCK_K])  # TMA: one request per tile
        b = b_desc.load([k * BLOCK_K, off_n])
        acc = tl.dot(a, b, acc)
    c_desc.store([off_m, off_n], acc.to(c_desc.dtype))


def matmul_tma(a: torch.Tensor, b: torch.Tensor, c: torch.Tensor, tile: TileConfig) -> torch.Tensor:
    """c = a @ b with the kernel above at `tile`; returns c."""
    (M, K), (_, N) = a.shape, b.shape
    assert b.shape[0] == K and c.shape == (M, N)
    a_desc = TensorDescriptor.from_tensor(a, [tile.block_m, tile.block_k])
    b_desc = TensorDescriptor.from_tensor(b, [tile.block_k, tile.block_n])
    c_desc = TensorDescriptor.from_tensor(c, [tile.block_m, tile.block_n])
    grid = (triton.cdiv(M, tile.block_m) * triton.cdiv(N, tile.block_n),)
    matmul_tma_kernel[grid](a_desc, b_desc, c_desc, M, N, K, BLOCK_M=tile.block_m,
                            BLOCK_N=tile.block_n, BLOCK_K=tile.block_k, GROUP_M=tile.group_m,
                            WARP_SPECIALIZE=tile.warp_specialize, num_warps=tile.num_warps,
                            num_stages=tile.num_stages)
    return c


def compile_for(capability: int, tile: TileConfig,
                dtype: str = "bf16") -> triton.compiler.CompiledKernel:
    """The kernel at `tile` compiled for compute capability `capability` (100 = sm_100, 90 =
    sm_90), without a GPU: `.asm` holds its "ttgir", "ptx" and "cubin". M, N and K are marked
    divisible by 16, as a launch at the pairs' sizes specializes them."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn, bk = tile.block_m, tile.block_n, tile.block_k
    constexprs = {"BLOCK_M": bm, "BLOCK_N": bn, "BLOCK_K": bk, "GROUP_M": tile.group_m,
                  "WARP_SPECIALIZE": tile.warp_specialize}
    signature = {"a_desc": f"tensordesc<{dtype}[{bm},{bk}]>",
                 "b_desc": f"tensordesc<{dtype}[{bk},{bn}]>",
                 "c_desc": f"tensordesc<{dtype}[{bm},{bn}]>", "M": "i32", "N": "i32", "K": "i32",
                 **dict.fromkeys(constexprs, "constexpr")}
    names = list(matmul_tma_kernel.arg_names)
    attrs = {(names.index(size),): [["tt.divisibility", 16]] for size in ("M", "N", "K")}
    source = ASTSource(matmul_tma_kernel, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": tile.num_warps, "num_stages": tile.num_stages})
