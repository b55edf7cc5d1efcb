// cluster_multicast.cu — Y = X · W with a 64 KB weight tile W (32 x 512 fp32, e.g. a rank-32
// up-projection) that every CTA needs, and an 8-row slice of X per CTA; the cluster_multicast
// pair. The workload of cluster_dsmem, with the copy engine (TMA, cp.async.bulk) doing every
// load. Both kernels give each CTA the same slice, stage all of W in its shared memory and run
// the same tile math (projection_tile.cuh); they differ in how many times L2 serves W:
//
// project_weights_bulk      : every CTA has one thread issue a 64 KB bulk copy of W (plus one
//                             128-byte copy per X row) into its own shared memory, completing
//                             on an mbarrier the CTA waits on. L2 serves W once per CTA:
//                             16384 x 64 KB = 1 GiB of L2 → SM traffic for 272 MiB of X and Y.
// project_weights_multicast : CTAs run in thread-block clusters of CS (2 or 4). CTA rank r issues
//                             one bulk copy of its 1/CS share of W with
//                             `.multicast::cluster` and ctaMask = all CS CTAs: L2 reads that
//                             share once and the bytes land at the same shared-memory offset in
//                             every CTA of the cluster, each completing them on that CTA's own
//                             mbarrier. Every CTA still receives all 64 KB, but L2 serves W once
//                             per cluster instead of once per CTA. sm_90a.
//
// Why this, after cluster_dsmem lost: cluster_dsmem also read W from L2 once per cluster, then
// copied the rest from its peers' shared memory through registers (ld over the SM-to-SM
// network, st to its own shared memory) between two full cluster barriers; on an H100 that cost
// more than the L2 reads it saved (0.73x, ch10/README.md). Multicast moves the fan-out into the
// memory system: one L2 read, the response delivered to CS SMs, no thread touches W, and the
// only cluster barriers are one before the copies (peers' mbarriers must exist) and one before
// exit that the math hides.
//
// The rules the optimized kernel relies on:
//  1. A multicast completes bytes on the mbarrier at the same offset in every destination CTA,
//     so each CTA's mbarrier must be initialized (and expecting its bytes) before any peer
//     issues: init + fence.mbarrier_init.release.cluster, then a cluster barrier
//     (arrive.release / wait.acquire), then the copies.
//  2. Each CTA's mbarrier expects all 64 KB of W plus its own 1 KB of X (one arrive.expect_tx);
//     CS multicast copies and 8 local X copies complete those bytes. A CTA reads W only after
//     its phase 0 completes, i.e. after every peer's share has landed in *its* shared memory.
//  3. No CTA exits while a copy it issued may still be writing into a peer: every CTA arrives on
//     a cluster barrier once its own bytes are in (then all copies of the cluster are done when
//     all have arrived) and waits on it after its math, just before exit.
// Each mbarrier is used for one phase (parity 0); no buffer is reused, so there is no phase
// flipping and no `empty` barrier.
#include "aisp.cuh"
#include "projection_tile.cuh"
#include "tma.cuh"  // smem_addr, mbarrier_init, fence_mbarrier_init, wait_phase (sm_90+)

constexpr int K = 32, N = 512;                    // W: K x N fp32 = 64 KB
constexpr int ROWS = proj_tile_rows<N>();         // 8 rows of X per CTA
constexpr int LDX = proj_x_stride<K>();           // 36 floats: X rows padded, 144 B apart
constexpr int W_BYTES = K * N * 4;                // 65536
constexpr int X_ROW_BYTES = K * 4;                // 128 (bulk copies: multiples of 16 B)
constexpr int TILE_BYTES = W_BYTES + ROWS * X_ROW_BYTES;  // the bytes each CTA's mbarrier expects
constexpr int SMEM_BYTES = (K * N + ROWS * LDX) * 4;      // 64 KB of W + 1.1 KB of padded X
static_assert(ROWS == 8 && (LDX * 4) % 16 == 0 && X_ROW_BYTES % 16 == 0, "slice shape");

#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
// One arrival on `bar` that also raises the bytes its current phase waits for.
__device__ __forceinline__ void expect_bytes(uint64_t* bar, int bytes) {
  asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
               :: "r"(smem_addr(bar)), "r"(bytes) : "memory");
}

// Bulk copy global → this CTA's shared memory; the bytes complete on `bar` (no arrival).
__device__ __forceinline__ void bulk_copy(void* dst, const void* src, int bytes, uint64_t* bar) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
               :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)) : "memory");
}

// The same bytes into every CTA of the cluster whose rank bit is set in `cta_mask`: each gets
// them at the shared-memory offset of `dst` and completes them on its mbarrier at the offset of
// `bar`. L2 is read once.
__device__ __forceinline__ void bulk_copy_multicast(void* dst, const void* src, int bytes,
                                                    uint64_t* bar, uint16_t cta_mask) {
  asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes.multicast::cluster"
               " [%0], [%1], %2, [%3], %4;"
               :: "r"(smem_addr(dst)), "l"(src), "r"(bytes), "r"(smem_addr(bar)), "h"(cta_mask)
               : "memory");
}

__device__ __forceinline__ uint32_t cluster_rank() {
  uint32_t rank;
  asm volatile("mov.u32 %0, %%cluster_ctarank;" : "=r"(rank));
  return rank;
}

// Split cluster barrier: every thread of every CTA in the cluster arrives, then waits.
__device__ __forceinline__ void cluster_arrive() {
  asm volatile("barrier.cluster.arrive.release;" ::: "memory");
}
__device__ __forceinline__ void cluster_wait() {
  asm volatile("barrier.cluster.wait.acquire;" ::: "memory");
}

// The CTA's 8 rows of X (1 KB, contiguous in global memory) into the padded rows of xs.
__device__ __forceinline__ void copy_x_rows(float* xs, const float* x, uint64_t* bar) {
#pragma unroll
  for (int r = 0; r < ROWS; ++r) bulk_copy(xs + r * LDX, x + r * K, X_ROW_BYTES, bar);
}
#endif

__global__ void __launch_bounds__(PROJ_THREADS)
project_weights_bulk(const float* __restrict__ x, const float* __restrict__ w,
                     float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) float smem[];
  __shared__ __align__(8) uint64_t loaded;  // W and X have landed (1 arrival + TILE_BYTES)
  float* ws = smem;
  float* xs = smem + K * N;
  if (threadIdx.x == 0) {
    mbarrier_init<1>(&loaded);
    fence_mbarrier_init();            // visible to the copy engine
    expect_bytes(&loaded, TILE_BYTES);
    bulk_copy(ws, w, W_BYTES, &loaded);  // all of W, from L2 (HBM for the first CTAs)
    copy_x_rows(xs, x + static_cast<int64_t>(blockIdx.x) * ROWS * K, &loaded);
  }
  __syncthreads();         // the mbarrier is initialized before anyone polls it
  wait_phase(&loaded, 0);  // W and X are in shared memory
  project_tile<K, N>(xs, ws, y + static_cast<int64_t>(blockIdx.x) * ROWS * N);
#endif
}

template <int CS>
__global__ void __launch_bounds__(PROJ_THREADS)
project_weights_multicast(const float* __restrict__ x, const float* __restrict__ w,
                          float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int SHARE = W_BYTES / CS;               // bytes of W each CTA multicasts
  constexpr uint16_t ALL = (1u << CS) - 1;          // ctaMask: every CTA of the cluster
  static_assert(SHARE % 16 == 0, "bulk copies move multiples of 16 bytes");
  extern __shared__ __align__(128) float smem[];    // the same offsets in every CTA
  __shared__ __align__(8) uint64_t loaded;          // W and X have landed (1 arrival + TILE_BYTES)
  float* ws = smem;
  float* xs = smem + K * N;
  const uint32_t rank = cluster_rank();
  if (threadIdx.x == 0) {
    mbarrier_init<1>(&loaded);
    fence_mbarrier_init();              // visible to the copy engine, cluster-wide
    expect_bytes(&loaded, TILE_BYTES);  // armed before any peer can complete bytes on it
  }
  cluster_arrive();  // rule 1: every CTA's mbarrier is initialized and armed ...
  cluster_wait();    // ... before any CTA issues a copy that completes on it
  if (threadIdx.x == 0) {
    const char* share = reinterpret_cast<const char*>(w) + rank * SHARE;
    bulk_copy_multicast(reinterpret_cast<char*>(ws) + rank * SHARE, share, SHARE, &loaded, ALL);
    copy_x_rows(xs, x + static_cast<int64_t>(blockIdx.x) * ROWS * K, &loaded);  // mine only
  }
  wait_phase(&loaded, 0);  // rule 2: all CS shares of W (and my X) are in my shared memory
  cluster_arrive();        // rule 3: my bytes are in; the math below hides the barrier ...
  project_tile<K, N>(xs, ws, y + static_cast<int64_t>(blockIdx.x) * ROWS * N);
  cluster_wait();          // ... and no CTA exits before every copy of the cluster is done
#endif
}

extern "C" AISP_API int launch_project_weights_bulk(const float* x, const float* w, float* y,
                                                    int64_t rows, cudaStream_t stream) {
  if (rows % ROWS != 0) return static_cast<int>(cudaErrorInvalidValue);
  AISP_REQUIRE_FITS(rows / ROWS, 0x7fffffff);
  AISP_CHECK(cudaFuncSetAttribute(project_weights_bulk,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  project_weights_bulk<<<rows / ROWS, PROJ_THREADS, SMEM_BYTES, stream>>>(x, w, y);
  return AISP_LAUNCHED();
}

template <int CS>
static int launch_multicast(const float* x, const float* w, float* y, int64_t slices,
                            cudaStream_t stream) {
  AISP_CHECK(aisp_launch_clustered(project_weights_multicast<CS>,
                                   dim3(static_cast<unsigned>(slices)), dim3(PROJ_THREADS),
                                   SMEM_BYTES, CS, stream, x, w, y));
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_project_weights_multicast(const float* x, const float* w, float* y,
                                                         int64_t rows, int64_t cluster_size,
                                                         cudaStream_t stream) {
  if (rows % ROWS != 0) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t slices = rows / ROWS;
  AISP_REQUIRE_FITS(slices, 0x7fffffff);
  if (slices % cluster_size != 0) return static_cast<int>(cudaErrorInvalidValue);  // whole clusters
  switch (cluster_size) {
    case 2: return launch_multicast<2>(x, w, y, slices, stream);
    case 4: return launch_multicast<4>(x, w, y, slices, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}
