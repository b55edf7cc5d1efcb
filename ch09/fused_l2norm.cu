// fused_l2norm.cu — row-wise L2 normalization y[r, :] = x[r, :] / max(||x[r, :]||_2, eps)
// of a row-major fp32 matrix (what torch.nn.functional.normalize(x, dim=1) computes); the
// fused_l2norm pair.
//
// Unfused (three kernels, as eager frameworks run it): square writes x*x to a temporary,
//   row_sum reduces each row of the temporary, scale_rows reads x again and divides.
//   HBM traffic: 5 passes over the matrix (read x, write sq, read sq, read x, write y).
// Fused (one kernel): one block per row reads the row once into registers, squares and
//   reduces it there, and writes the scaled row: 2 passes (read x, write y).
//
// Both compute every row's sum in the same order (thread t adds elements 4t..4t+3,
// 4(t+256).., ... then the same block reduction), and the fused kernel rounds each square
// before adding it (__fmul_rn, so it is not contracted into an FMA), exactly as the
// unfused one does when it stores the square: the outputs agree bit for bit.
//
// Requirements (checked by the launchers): cols % 4 == 0 (float4 rows; 16-byte aligned
// rows with torch's allocations) and, for the fused kernel, cols <= 4 * 256 * MAX_VEC.
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

// ---- unfused: three kernels -------------------------------------------------------------

__global__ void square(const float4* __restrict__ x, float4* __restrict__ sq, int64_t n4) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n4) return;
  float4 v = x[i];
  sq[i] = make_float4(v.x * v.x, v.y * v.y, v.z * v.z, v.w * v.w);
}

__global__ void row_sum(const float4* __restrict__ sq, float* __restrict__ sums, int64_t cols4) {
  const float4* row = sq + blockIdx.x * cols4;  // one block per row
  float acc = 0.f;
  for (int64_t j = threadIdx.x; j < cols4; j += THREADS) {
    float4 v = row[j];
    acc += v.x; acc += v.y; acc += v.z; acc += v.w;
  }
  acc = block_sum(acc);
  if (threadIdx.x == 0) sums[blockIdx.x] = acc;
}

// grid (rows, column chunks): the row comes from blockIdx.x, no division per element.
__global__ void scale_rows(const float4* __restrict__ x, const float* __restrict__ sums,
                           float4* __restrict__ y, int64_t cols4) {
  int64_t j = blockIdx.y * (int64_t)blockDim.x + threadIdx.x;
  if (j >= cols4) return;
  const float inv = inv_norm(sums[blockIdx.x]);
  int64_t i = blockIdx.x * cols4 + j;
  float4 v = x[i];
  y[i] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
}

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
  for (int k = 0; k < MAX_VEC; ++k) {  // same order as square + row_sum; padding adds +0
    acc += __fmul_rn(v[k].x, v[k].x); acc += __fmul_rn(v[k].y, v[k].y);
    acc += __fmul_rn(v[k].z, v[k].z); acc += __fmul_rn(v[k].w, v[k].w);
  }
  const float inv = inv_norm(block_sum(acc));
#pragma unroll
  for (int k = 0; k < MAX_VEC; ++k) {
    int64_t j = threadIdx.x + (int64_t)k * THREADS;
    if (j < cols4) row_out[j] = make_float4(v[k].x * inv, v[k].y * inv, v[k].z * inv, v[k].w * inv);
  }
}

// ---- launchers ----------------------------------------------------------------------------

extern "C" AISP_API int launch_l2norm_unfused(const float* x, float* sq, float* sums, float* y,
                                              int64_t rows, int64_t cols, cudaStream_t stream) {
  if (cols % 4 != 0 || rows <= 0 || rows > INT32_MAX)
    return static_cast<int>(cudaErrorInvalidValue);
  const int64_t cols4 = cols / 4, n4 = rows * cols4;
  const auto* x4 = reinterpret_cast<const float4*>(x);
  auto* sq4 = reinterpret_cast<float4*>(sq);
  square<<<aisp_ceil_div(n4, THREADS), THREADS, 0, stream>>>(x4, sq4, n4);
  AISP_CHECK(cudaGetLastError());
  row_sum<<<rows, THREADS, 0, stream>>>(sq4, sums, cols4);
  AISP_CHECK(cudaGetLastError());
  const int64_t chunks = aisp_ceil_div(cols4, THREADS);
  if (chunks > 65535) return static_cast<int>(cudaErrorInvalidValue);
  scale_rows<<<dim3(rows, chunks), THREADS, 0, stream>>>(x4, sums, reinterpret_cast<float4*>(y),
                                                         cols4);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_l2norm_fused(const float* x, float* y, int64_t rows, int64_t cols,
                                            cudaStream_t stream) {
  if (cols % 4 != 0 || cols / 4 > (int64_t)THREADS * MAX_VEC || rows <= 0 || rows > INT32_MAX)
    return static_cast<int>(cudaErrorInvalidValue);
  l2norm_fused<<<rows, THREADS, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                             reinterpret_cast<float4*>(y), cols / 4);
  return AISP_LAUNCHED();
}
