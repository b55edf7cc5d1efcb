// tma_copy.cu — stream tiles global → shared → global (the staging step of a tiled kernel);
// the tma_copy pair. Both kernels run the same persistent grid and move 16 KB tiles.
//
// staged_copy_threads : 256 threads load a tile with 16-byte loads into shared memory, sync,
//                       store it back out, sync: one tile in flight per CTA, and every byte
//                       passes through registers.
// staged_copy_tma     : one thread drives Hopper's bulk-copy engine (TMA, cp.async.bulk):
//                       STAGES tiles are in flight per CTA, loads complete on an mbarrier,
//                       stores drain asynchronously; no registers touch the data. sm_90+.
#include "aisp.cuh"
#include "tma.cuh"  // mbarrier and bulk-copy (TMA) PTX helpers

constexpr int TILE_FLOATS = 4096;  // 16 KB
constexpr int TILE_BYTES = TILE_FLOATS * 4;
constexpr int THREADS = 256;
constexpr int STAGES = 4;

__global__ void __launch_bounds__(THREADS)
staged_copy_threads(const float* __restrict__ in, float* __restrict__ out, int64_t tiles) {
  __shared__ __align__(16) float4 tile[TILE_FLOATS / 4];
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const float4* src = reinterpret_cast<const float4*>(in + t * TILE_FLOATS);
    float4* dst = reinterpret_cast<float4*>(out + t * TILE_FLOATS);
#pragma unroll
    for (int v = threadIdx.x; v < TILE_FLOATS / 4; v += THREADS) tile[v] = src[v];
    __syncthreads();
#pragma unroll
    for (int v = threadIdx.x; v < TILE_FLOATS / 4; v += THREADS) dst[v] = tile[v];
    __syncthreads();
  }
}

__global__ void staged_copy_tma(const float* __restrict__ in, float* __restrict__ out,
                                int64_t tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) float stage[];  // STAGES x TILE_FLOATS
  __shared__ __align__(8) uint64_t full[STAGES];
  if (threadIdx.x != 0) return;  // the copy engine does the work; one thread feeds it
  for (int s = 0; s < STAGES; ++s)
    mbarrier_init<1>(&full[s]);
  fence_mbarrier_init();

  int64_t count = tiles > blockIdx.x ? (tiles - blockIdx.x + gridDim.x - 1) / gridDim.x : 0;
  auto tile_of = [&](int64_t i) { return (blockIdx.x + i * gridDim.x) * TILE_FLOATS; };
  for (int64_t i = 0; i < count && i < STAGES; ++i)
    bulk_load(stage + i * TILE_FLOATS, in + tile_of(i), TILE_BYTES, &full[i]);
  for (int64_t i = 0; i < count; ++i) {
    int s = i % STAGES;
    wait_phase(&full[s], (i / STAGES) & 1);  // tile i has landed in stage s
    bulk_store(out + tile_of(i), stage + s * TILE_FLOATS, TILE_BYTES);
    if (i >= 1 && i - 1 + STAGES < count) {
      // Refill the stage of tile i-1 once its store has finished reading shared memory.
      bulk_wait_group_read<1>();
      int prev = (i - 1) % STAGES;
      bulk_load(stage + prev * TILE_FLOATS, in + tile_of(i - 1 + STAGES), TILE_BYTES,
                &full[prev]);
    }
  }
  bulk_wait_group<0>();  // all stores complete
#endif
}

extern "C" AISP_API int launch_staged_copy_threads(const float* in, float* out, int64_t n,
                                                   int64_t ctas, cudaStream_t stream) {
  if (n % TILE_FLOATS != 0) return static_cast<int>(cudaErrorInvalidValue);
  staged_copy_threads<<<ctas, THREADS, 0, stream>>>(in, out, n / TILE_FLOATS);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_staged_copy_tma(const float* in, float* out, int64_t n,
                                               int64_t ctas, cudaStream_t stream) {
  if (n % TILE_FLOATS != 0) return static_cast<int>(cudaErrorInvalidValue);
  const int smem = STAGES * TILE_BYTES;  // 64 KB: above the 48 KB default, so opt in
  AISP_CHECK(cudaFuncSetAttribute(staged_copy_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  staged_copy_tma<<<ctas, 32, smem, stream>>>(in, out, n / TILE_FLOATS);
  return AISP_LAUNCHED();
}

// Residency as the occupancy calculator sees it: CTAs of one of the two kernels (0: thread
// staged, 1: TMA with its 64 KB of dynamic shared memory) that one SM holds. The pairs launch
// that many per SM, the natural persistent grid, rather than a pinned count.
extern "C" AISP_API int staged_copy_blocks_per_sm(int64_t which, int64_t* blocks, cudaStream_t) {
  int n = 0;
  if (which == 0) {
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, staged_copy_threads, THREADS, 0));
  } else {
    const int smem = STAGES * TILE_BYTES;
    AISP_CHECK(cudaFuncSetAttribute(staged_copy_tma, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, staged_copy_tma, 32, smem));
  }
  *blocks = n;
  return 0;
}
