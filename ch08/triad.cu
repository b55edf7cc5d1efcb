// triad.cu — y = a·x + z over large fp32 arrays (the STREAM triad); the hbm_stream pair.
// Both kernels do the same FFMA per element, so the outputs are bit-identical.
//
// triad_scalar  : one element per thread, one 4-byte load of x and of z: each thread has
//                 8 bytes in flight, and the grid relies on warps alone to cover DRAM latency.
// triad_float4  : a grid-stride loop in which each thread first issues UNROLL 16-byte loads
//                 of x and of z (8 independent LDG.E.128, 128 bytes in flight per thread),
//                 then computes and stores them. Little's law: bandwidth = bytes in flight /
//                 latency, and an H100 needs several MB in flight to keep HBM busy.
#include "aisp.cuh"

constexpr int THREADS = 256;
constexpr int UNROLL = 4;  // float4s of each input a thread loads before it uses the first

__global__ void triad_scalar(const float* __restrict__ x, const float* __restrict__ z,
                             float* __restrict__ y, float a, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) y[i] = fmaf(a, x[i], z[i]);
}

__device__ __forceinline__ float4 fma4(float a, float4 x, float4 z) {
  return make_float4(fmaf(a, x.x, z.x), fmaf(a, x.y, z.y), fmaf(a, x.z, z.z), fmaf(a, x.w, z.w));
}

// 4 CTAs of 256 threads per SM stay resident (at most 64 registers a thread).
__global__ void __launch_bounds__(THREADS, 4)
triad_float4(const float4* __restrict__ x, const float4* __restrict__ z, float4* __restrict__ y,
             float a, int64_t n4, const float* __restrict__ x_tail,
             const float* __restrict__ z_tail, float* __restrict__ y_tail, int64_t tail) {
  int64_t first = blockIdx.x * (int64_t)THREADS * UNROLL + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * THREADS * UNROLL;
  for (int64_t base = first; base < n4; base += stride) {
    // Chunk u of this block's slice is THREADS float4s further on: each load is coalesced.
    float4 xv[UNROLL], zv[UNROLL];
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      int64_t i = base + u * THREADS;
      if (i < n4) {
        xv[u] = x[i];
        zv[u] = z[i];
      }
    }
#pragma unroll
    for (int u = 0; u < UNROLL; ++u) {
      int64_t i = base + u * THREADS;
      if (i < n4) y[i] = fma4(a, xv[u], zv[u]);
    }
  }
  int64_t t = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (t < tail) y_tail[t] = fmaf(a, x_tail[t], z_tail[t]);  // the last n % 4 elements
}

extern "C" AISP_API int launch_triad_scalar(const float* x, const float* z, float* y, float a,
                                            int64_t n, cudaStream_t stream) {
  triad_scalar<<<aisp_ceil_div(n, THREADS), THREADS, 0, stream>>>(x, z, y, a, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_triad_float4(const float* x, const float* z, float* y, float a,
                                            int64_t n, int64_t ctas, cudaStream_t stream) {
  // torch allocations are 256-byte aligned, so x, z and y can be accessed as float4.
  int64_t n4 = n / 4;
  int64_t needed = aisp_ceil_div(n4 > 0 ? n4 : 1, (int64_t)THREADS * UNROLL);
  int64_t blocks = ctas < needed ? ctas : needed;  // no CTA without work (small n)
  triad_float4<<<blocks, THREADS, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<const float4*>(z),
      reinterpret_cast<float4*>(y), a, n4, x + 4 * n4, z + 4 * n4, y + 4 * n4, n % 4);
  return AISP_LAUNCHED();
}
