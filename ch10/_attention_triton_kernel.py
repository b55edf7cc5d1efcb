"""A hand-written Hopper attention forward in Triton (imported lazily: needs triton).

O = softmax(Q Kᵀ / √d) V for Q, K, V of shape [B, H, S, D] (contiguous, bf16 in the pairs;
fp16 and fp32 work too), causal or not. One program owns BLOCK_M query rows of one
(batch, head) and streams that head's keys and values past them, BLOCK_N rows at a time,
as FlashAttention does; what makes it a Hopper kernel is how each step is carried out:

1. TMA loads. Q, K, V and O are read and written through tensor descriptors built on the
   host (`TensorDescriptor`, over the [B·H·S, D] view of each tensor): one thread asks the
   copy engine for a whole BLOCK_N x D tile (`cp.async.bulk.tensor` in PTX), which lands
   in shared memory already swizzled the way the tensor cores read it, and signals an
   mbarrier when its bytes are in. No thread computes an address or holds the tile in
   registers on the way.
2. wgmma. Both matmuls are `tl.dot`: S = Q Kᵀ with both operands in shared memory, and
   O += P V with P from registers and V from shared memory. On sm_90 Triton lowers them to
   `wgmma.mma_async`, a warpgroup-wide (4 warps) asynchronous MMA; fp32 accumulators in
   registers, 64 rows per warpgroup per instruction.
3. A producer/consumer pipeline over a ring of `num_stages` K/V buffers, each with an
   mbarrier the TMA copy completes: the copies for the next tiles are in flight while the
   current one is computed. Two builds of the same loop are in the autotune list:
   - software-pipelined (8 warps): the same warps issue the copies `num_stages - 1` tiles
     ahead, then wait on the current tile's mbarrier and compute;
   - warp-specialized (`tl.range(..., warp_specialize=True)`, 4 warps per partition):
     Triton's Hopper pass splits the loop into a producer warpgroup that only issues TMA
     copies into free slots, and consumer warpgroups that wait on a slot's mbarrier, run
     the MMAs and the softmax and hand the slot back; `setmaxnreg` moves registers from
     the producer, which needs few, to the consumers. FlashAttention-3's structure.
   Which one the installed Triton compiles, and which is faster, is the tuner's question
   (see the configs below).
4. Online softmax. The running row maximum m and row sum l are kept in fp32 registers,
   rescaled when a new tile raises the maximum, so the S x S scores never leave the chip.
   The exponentials are `exp2`, with 1/√d and log2(e) folded into one scale applied to the
   scores: exp((s - m)/√d) = 2^(s·c - m·c) with c = log2(e)/√d, one FMA per score before
   the MUFU.EX2 instruction, instead of a multiply, a subtract and a natural exp.
5. bf16 out. P is rounded to the inputs' dtype for the second MMA (the tensor cores take
   bf16 operands); O is divided by l once, at the end, and rounded to bf16 on the way out
   through a TMA store.

Causal: key tiles wholly in a query block's future are never loaded; the tiles wholly in
its past run in one loop without mask arithmetic, the diagonal block's in a second loop with
the mask. Programs take query blocks from the bottom of the matrix up (the longest rows
first), so the short ones fill the tail of the launch. The causal pass leaves warp
specialization off: Triton's own attention tutorial enables it on Hopper for the
non-causal forward only, and the two-loop causal kernel was not tried with it.

Sizes: S must be a multiple of BLOCK_M and BLOCK_N (the [B·H·S, D] view runs one head's rows
into the next one's, so a tile may not hang past the end of its head); D a power of two
from 16 to 256 (one tile spans the head dimension).
"""
from __future__ import annotations

import math
from typing import Callable

import torch
import triton
import triton.language as tl
from triton.tools.tensor_descriptor import TensorDescriptor

LOG2E = 1.4426950408889634  # log2(e): e^x = 2^(x·log2 e)


@triton.jit
def _attend_tiles(acc, l_i, m_i, q, k_desc, v_desc, head_row, start_m, lo, hi, qk_scale,
                  BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr, MASK_DIAGONAL: tl.constexpr,
                  WARP_SPECIALIZE: tl.constexpr):
    """Fold key/value tiles [lo, hi) of one head into the running (acc, l_i, m_i)."""
    rows = start_m + tl.arange(0, BLOCK_M)
    for start_n in tl.range(lo, hi, BLOCK_N, warp_specialize=WARP_SPECIALIZE):
        start_n = tl.multiple_of(start_n, BLOCK_N)
        # TMA: one request for the whole BLOCK_N x D tile of K, into a pipeline stage
        k = k_desc.load([head_row + start_n, 0])
        # wgmma: scores of BLOCK_M queries against BLOCK_N keys, fp32; K's tile is read
        # transposed straight from shared memory (a descriptor flag, not a copy)
        s = tl.dot(q, k.T)
        if MASK_DIAGONAL:
            # only the diagonal tile: key j is in query row r's future when j > r. Every
            # row keeps at least key start_m (the first tile of this loop), so no row's
            # maximum stays -inf and 2^(-inf - m) below is a clean 0.
            keys = start_n + tl.arange(0, BLOCK_N)
            s = tl.where(rows[:, None] >= keys[None, :], s, float("-inf"))
        # online softmax, in base 2 with the 1/sqrt(d) folded into qk_scale: the new row
        # maximum (in scaled units), this tile's probabilities relative to it, and the
        # factor alpha that rescales everything accumulated against the old maximum
        m_new = tl.maximum(m_i, tl.max(s, 1) * qk_scale)
        p = tl.math.exp2(s * qk_scale - m_new[:, None])  # one FMA + MUFU.EX2 per score
        alpha = tl.math.exp2(m_i - m_new)
        acc = acc * alpha[:, None]
        v = v_desc.load([head_row + start_n, 0])
        # wgmma: P from registers (rounded to bf16, the only rounding before the output),
        # V from shared memory, accumulated in fp32 on top of the rescaled acc
        acc = tl.dot(p.to(v.dtype), v, acc)
        # updated last, as Triton's tutorial does: fewer values live across the MMAs
        l_i = l_i * alpha + tl.sum(p, 1)
        m_i = m_new
    return acc, l_i, m_i


@triton.jit
def attention_fwd_kernel(q_desc, k_desc, v_desc, o_desc, qk_scale, seq_len,
                         HEAD_DIM: tl.constexpr, BLOCK_M: tl.constexpr, BLOCK_N: tl.constexpr,
                         CAUSAL: tl.constexpr, WARP_SPECIALIZE: tl.constexpr):
    # grid: (query blocks, B·H). Programs launch with axis 0 fastest, so the programs
    # running together share one head's K and V (2 MiB at S = 4096, D = 128) in L2.
    block_m = tl.program_id(0)
    if CAUSAL:
        block_m = tl.num_programs(0) - 1 - block_m  # longest rows first
    start_m = block_m * BLOCK_M
    head_row = tl.program_id(1) * seq_len  # this head's first row in the [B·H·S, D] view

    # Q's tile stays in shared memory for the whole loop (wgmma reads it from there)
    q = q_desc.load([head_row + start_m, 0])
    m_i = tl.full([BLOCK_M], float("-inf"), dtype=tl.float32)  # running max, scaled units
    l_i = tl.zeros([BLOCK_M], dtype=tl.float32)  # running sum of 2^(s·c - m)
    acc = tl.zeros([BLOCK_M, HEAD_DIM], dtype=tl.float32)  # unnormalized O, fp32

    if CAUSAL:
        # the tiles left of the diagonal block, wholly in these rows' past: no mask needed
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q, k_desc, v_desc, head_row, start_m,
                                      0, start_m, qk_scale, BLOCK_M, BLOCK_N, False,
                                      WARP_SPECIALIZE)
        # the diagonal block's BLOCK_M keys, masked; the tiles to its right never load
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q, k_desc, v_desc, head_row, start_m,
                                      start_m, start_m + BLOCK_M, qk_scale, BLOCK_M, BLOCK_N,
                                      True, WARP_SPECIALIZE)
    else:
        acc, l_i, m_i = _attend_tiles(acc, l_i, m_i, q, k_desc, v_desc, head_row, start_m,
                                      0, seq_len, qk_scale, BLOCK_M, BLOCK_N, False,
                                      WARP_SPECIALIZE)

    # normalize once, round to the output dtype, TMA store (clipped to the tensor's bounds)
    acc = acc / l_i[:, None]
    o_desc.store([head_row + start_m, 0], acc.to(o_desc.dtype))


# --- launch configurations -------------------------------------------------------------------
# Chosen for H100/H200 at head_dim 128 from the shape of FlashAttention-3's forward; the
# autotuner times all that compile on the first call for a shape (README: the H200 sweep).
# - BLOCK_M 128 with 8 warps, software-pipelined: two warpgroups of 64 query rows each, the
#   height of one wgmma. The fp32 accumulator (128 x 128) and one score tile (128 x BLOCK_N)
#   fit in registers: ptxas gives 188 per thread at BLOCK_N 128 and 138 at 64, no spills
#   (Triton 3.9, sm_90; tests/test_ch10_attention_triton.py).
# - BLOCK_N 128 (FA3's tile) halves the loop trips and the softmax bookkeeping per key; 64
#   leaves more registers and shared memory for the ring.
# - num_stages 2-3: K and V tiles are 16 KiB each at BLOCK_N 64, 32 KiB at 128, plus Q's
#   32 KiB; three 128-key stages take 224 KiB of the 227 KiB an SM offers.
# - warp-specialized, 4 warps per partition: Triton's Hopper pass is meant to turn the loop
#   into a TMA producer warpgroup and two consumer warpgroups of 64 rows each (FA3's layout,
#   12 warps). Triton 3.9 cannot compile it for sm_90 (its pass splits Q's tile in two but
#   not Q's TMA descriptor); Triton 3.6 is untried. A config the installed Triton cannot
#   compile is dropped before timing (`_compiles`), so these cost a failed compile at most.
def _config(block_n: int, stages: int, warps: int = 8, warp_specialize: bool = False,
            block_m: int = 128) -> triton.Config:
    return triton.Config({"BLOCK_M": block_m, "BLOCK_N": block_n, "WARP_SPECIALIZE": warp_specialize},
                         num_warps=warps, num_stages=stages, pre_hook=_set_block_shapes)


def _set_block_shapes(nargs: dict) -> None:
    """Autotune pre-hook: the TMA box is part of each descriptor, so it follows the config."""
    bm, bn, d = nargs["BLOCK_M"], nargs["BLOCK_N"], nargs["HEAD_DIM"]
    nargs["q_desc"].block_shape = [bm, d]
    nargs["k_desc"].block_shape = [bn, d]
    nargs["v_desc"].block_shape = [bn, d]
    nargs["o_desc"].block_shape = [bm, d]


# - BLOCK_M 64 with 4 warps (one warpgroup, one wgmma height): twice the programs, half the
#   registers and shared memory each, so two programs can share an SM and one's prologue and
#   epilogue hide behind the other's loop; and a four-stage ring at BLOCK_N 64.
# On an H200 (Triton 3.6, `python -m ch10.sweep_attention_triton`) BLOCK_M 64 / BLOCK_N 64 /
# 3 stages is best non-causal at 4096 and BLOCK_M 128 / BLOCK_N 128 / 3 stages causal at 32768.
CONFIGS = [_config(128, 2), _config(128, 3), _config(64, 2), _config(64, 3), _config(64, 4),
           _config(64, 3, warps=4, block_m=64), _config(64, 4, warps=4, block_m=64),
           _config(128, 2, warps=4, block_m=64), _config(128, 3, warps=4, block_m=64),
           _config(128, 2, warps=4, warp_specialize=True),
           _config(64, 2, warps=4, warp_specialize=True)]

# config -> why the installed Triton could not compile it (filled by `_compiles`; a debugger
# reads it beside the autotuner's `best_config`)
DROPPED: dict[str, str] = {}


def _compiles(config: triton.Config, args: dict) -> bool:
    """Compile `config` for the current GPU without launching it (the compiled kernel is
    cached, so the autotuner's own launch reuses it); False, with the reason kept in DROPPED,
    where the compiler fails. Triton's autotuner itself skips only configs that run out of
    shared memory or registers: a failing compiler pass would abort the whole tuning run."""
    bm, bn, d = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"], args["HEAD_DIM"]
    descs = [TensorDescriptor(args[name].base, args[name].shape, args[name].strides, [rows, d])
             for name, rows in (("q_desc", bm), ("k_desc", bn), ("v_desc", bn), ("o_desc", bm))]
    try:
        attention_fwd_kernel.warmup(*descs, args["qk_scale"], args["seq_len"], HEAD_DIM=d,
                                    CAUSAL=args["CAUSAL"], **config.kwargs,
                                    num_warps=config.num_warps, num_stages=config.num_stages,
                                    grid=(1,))
    except Exception as err:  # noqa: BLE001 - any compiler failure drops the config
        DROPPED[str(config)] = f"{type(err).__name__}: {str(err)[-300:]}"
        return False
    return True


def _usable(configs: list[triton.Config], named_args: dict, **kwargs) -> list[triton.Config]:
    """The configs whose tiles divide the sequence (and, causal, BLOCK_N divides BLOCK_M),
    without warp specialization on the causal pass, that the installed Triton compiles."""
    args = {**named_args, **kwargs}
    seq_len, causal = args["seq_len"], args["CAUSAL"]
    kept = [c for c in configs
            if seq_len % c.kwargs["BLOCK_M"] == 0 and seq_len % c.kwargs["BLOCK_N"] == 0
            and not (causal and (c.kwargs["WARP_SPECIALIZE"]
                                 or c.kwargs["BLOCK_M"] % c.kwargs["BLOCK_N"]))]
    kept = [c for c in kept if _compiles(c, args)]
    if not kept:
        raise ValueError(f"no launch configuration fits sequence length {seq_len} and "
                         f"compiles here; compiler failures: {DROPPED}")
    return kept


def _time_back_to_back(kernel_call: Callable[[], None],
                       quantiles: tuple[float, ...] = (0.5, 0.2, 0.8)) -> list[float]:
    """The tuner's timer, made like the pairs' timing: calls back to back on warm caches, one
    CUDA-event pair per call (core.timing.measure_cuda, the harness's own). Triton's default
    (`triton.testing.do_bench`) clears the L2 cache before every call, which a pair's calls
    never see, and on the H200 its pick at sequence 4096 (BLOCK_M 128) timed 8% slower in
    the pinned sweep than BLOCK_M 64. Returns the ms at each quantile, as Triton asks."""
    from core.timing import measure_cuda

    measure_cuda(kernel_call, 3)  # the first calls: compile, warm caches and clocks
    samples = sorted(measure_cuda(kernel_call, TUNING_CALLS).samples_ms)
    return [samples[min(len(samples) - 1, int(q * len(samples)))] for q in quantiles]


TUNING_CALLS = 20  # timed calls per config; ~1-10 ms each at the pairs' shapes

attention_fwd_tuned = triton.autotune(configs=CONFIGS, key=["seq_len", "HEAD_DIM", "CAUSAL"],
                                      prune_configs_by={"early_config_prune": _usable},
                                      do_bench=_time_back_to_back)(attention_fwd_kernel)


def attention_forward(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, causal: bool,
                      config: dict | None = None) -> torch.Tensor:
    """softmax(q kᵀ / √d) v for [B, H, S, D] tensors, as `F.scaled_dot_product_attention`.

    `config` pins a launch (keys BLOCK_M, BLOCK_N, optionally WARP_SPECIALIZE, num_warps and
    num_stages): the CPU tests use it under Triton's interpreter. None takes the autotuner's
    pick for this sequence length, head dimension and masking, timed on the first call."""
    batch, heads, seq_len, head_dim = q.shape
    if k.shape != q.shape or v.shape != q.shape:
        raise ValueError(f"q, k, v must have one shape; got {q.shape}, {k.shape}, {v.shape}")
    if head_dim not in (16, 32, 64, 128, 256):
        raise ValueError(f"head_dim must be a power of two from 16 to 256, got {head_dim}")
    # the pinned tiles must divide the sequence (the tuner's configs are pruned to those that do)
    bm, bn = (config["BLOCK_M"], config["BLOCK_N"]) if config else (128, 128)
    if config and (seq_len % bm or seq_len % bn or (causal and bm % bn)):
        raise ValueError(f"BLOCK_M {bm} and BLOCK_N {bn} must divide sequence length "
                         f"{seq_len} (and BLOCK_N divide BLOCK_M when causal)")
    q, k, v = (t.contiguous() for t in (q, k, v))  # no-ops for the pairs' inputs
    out = torch.empty_like(q)
    rows = batch * heads * seq_len
    # Descriptors over the [B·H·S, D] view. Their block shape is a placeholder until the
    # config is known (the autotuner's pre-hook sets it; a pinned config's is set here).
    q_desc, k_desc, v_desc, o_desc = (
        TensorDescriptor.from_tensor(t.view(rows, head_dim), [block, head_dim])
        for t, block in ((q, bm), (k, bn), (v, bn), (out, bm)))
    qk_scale = LOG2E / math.sqrt(head_dim)  # the one constant: log2(e)/sqrt(d)
    args = (q_desc, k_desc, v_desc, o_desc, qk_scale, seq_len)
    if config is None:
        def grid(meta: dict) -> tuple[int, int]:
            return (seq_len // meta["BLOCK_M"], batch * heads)

        attention_fwd_tuned[grid](*args, HEAD_DIM=head_dim, CAUSAL=causal)
    else:
        launch = {key: config[key] for key in ("num_warps", "num_stages") if key in config}
        attention_fwd_kernel[(seq_len // bm, batch * heads)](
            *args, HEAD_DIM=head_dim, BLOCK_M=bm, BLOCK_N=bn, CAUSAL=causal,
            WARP_SPECIALIZE=config.get("WARP_SPECIALIZE", False), **launch)
    return out


def compile_for(capability: int, config: triton.Config, causal: bool, head_dim: int = 128,
                dtype: str = "bf16") -> triton.compiler.CompiledKernel:
    """The kernel at `config` compiled for compute capability `capability` (90 = sm_90)
    without a GPU (Triton's compiler and ptxas run on the CPU): `.asm` holds its "ttgir",
    "ptx" and "cubin". The sequence length is marked divisible by 16, as a launch at the
    pairs' sizes specializes it."""
    from triton.backends.compiler import GPUTarget
    from triton.compiler import ASTSource

    bm, bn = config.kwargs["BLOCK_M"], config.kwargs["BLOCK_N"]
    constexprs = {"HEAD_DIM": head_dim, "CAUSAL": causal, **config.kwargs}
    signature = {"q_desc": f"tensordesc<{dtype}[{bm},{head_dim}]>",
                 "k_desc": f"tensordesc<{dtype}[{bn},{head_dim}]>",
                 "v_desc": f"tensordesc<{dtype}[{bn},{head_dim}]>",
                 "o_desc": f"tensordesc<{dtype}[{bm},{head_dim}]>",
                 "qk_scale": "fp32", "seq_len": "i32",
                 **dict.fromkeys(constexprs, "constexpr")}
    names = list(attention_fwd_kernel.arg_names)
    attrs = {(names.index("seq_len"),): [["tt.divisibility", 16]]}
    source = ASTSource(attention_fwd_kernel, signature, constexprs=constexprs, attrs=attrs)
    return triton.compile(source, target=GPUTarget("cuda", capability, 32),
                          options={"num_warps": config.num_warps,
                                   "num_stages": config.num_stages})
