// threshold_tma.cu — the threshold pair's computation (threshold.cu's `threshold_select`) with
// each element's load issued one element ahead, so it lands while the previous one computes;
// the thresholdtma pair. (The stem keeps the book's name; the copy here is cp.async, LDGSTS in
// SASS, not TMA: TMA's bulk copies move whole tiles for one thread, while this kernel streams one
// float per thread per step, which is what cp.async is for.)
//
// threshold_select (threshold.cu, the baseline): one element per thread, ceil(n/256) CTAs.
//     Each thread loads x[i], waits ~1 µs of DRAM latency, then runs a 128-instruction
//     dependent chain. Only the other resident warps can fill that wait.
// threshold_gridstride : the same work as a grid-stride loop over a persistent grid at the
//     kernel's natural residency (as many CTAs per SM as fit), loads not pipelined: each
//     element still waits for its own load. Separates "persistent grid" from "prefetch".
// threshold_pipelined  : the same grid-stride loop, with a two-stage cuda::pipeline per
//     thread: before computing element i it issues the cp.async of element i + stride into
//     the other shared-memory slot, so that load overlaps element i's compute, and element
//     i's own load (issued one iteration earlier) has had a whole compute to land.
//
// All three run soft_clip() with the same constants and the same instructions in the same
// order per element: bit-identical outputs (ABOVE/BELOW and soft_clip come from soft_clip.cuh,
// which threshold.cu includes too).
#include <cuda/pipeline>

#include "aisp.cuh"
#include "soft_clip.cuh"

constexpr int THREADS = 256;
constexpr int STAGES = 2;  // one slot being computed on, one being filled

__device__ __forceinline__ float threshold_one(float v, float t, int steps) {
  bool above = v > t;
  float c = above ? ABOVE.c : BELOW.c;  // FSEL, as threshold_select
  float h = above ? ABOVE.h : BELOW.h;
  return soft_clip(v, c, h, steps);
}

__global__ void __launch_bounds__(THREADS)
threshold_gridstride(const float* __restrict__ x, float* __restrict__ y, int64_t n, float t,
                     int steps) {
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n; i += stride)
    y[i] = threshold_one(x[i], t, steps);
}

__global__ void __launch_bounds__(THREADS)
threshold_pipelined(const float* __restrict__ x, float* __restrict__ y, int64_t n, float t,
                    int steps) {
  // Each thread owns one 4-byte slot per stage (consecutive threads, consecutive banks) and
  // only ever reads what it copied itself, so a thread-scoped pipeline (cp.async groups, no
  // block barrier) is enough.
  __shared__ float slots[STAGES][THREADS];
  cuda::pipeline<cuda::thread_scope_thread> pipe = cuda::make_pipeline();
  const int64_t stride = (int64_t)gridDim.x * THREADS;
  const int64_t first = blockIdx.x * (int64_t)THREADS + threadIdx.x;

  pipe.producer_acquire();
  if (first < n)
    cuda::memcpy_async(&slots[0][threadIdx.x], x + first, cuda::aligned_size_t<4>(sizeof(float)),
                       pipe);
  pipe.producer_commit();

  int stage = 0;
  for (int64_t i = first; i < n; i += stride, stage ^= 1) {
    // Prefetch the next element into the other slot (read last iteration, already consumed).
    const int64_t next = i + stride;
    pipe.producer_acquire();
    if (next < n)
      cuda::memcpy_async(&slots[stage ^ 1][threadIdx.x], x + next,
                         cuda::aligned_size_t<4>(sizeof(float)), pipe);
    pipe.producer_commit();  // committed even when empty: one group per iteration

    // Wait for all but the newest group: element i's copy has landed, the prefetch stays in
    // flight (a compile-time `cp.async.wait_group 1`).
    cuda::pipeline_consumer_wait_prior<1>(pipe);
    const float v = slots[stage][threadIdx.x];
    pipe.consumer_release();
    y[i] = threshold_one(v, t, steps);
  }
}

extern "C" AISP_API int launch_threshold_gridstride(const float* x, float* y, int64_t n, float t,
                                                    int64_t steps, int64_t ctas,
                                                    cudaStream_t stream) {
  AISP_REQUIRE_FITS(steps, INT32_MAX);
  AISP_REQUIRE_FITS(ctas, INT32_MAX);
  if (ctas < 1) return static_cast<int>(cudaErrorInvalidValue);
  threshold_gridstride<<<ctas, THREADS, 0, stream>>>(x, y, n, t, static_cast<int>(steps));
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_threshold_pipelined(const float* x, float* y, int64_t n, float t,
                                                   int64_t steps, int64_t ctas,
                                                   cudaStream_t stream) {
  AISP_REQUIRE_FITS(steps, INT32_MAX);
  AISP_REQUIRE_FITS(ctas, INT32_MAX);
  if (ctas < 1) return static_cast<int>(cudaErrorInvalidValue);
  threshold_pipelined<<<ctas, THREADS, 0, stream>>>(x, y, n, t, static_cast<int>(steps));
  return AISP_LAUNCHED();
}

// Residency by CUDA's occupancy calculator: CTAs of 256 threads of one kernel (0: grid-stride,
// 1: pipelined) that one SM holds. The pairs launch that many per SM — the natural persistent
// grid, not a pinned count.
extern "C" AISP_API int threshold_tma_blocks_per_sm(int64_t which, int64_t* blocks, cudaStream_t) {
  int count = 0;
  if (which == 0)
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&count, threshold_gridstride, THREADS, 0));
  else if (which == 1)
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&count, threshold_pipelined, THREADS, 0));
  else
    return static_cast<int>(cudaErrorInvalidValue);
  *blocks = count;
  return 0;
}
