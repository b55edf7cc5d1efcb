// warp_divergence.cu — y[i] = even(x[i]) for even i, odd(x[i]) for odd i; the warp_divergence pair.
//
// Think of a tensor whose even and odd elements hold two kinds of value (interleaved gate /
// value channels, real / imaginary parts), each with its own activation. Here the two
// activations are truncated power series of degree 63, evaluated by Horner's rule with the
// coefficients as FMA immediates (64 FMAs each):
//   even path: Σ_{k<64} x^k / (k+1)          (= -ln(1-x)/x, truncated)
//   odd path : Σ_{k<64} (-1)^k x^k / (2k+1)  (= atan(√x)/√x, truncated)
//
// parity_branch : one thread per element, `if (i % 2 == 0) even(x) else odd(x)`. Lanes of a
//                 warp alternate, so every warp takes both paths: the hardware runs the even
//                 path with the odd lanes masked off, then the odd path with the even lanes
//                 masked off. Each warp issues 128 FMAs to produce 32 results.
// pair_per_thread : branch-free: thread t takes the pair (2t, 2t+1), loads it as one float2,
//                 runs the even path on the first and the odd path on the second, and stores
//                 one float2. All 32 lanes run both paths with no lane masked: 128 FMAs for
//                 64 results, half the instructions per element.
//
// Each element goes through the same FMA sequence in both kernels: bit-identical outputs.
#include "aisp.cuh"

constexpr int TERMS = 64;

__device__ __forceinline__ float even_path(float x) {
  float acc = 1.0f / TERMS;
#pragma unroll
  for (int k = TERMS - 2; k >= 0; --k) acc = fmaf(acc, x, 1.0f / (k + 1));
  return acc;
}

__device__ __forceinline__ float odd_path(float x) {
  float acc = ((TERMS - 1) % 2 ? -1.0f : 1.0f) / (2 * TERMS - 1);
#pragma unroll
  for (int k = TERMS - 2; k >= 0; --k) acc = fmaf(acc, x, (k % 2 ? -1.0f : 1.0f) / (2 * k + 1));
  return acc;
}

__global__ void parity_branch(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  if (i % 2 == 0)
    y[i] = even_path(v);
  else
    y[i] = odd_path(v);
}

__global__ void pair_per_thread(const float2* __restrict__ x, float2* __restrict__ y,
                                int64_t pairs) {
  int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t >= pairs) return;
  float2 v = x[t];  // elements 2t (even) and 2t+1 (odd)
  y[t] = make_float2(even_path(v.x), odd_path(v.y));
}

extern "C" AISP_API int launch_parity_branch(const float* x, float* y, int64_t n,
                                             cudaStream_t stream) {
  parity_branch<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(x, y, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_pair_per_thread(const float* x, float* y, int64_t n,
                                               cudaStream_t stream) {
  if (n % 2 != 0) return static_cast<int>(cudaErrorInvalidValue);  // whole pairs only
  int64_t pairs = n / 2;
  pair_per_thread<<<aisp_ceil_div(pairs, 256), 256, 0, stream>>>(
      reinterpret_cast<const float2*>(x), reinterpret_cast<float2*>(y), pairs);
  return AISP_LAUNCHED();
}
