// tma.cuh — Hopper (sm_90+) PTX helpers for mbarriers and the bulk-copy engine (TMA,
// cp.async.bulk), shared by the chapter kernels that stream tiles through shared memory
// (ch07/tma_copy.cu, ch10/warp_specialization.cu, ch10/cluster_multicast.cu).
//
// The pattern: one thread initializes an mbarrier per stage (mbarrier_init) and makes the
// inits visible to the copy engine (fence_mbarrier_init); bulk_load announces the bytes it
// expects on the stage's mbarrier and issues the copy, which completes them there; a waiter
// spins in wait_phase on the phase's parity; a consumer hands a stage back with
// mbarrier_arrive. bulk_store drains a tile from shared to global memory in a bulk group;
// bulk_wait_group_read<N> waits until at most N groups still read shared memory,
// bulk_wait_group<N> until at most N are incomplete.
//
// Everything here is empty below sm_90: include it, and guard the kernel body that uses it
// with `#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900`.
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// The 32-bit shared-memory address PTX's shared-space operands take.
__device__ __forceinline__ uint32_t smem_addr(const void* p) {
  return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// Initialize an mbarrier that completes a phase after COUNT arrivals (plus any expected
// transaction bytes). COUNT is a compile-time immediate.
template <int COUNT>
__device__ __forceinline__ void mbarrier_init(uint64_t* bar) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "n"(COUNT));
}

// The same with the arrival count in a register.
__device__ __forceinline__ void mbarrier_init(uint64_t* bar, int count) {
  asm volatile("mbarrier.init.shared::cta.b64 [%0], %1;" :: "r"(smem_addr(bar)), "r"(count));
}

// Make the mbarrier inits visible to the copy engine (the async proxy) before any copy uses them.
__device__ __forceinline__ void fence_mbarrier_init() {
  asm volatile("fence.mbarrier_init.release.cluster;" ::: "memory");
}

// Arrive on `bar` expecting `bytes` more transaction bytes, then copy `bytes` (a multiple of
// 16, both addresses 16-byte aligned) from global `src` to shared `dst`; the copy engine
// completes those bytes on `bar`.
__device__ __forceinline__ void bulk_load(void* dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

// Spin until the phase of `bar` with this parity has completed.
__device__ __forceinline__ void wait_phase(uint64_t* bar, uint32_t parity) {
  uint32_t done = 0;
  while (!done) {
    asm volatile("{ .reg .pred p; mbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2; "
                 "selp.u32 %0, 1, 0, p; }"
                 : "=r"(done) : "r"(smem_addr(bar)), "r"(parity) : "memory");
  }
}

// One arrival on `bar` (release semantics: this thread's earlier shared-memory reads come first).
__device__ __forceinline__ void mbarrier_arrive(uint64_t* bar) {
  asm volatile("mbarrier.arrive.shared::cta.b64 _, [%0];" :: "r"(smem_addr(bar)) : "memory");
}

// Copy `bytes` from shared `src` to global `dst` as one bulk group.
__device__ __forceinline__ void bulk_store(void* dst, const void* src, int bytes) {
  asm volatile("cp.async.bulk.global.shared::cta.bulk_group [%0], [%1], %2;"
               :: "l"(dst), "r"(smem_addr(src)), "r"(bytes) : "memory");
  asm volatile("cp.async.bulk.commit_group;" ::: "memory");
}

// Wait until at most N bulk groups are still reading their shared-memory source.
template <int N>
__device__ __forceinline__ void bulk_wait_group_read() {
  asm volatile("cp.async.bulk.wait_group.read %0;" :: "n"(N) : "memory");
}

// Wait until at most N bulk groups are incomplete (their global writes done).
template <int N>
__device__ __forceinline__ void bulk_wait_group() {
  asm volatile("cp.async.bulk.wait_group %0;" :: "n"(N) : "memory");
}
#endif
