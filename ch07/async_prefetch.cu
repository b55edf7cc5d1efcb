// async_prefetch.cu — a tiled kernel that stages 16 KB tiles in shared memory and filters
// them; the async_prefetch pair. Both kernels run the same persistent grid (each CTA loops
// over tiles), do the same arithmetic in the same order, and differ only in how tiles arrive:
//
// filter_load_then_compute : load tile t (global → registers → shared), wait, compute, repeat:
//                            the CTA's warps stall on every tile's DRAM latency.
// filter_double_buffered   : cp.async (sm_80+) copies tile t+1 into the other buffer while the
//                            CTA computes on tile t; loads bypass registers (LDGSTS in SASS).
//
// The filter: y[i] = Σ_r w_r · x[(i + r) mod TILE] within the tile, w_r = 1/(r+1), TAPS taps
// (8, 16 or 32: fewer taps make the kernel more memory-bound, more make it compute-bound).
#include <cuda_pipeline.h>

#include "aisp.cuh"

constexpr int TILE = 4096;  // floats per tile (16 KB)
constexpr int THREADS = 256;
constexpr int VEC_PER_THREAD = TILE / 4 / THREADS;  // float4 chunks each thread copies
constexpr int OUT_PER_THREAD = TILE / THREADS;

template <int TAPS>
__device__ __forceinline__ void filter_tile(const float* tile, float* __restrict__ out) {
  // Thread t produces outputs t, t+256, ...: consecutive threads read consecutive banks.
#pragma unroll 4
  for (int j = 0; j < OUT_PER_THREAD; ++j) {
    int i = threadIdx.x + j * THREADS;
    float acc = 0.f;
#pragma unroll
    for (int r = 0; r < TAPS; ++r) acc += (1.0f / (r + 1)) * tile[(i + r) & (TILE - 1)];
    out[i] = acc;
  }
}

template <int TAPS>
__global__ void __launch_bounds__(THREADS)
filter_load_then_compute(const float* __restrict__ x, float* __restrict__ y, int64_t tiles) {
  __shared__ __align__(16) float tile[TILE];
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const float4* src = reinterpret_cast<const float4*>(x + t * TILE);
#pragma unroll
    for (int v = 0; v < VEC_PER_THREAD; ++v)
      reinterpret_cast<float4*>(tile)[threadIdx.x + v * THREADS] = src[threadIdx.x + v * THREADS];
    __syncthreads();
    filter_tile<TAPS>(tile, y + t * TILE);
    __syncthreads();  // the next tile overwrites the buffer
  }
}

__device__ __forceinline__ void prefetch_tile(float* buffer, const float* src) {
#pragma unroll
  for (int v = 0; v < VEC_PER_THREAD; ++v) {
    int k = (threadIdx.x + v * THREADS) * 4;
    __pipeline_memcpy_async(buffer + k, src + k, 16);
  }
  __pipeline_commit();
}

template <int TAPS>
__global__ void __launch_bounds__(THREADS)
filter_double_buffered(const float* __restrict__ x, float* __restrict__ y, int64_t tiles) {
  __shared__ __align__(16) float buffers[2][TILE];
  int64_t t = blockIdx.x;
  if (t < tiles) prefetch_tile(buffers[0], x + t * TILE);
  for (int stage = 0; t < tiles; t += gridDim.x, stage ^= 1) {
    int64_t next = t + gridDim.x;
    if (next < tiles) prefetch_tile(buffers[stage ^ 1], x + next * TILE);
    __pipeline_wait_prior(next < tiles ? 1 : 0);  // tile t has landed; t+1 may be in flight
    __syncthreads();
    filter_tile<TAPS>(buffers[stage], y + t * TILE);
    __syncthreads();  // everyone is done with this buffer before it is refilled
  }
}

// Launches kernel<TAPS> for the supported tap counts.
#define AISP_DISPATCH_TAPS(kernel, ...)                                        \
  switch (taps) {                                                              \
    case 8: kernel<8><<<ctas, THREADS, 0, stream>>>(__VA_ARGS__); break;       \
    case 16: kernel<16><<<ctas, THREADS, 0, stream>>>(__VA_ARGS__); break;     \
    case 32: kernel<32><<<ctas, THREADS, 0, stream>>>(__VA_ARGS__); break;     \
    default: return static_cast<int>(cudaErrorInvalidValue);                   \
  }

extern "C" AISP_API int launch_filter_load_then_compute(const float* x, float* y, int64_t n,
                                                        int64_t taps, int64_t ctas,
                                                        cudaStream_t stream) {
  if (n % TILE != 0) return static_cast<int>(cudaErrorInvalidValue);
  AISP_DISPATCH_TAPS(filter_load_then_compute, x, y, n / TILE);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_filter_double_buffered(const float* x, float* y, int64_t n,
                                                      int64_t taps, int64_t ctas,
                                                      cudaStream_t stream) {
  if (n % TILE != 0) return static_cast<int>(cudaErrorInvalidValue);
  AISP_DISPATCH_TAPS(filter_double_buffered, x, y, n / TILE);
  return AISP_LAUNCHED();
}

// Residency as the occupancy calculator sees it: CTAs of one of the two kernels (0: load then
// compute, 1: double buffered) with `taps` taps that one SM holds. The pairs launch that many
// per SM, the natural persistent grid, rather than a pinned count.
extern "C" AISP_API int filter_blocks_per_sm(int64_t which, int64_t taps, int64_t* blocks,
                                             cudaStream_t) {
  int n = 0;
#define AISP_OCCUPANCY(T)                                                                    \
  AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(                                  \
      &n, which == 0 ? filter_load_then_compute<T> : filter_double_buffered<T>, THREADS, 0))
  switch (taps) {
    case 8: AISP_OCCUPANCY(8); break;
    case 16: AISP_OCCUPANCY(16); break;
    case 32: AISP_OCCUPANCY(32); break;
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
#undef AISP_OCCUPANCY
  *blocks = n;
  return 0;
}
