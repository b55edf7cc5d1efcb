// warp_specialization.cu — a 7x7 filter over a 256-column fp32 image, 32 output rows per
// tile; the warp_specialization pair. Both kernels run the same persistent grid (each CTA
// loops over tiles), do the same arithmetic in the same order (filter_tile) and differ in who
// moves the data:
//
// stencil_load_then_compute : all 8 warps load a tile (38 rows: 32 + 6 of halo) with 16-byte
//                             loads, __syncthreads, all 8 compute, __syncthreads, repeat. Loads
//                             and math take turns; the CTA has one tile in flight.
// stencil_warp_specialized  : one producer warp (one elected thread) drives the bulk-copy engine
//                             (TMA, cp.async.bulk) to keep a 4-stage shared-memory ring full;
//                             8 consumer warps only compute. Each stage has two mbarriers:
//                             `full` (the copy engine completes the tile's bytes on it) and
//                             `empty` (each consumer warp arrives when it is done reading). No
//                             block-wide barrier after the roles split. sm_90+.
//
// The filter: y[r][c] = Σ_{i<7} Σ_{j<7} w[i][j] · x[r + i][(c + j - 3) mod 256]. The input has
// 6 more rows than the output (the halo rows are real data, not padding); columns wrap around.
#include "aisp.cuh"
#include "tma.cuh"  // mbarrier and bulk-copy (TMA) PTX helpers, shared with ch07/tma_copy.cu

constexpr int COLS = 256;                        // image width; one consumer thread per column
constexpr int RADIUS = 3;
constexpr int TAPS = 2 * RADIUS + 1;             // 7 x 7 filter
constexpr int OUT_ROWS = 32;                     // output rows per tile
constexpr int IN_ROWS = OUT_ROWS + 2 * RADIUS;   // 38 input rows per tile
constexpr int TILE_FLOATS = IN_ROWS * COLS;      // 9728 floats
constexpr int TILE_BYTES = TILE_FLOATS * 4;      // 38912 B (a multiple of 16, as TMA needs)
constexpr int COMPUTE_THREADS = COLS;            // 8 warps
constexpr int COMPUTE_WARPS = COMPUTE_THREADS / 32;
constexpr int STAGES = 4;                        // 4 x 38 KB = 152 KB of shared memory
constexpr int VEC_PER_TILE = TILE_FLOATS / 4;    // 2432 float4
constexpr int VEC_PER_THREAD = (VEC_PER_TILE + COMPUTE_THREADS - 1) / COMPUTE_THREADS;  // 10
static_assert(TILE_BYTES % 16 == 0 && (COLS & (COLS - 1)) == 0 && COMPUTE_WARPS * 32 == COMPUTE_THREADS,
              "tile shape");

__device__ __forceinline__ void load_taps(float (&w)[TAPS * TAPS], const float* __restrict__ taps) {
#pragma unroll
  for (int k = 0; k < TAPS * TAPS; ++k) w[k] = __ldg(taps + k);
}

// Thread c computes column c of the tile's 32 output rows. It walks the 38 input rows once,
// loading the 7 values around its column (consecutive threads, consecutive banks) and adding
// them into every output row they touch: acc[o] sums i = 0..6 (input row o + i), then
// j = 0..6, in that order, in both kernels.
__device__ __forceinline__ void filter_tile(const float* tile, const float (&w)[TAPS * TAPS],
                                            float* __restrict__ y, int c) {
  int col[TAPS];
#pragma unroll
  for (int j = 0; j < TAPS; ++j) col[j] = (c + j - RADIUS) & (COLS - 1);
  float acc[OUT_ROWS];
#pragma unroll
  for (int o = 0; o < OUT_ROWS; ++o) acc[o] = 0.f;
#pragma unroll
  for (int r = 0; r < IN_ROWS; ++r) {
    float v[TAPS];
#pragma unroll
    for (int j = 0; j < TAPS; ++j) v[j] = tile[r * COLS + col[j]];
#pragma unroll
    for (int i = 0; i < TAPS; ++i) {
      const int o = r - i;  // the output row that sees input row r through filter row i
      if (o >= 0 && o < OUT_ROWS) {
#pragma unroll
        for (int j = 0; j < TAPS; ++j) acc[o] = fmaf(w[i * TAPS + j], v[j], acc[o]);
      }
    }
  }
#pragma unroll
  for (int o = 0; o < OUT_ROWS; ++o) y[o * COLS + c] = acc[o];  // coalesced across the warp
}

__global__ void __launch_bounds__(COMPUTE_THREADS)
stencil_load_then_compute(const float* __restrict__ x, const float* __restrict__ taps,
                          float* __restrict__ y, int64_t tiles) {
  __shared__ __align__(16) float tile[TILE_FLOATS];
  float w[TAPS * TAPS];
  load_taps(w, taps);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const float4* src = reinterpret_cast<const float4*>(x + t * OUT_ROWS * COLS);
    float4 v[VEC_PER_THREAD];
#pragma unroll
    for (int j = 0; j < VEC_PER_THREAD; ++j) {  // every load in flight before the first store
      int k = threadIdx.x + j * COMPUTE_THREADS;
      if (k < VEC_PER_TILE) v[j] = src[k];
    }
#pragma unroll
    for (int j = 0; j < VEC_PER_THREAD; ++j) {
      int k = threadIdx.x + j * COMPUTE_THREADS;
      if (k < VEC_PER_TILE) reinterpret_cast<float4*>(tile)[k] = v[j];
    }
    __syncthreads();
    filter_tile(tile, w, y + t * OUT_ROWS * COLS, threadIdx.x);
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }
}

__global__ void __launch_bounds__(COMPUTE_THREADS + 32, 1)
stencil_warp_specialized(const float* __restrict__ x, const float* __restrict__ taps,
                         float* __restrict__ y, int64_t tiles) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  extern __shared__ __align__(128) float stage[];  // STAGES x TILE_FLOATS
  __shared__ __align__(8) uint64_t full[STAGES];   // tile landed (1 arrival + TILE_BYTES)
  __shared__ __align__(8) uint64_t empty[STAGES];  // stage free again (COMPUTE_WARPS arrivals)
  const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
  if (threadIdx.x == 0) {
    for (int s = 0; s < STAGES; ++s) {
      mbarrier_init<1>(&full[s]);
      mbarrier_init(&empty[s], COMPUTE_WARPS);
    }
    fence_mbarrier_init();  // visible to the copy engine
  }
  __syncthreads();  // the last block-wide barrier: from here on the roles sync only through mbarriers

  // Tiles of this CTA: blockIdx.x, blockIdx.x + gridDim.x, ... (the same as the baseline's).
  const int64_t count = tiles > blockIdx.x ? (tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  auto tile_of = [&](int64_t i) { return blockIdx.x + i * gridDim.x; };

  if (warp == COMPUTE_WARPS) {  // the producer warp; one thread issues every copy
    if (lane == 0) {
      for (int64_t i = 0; i < count; ++i) {
        const int s = static_cast<int>(i % STAGES);
        // Use n = i / STAGES of stage s needs use n-1 released: phase n-1 of empty[s].
        if (i >= STAGES) wait_phase(&empty[s], static_cast<uint32_t>((i / STAGES - 1) & 1));
        bulk_load(stage + s * TILE_FLOATS, x + tile_of(i) * OUT_ROWS * COLS, TILE_BYTES, &full[s]);
      }
    }
    return;  // every copy it issued is waited for by the consumers, so the CTA outlives them
  }

  float w[TAPS * TAPS];
  load_taps(w, taps);
  for (int64_t i = 0; i < count; ++i) {
    const int s = static_cast<int>(i % STAGES);
    wait_phase(&full[s], static_cast<uint32_t>((i / STAGES) & 1));  // tile i has landed
    filter_tile(stage + s * TILE_FLOATS, w, y + tile_of(i) * OUT_ROWS * COLS, threadIdx.x);
    __syncwarp();                               // the whole warp has finished reading stage s ...
    if (lane == 0) mbarrier_arrive(&empty[s]);  // ... and says so (release: orders those reads first)
  }
#endif
}

extern "C" AISP_API int launch_stencil_load_then_compute(const float* x, const float* taps, float* y,
                                                         int64_t out_rows, int64_t ctas,
                                                         cudaStream_t stream) {
  if (out_rows % OUT_ROWS != 0 || ctas <= 0) return static_cast<int>(cudaErrorInvalidValue);
  stencil_load_then_compute<<<ctas, COMPUTE_THREADS, 0, stream>>>(x, taps, y, out_rows / OUT_ROWS);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_stencil_warp_specialized(const float* x, const float* taps, float* y,
                                                        int64_t out_rows, int64_t ctas,
                                                        cudaStream_t stream) {
  if (out_rows % OUT_ROWS != 0 || ctas <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const int smem = STAGES * TILE_BYTES;  // 152 KB: above the 48 KB default, so opt in
  AISP_CHECK(cudaFuncSetAttribute(stencil_warp_specialized,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  stencil_warp_specialized<<<ctas, COMPUTE_THREADS + 32, smem, stream>>>(x, taps, y, out_rows / OUT_ROWS);
  return AISP_LAUNCHED();
}

// Residency as the occupancy calculator sees it: CTAs of one of the two kernels (0: load then
// compute, 1: warp specialized, with its 152 KB of dynamic shared memory) that one SM holds.
// The pairs launch that many per SM, the natural persistent grid, rather than a pinned count.
extern "C" AISP_API int stencil_blocks_per_sm(int64_t which, int64_t* blocks, cudaStream_t) {
  int n = 0;
  if (which == 0) {
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, stencil_load_then_compute,
                                                             COMPUTE_THREADS, 0));
  } else {
    const int smem = STAGES * TILE_BYTES;
    AISP_CHECK(cudaFuncSetAttribute(stencil_warp_specialized,
                                    cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, stencil_warp_specialized,
                                                             COMPUTE_THREADS + 32, smem));
  }
  *blocks = n;
  return 0;
}
