// dynamic_parallelism.cu — one grid per uneven segment, launched by the host or by the GPU.
// nvcc-flags: -rdc=true -lcudadevrt
//
// Every element of segment s becomes y = transform(x, w[s]); segment s spans
// [offsets[s], offsets[s+1]). The per-element work is the same __device__ function everywhere,
// so every launcher below gives bit-identical answers; only who launches what differs.
//
// launch_segments_host   : the host walks the segment table and launches one grid per
//                          segment, sized to it (offsets read from host memory).
// launch_segments_device : one parent thread per segment launches that segment's grid from
//                          the GPU (CUDA dynamic parallelism, fire-and-forget child streams).
//                          The parent grid completes only when every child has.
// launch_segments_flat   : one grid over all elements; each thread finds its segment by
//                          binary search of the offsets. No per-segment launch at all.
#include "aisp.cuh"

constexpr int THREADS = 256;

// A few dependent FLOPs per element (a cubic in x, scaled by the segment's weight).
__device__ __forceinline__ float transform(float x, float w) {
  float p = fmaf(fmaf(0.25f, x, -0.5f), x, 1.0f);  // 0.25x^2 - 0.5x + 1
  return w * fmaf(p, x, 0.125f);
}

__global__ void __launch_bounds__(THREADS)
segment_kernel(const float* __restrict__ x, float* __restrict__ y, int64_t len,
               const float* __restrict__ w) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (i < len) y[i] = transform(x[i], *w);
}

extern "C" AISP_API int launch_segments_host(const float* x, float* y, const float* w,
                                             const int64_t* host_offsets, int64_t segments,
                                             cudaStream_t stream) {
  for (int64_t s = 0; s < segments; ++s) {
    int64_t begin = host_offsets[s], len = host_offsets[s + 1] - begin;
    if (len <= 0) continue;
    int64_t blocks = aisp_ceil_div(len, THREADS);
    AISP_REQUIRE_FITS(blocks, 0x7fffffff);
    segment_kernel<<<blocks, THREADS, 0, stream>>>(x + begin, y + begin, len, w + s);
  }
  return AISP_LAUNCHED();
}

__global__ void parent_kernel(const float* __restrict__ x, float* __restrict__ y,
                              const float* __restrict__ w, const int64_t* __restrict__ offsets,
                              int64_t segments) {
  int64_t s = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (s >= segments) return;
  int64_t begin = offsets[s], len = offsets[s + 1] - begin;
  if (len <= 0) return;
  // Fire-and-forget: children of one parent block do not serialize behind each other.
  segment_kernel<<<(unsigned)((len + THREADS - 1) / THREADS), THREADS, 0, cudaStreamFireAndForget>>>(
      x + begin, y + begin, len, w + s);
}

// Parent blocks of 32 threads: a block's children start as soon as its 32 threads launched.
constexpr int PARENT_THREADS = 32;

extern "C" AISP_API int launch_segments_device(const float* x, float* y, const float* w,
                                               const int64_t* offsets, int64_t segments,
                                               cudaStream_t stream) {
  if (segments <= 0) return 0;
  int64_t blocks = aisp_ceil_div(segments, PARENT_THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  parent_kernel<<<blocks, PARENT_THREADS, 0, stream>>>(x, y, w, offsets, segments);
  return AISP_LAUNCHED();
}

// Launches the device runtime may hold pending (default 2048); set once in setup().
extern "C" AISP_API int set_pending_launch_limit(int64_t count, cudaStream_t stream) {
  return static_cast<int>(cudaDeviceSetLimit(cudaLimitDevRuntimePendingLaunchCount, (size_t)count));
}

__global__ void __launch_bounds__(THREADS)
flat_kernel(const float* __restrict__ x, float* __restrict__ y, const float* __restrict__ w,
            const int64_t* __restrict__ offsets, int64_t segments, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (i >= n) return;
  int64_t lo = 0, hi = segments - 1;  // the last s with offsets[s] <= i (skips empty segments)
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= i) lo = mid; else hi = mid - 1;
  }
  y[i] = transform(x[i], w[lo]);
}

extern "C" AISP_API int launch_segments_flat(const float* x, float* y, const float* w,
                                             const int64_t* offsets, int64_t segments, int64_t n,
                                             cudaStream_t stream) {
  int64_t blocks = aisp_ceil_div(n > 0 ? n : 1, THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  flat_kernel<<<blocks, THREADS, 0, stream>>>(x, y, w, offsets, segments, n);
  return AISP_LAUNCHED();
}
