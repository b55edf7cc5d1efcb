// atomics_batched.cu — a histogram of skewed keys, three ways. Counts are integers: exact.
//
// launch_hist_global     : one global atomicAdd per key. Hot bins turn into queues at the
//                          L2 atomic units: every add to one address is serialized there.
// launch_hist_warp       : warp-aggregated: __match_any_sync groups the lanes holding the same
//                          key; one lane per group adds the group's size. One global atomic per
//                          distinct key per warp instead of one per key.
// launch_hist_privatized : the warp-aggregated adds go to a per-block histogram in shared
//                          memory; a persistent grid walks the keys, and each block adds its
//                          non-zero bins to the global histogram once at the end.
// Every launcher zeroes `counts` first (part of the call).
#include "aisp.cuh"

constexpr int THREADS = 256;
constexpr unsigned FULL = 0xffffffffu;
constexpr int MAX_SHARED_BINS = 4096;  // 16 KiB of int counters per block

__global__ void __launch_bounds__(THREADS)
hist_global(const int* __restrict__ keys, int64_t n, int* __restrict__ counts) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (i < n) atomicAdd(&counts[keys[i]], 1);
}

// One atomicAdd of the group's size per distinct key among the warp's valid lanes.
// Every lane of the warp must call it (invalid lanes pass key -1 and add nothing).
__device__ __forceinline__ void warp_aggregated_add(int* bins, int key) {
  unsigned peers = __match_any_sync(FULL, key);
  int leader = __ffs(peers) - 1;
  if (key >= 0 && (int)(threadIdx.x & 31) == leader) atomicAdd(&bins[key], __popc(peers));
}

__global__ void __launch_bounds__(THREADS)
hist_warp(const int* __restrict__ keys, int64_t n, int* __restrict__ counts) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  warp_aggregated_add(counts, i < n ? keys[i] : -1);  // the whole warp takes part
}

__global__ void __launch_bounds__(THREADS)
hist_privatized(const int* __restrict__ keys, int64_t n, int* __restrict__ counts, int bins) {
  __shared__ int local[MAX_SHARED_BINS];
  for (int b = threadIdx.x; b < bins; b += THREADS) local[b] = 0;
  __syncthreads();
  const int lane = threadIdx.x & 31;
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  // Warp-uniform loop bounds, so every lane of a warp takes part in each match.
  for (int64_t base = blockIdx.x * (int64_t)THREADS + (threadIdx.x & ~31); base < n;
       base += stride) {
    int64_t i = base + lane;
    warp_aggregated_add(local, i < n ? keys[i] : -1);
  }
  __syncthreads();
  for (int b = threadIdx.x; b < bins; b += THREADS)
    if (local[b] != 0) atomicAdd(&counts[b], local[b]);
}

static cudaError_t zero_counts(int* counts, int64_t bins, cudaStream_t stream) {
  if (bins < 0 || bins > 0x7fffffff) return cudaErrorInvalidValue;
  return cudaMemsetAsync(counts, 0, bins * sizeof(int), stream);
}

extern "C" AISP_API int launch_hist_global(const int* keys, int64_t n, int* counts, int64_t bins,
                                           cudaStream_t stream) {
  AISP_CHECK(zero_counts(counts, bins, stream));
  int64_t blocks = aisp_ceil_div(n > 0 ? n : 1, THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  hist_global<<<blocks, THREADS, 0, stream>>>(keys, n, counts);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_hist_warp(const int* keys, int64_t n, int* counts, int64_t bins,
                                         cudaStream_t stream) {
  AISP_CHECK(zero_counts(counts, bins, stream));
  int64_t blocks = aisp_ceil_div(n > 0 ? n : 1, THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  hist_warp<<<blocks, THREADS, 0, stream>>>(keys, n, counts);
  return AISP_LAUNCHED();
}

// Resident blocks per SM for hist_privatized (for the persistent grid).
extern "C" AISP_API int privatized_blocks_per_sm(int64_t* blocks, cudaStream_t stream) {
  int count = 0;
  AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&count, hist_privatized, THREADS, 0));
  *blocks = count;
  return 0;
}

extern "C" AISP_API int launch_hist_privatized(const int* keys, int64_t n, int* counts,
                                               int64_t bins, int64_t grid, cudaStream_t stream) {
  if (bins > MAX_SHARED_BINS) return static_cast<int>(cudaErrorInvalidValue);
  AISP_CHECK(zero_counts(counts, bins, stream));
  AISP_REQUIRE_FITS(grid, 0x7fffffff);
  hist_privatized<<<grid, THREADS, 0, stream>>>(keys, n, counts, (int)bins);
  return AISP_LAUNCHED();
}
