// fused_l2norm.cu — row-wise L2 normalization y[r, :] = x[r, :] / max(||x[r, :]||_2, eps)
// of a row-major fp32 matrix (what torch.nn.functional.normalize(x, dim=1) computes); the
// optimized side of the fused_l2norm pair (the baseline is F.normalize itself).
//
// F.normalize in eager mode: a row-norm reduction (reads x), then a broadcast division
//   (reads x again, writes y): 3 passes over the matrix.
// Fused (one kernel): one block per row reads the row once into registers, squares and
//   reduces it there, and writes the scaled row: 2 passes (read x, write y).
//
// Requirements (checked by the launcher): cols % 4 == 0 (float4 rows; 16-byte aligned
// rows with torch's allocations) and cols <= 4 * 256 * MAX_VEC.
#include "aisp.cuh"

constexpr int THREADS = 256;  // per block; a multiple of 32
constexpr int MAX_VEC = 4;    // float4s per thread held in registers by the fused kernel
constexpr float EPS = 1e-12f;  // as F.normalize

// Sum of `v` over the block (deterministic order); every thread gets the result.
__device__ __forceinline__ float block_sum(float v) {
  __shared__ float warp_sums[THREADS / 32];
  __shared__ float total;
  const int lane = threadIdx.x % 32, warp = threadIdx.x / 32;
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
  if (lane == 0) warp_sums[warp] = v;
  __syncthreads();
  if (warp == 0) {
    v = lane < THREADS / 32 ? warp_sums[lane] : 0.f;
#pragma unroll
    for (int offset = 16; offset > 0; offset /= 2) v += __shfl_down_sync(0xffffffffu, v, offset);
    if (lane == 0) total = v;
  }
  __syncthreads();
  return total;
}

__device__ __forceinline__ float inv_norm(float sum_sq) { return 1.f / fmaxf(sqrtf(sum_sq), EPS); }

// ---- fused: one kernel, one block per row -----------------------------------------------

__global__ void __launch_bounds__(THREADS) l2norm_fused(const float4* __restrict__ x,
                                                        float4* __restrict__ y, int64_t cols4) {
  const float4* row_in = x + blockIdx.x * cols4;
  float4* row_out = y + blockIdx.x * cols4;
  float4 v[MAX_VEC];
  float acc = 0.f;
#pragma unroll
  for (int k = 0; k < MAX_VEC; ++k) {  // the whole row is loaded before any arithmetic waits
    int64_t j = threadIdx.x + (int64_t)k * THREADS;
    v[k] = j < cols4 ? row_in[j] : make_float4(0.f, 0.f, 0.f, 0.f);
  }
#pragma unroll
  for (int k = 0; k < MAX_VEC; ++k) {  // padding adds +0
    acc = fmaf(v[k].x, v[k].x, acc); acc = fmaf(v[k].y, v[k].y, acc);
    acc = fmaf(v[k].z, v[k].z, acc); acc = fmaf(v[k].w, v[k].w, acc);
  }
  const float inv = inv_norm(block_sum(acc));
#pragma unroll
  for (int k = 0; k < MAX_VEC; ++k) {
    int64_t j = threadIdx.x + (int64_t)k * THREADS;
    if (j < cols4) row_out[j] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
  }
}

// ---- launchers ----------------------------------------------------------------------------

extern "C" AISP_API int launch_l2norm_fused(const float* x, float* y, int64_t rows, int64_t cols,
                                            cudaStream_t stream) {
  if (cols % 4 != 0 || cols / 4 > (int64_t)THREADS * MAX_VEC || rows <= 0 || rows > INT32_MAX)
    return static_cast<int>(cudaErrorInvalidValue);
  l2norm_fused<<<rows, THREADS, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                             reinterpret_cast<float4*>(y), cols / 4);
  return AISP_LAUNCHED();
}
