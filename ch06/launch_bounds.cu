// launch_bounds.cu — a register-heavy projection Y = W·X (fp32); the launch_bounds pair.
//
// X is k_dim x n (feature-major: row k holds feature k of all n columns), W is OUT x k_dim
// (stored transposed, k_dim x OUT, so a step reads OUT contiguous weights), Y is OUT x n.
// One thread owns one column i: it keeps OUT = 112 running sums in registers and, for each
// k, loads x[k][i] (coalesced over the warp) and does 112 FMAs with weights broadcast from
// shared memory. 112 live accumulators per thread: a register-heavy kernel.
//
// project_unbounded : no launch bounds. ptxas (nvcc 13.0, sm_90a) gives it 164 registers.
//                     256 threads x 164 registers = 41,984 of the SM's 65,536, so one block
//                     (8 warps, 12.5% occupancy) fits per SM. Every k step starts with a DRAM
//                     load each warp must wait out, with one other warp per scheduler to
//                     switch to meanwhile.
// project_bounded   : the same code with __launch_bounds__(256, 2): "blocks of at most 256
//                     threads, and fit 2 of them per SM". ptxas must stay within 65,536 / 512
//                     = 128 registers, and does, with 0 bytes of spill: it keeps one shared-
//                     memory load in flight instead of ~8 and stops precomputing store
//                     addresses. Two blocks (16 warps, 25%) fit per SM.
//
// The window is narrow and compiler-specific: with nvcc 13.0, OUT = 108 already fits in 128
// registers unbounded, and OUT = 116 spills at 128. Re-check with `-Xptxas -v` after edits.
//
// Same FMAs in the same order, so both kernels give bit-identical outputs.
#include "aisp.cuh"

constexpr int OUT = 112;     // outputs per column (accumulators per thread); a multiple of 4
constexpr int K_MAX = 64;    // largest k_dim the shared-memory weight tile holds (28 KB)
constexpr int THREADS = 256;

__device__ __forceinline__ void project_column(const float* __restrict__ x,
                                               const float* __restrict__ wt,
                                               float* __restrict__ y, int64_t n, int k_dim) {
  __shared__ __align__(16) float w[K_MAX * OUT];
#pragma unroll 4
  for (int t = threadIdx.x; t < k_dim * OUT / 4; t += blockDim.x)  // stage W once per block
    reinterpret_cast<float4*>(w)[t] = reinterpret_cast<const float4*>(wt)[t];
  __syncthreads();

  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float acc[OUT];
#pragma unroll
  for (int j = 0; j < OUT; ++j) acc[j] = 0.f;
  for (int k = 0; k < k_dim; ++k) {
    float v = x[k * n + i];
    const float4* wk = reinterpret_cast<const float4*>(w + k * OUT);  // broadcast reads
#pragma unroll
    for (int j = 0; j < OUT / 4; ++j) {
      float4 c = wk[j];
      acc[4 * j + 0] = fmaf(c.x, v, acc[4 * j + 0]);
      acc[4 * j + 1] = fmaf(c.y, v, acc[4 * j + 1]);
      acc[4 * j + 2] = fmaf(c.z, v, acc[4 * j + 2]);
      acc[4 * j + 3] = fmaf(c.w, v, acc[4 * j + 3]);
    }
  }
#pragma unroll
  for (int j = 0; j < OUT; ++j) y[j * n + i] = acc[j];
}

__global__ void project_unbounded(const float* __restrict__ x, const float* __restrict__ wt,
                                  float* __restrict__ y, int64_t n, int k_dim) {
  project_column(x, wt, y, n, k_dim);
}

__global__ void __launch_bounds__(THREADS, 2)
project_bounded(const float* __restrict__ x, const float* __restrict__ wt,
                float* __restrict__ y, int64_t n, int k_dim) {
  project_column(x, wt, y, n, k_dim);
}

static int check_shape(int64_t out, int64_t k_dim) {
  return (out == OUT && k_dim >= 1 && k_dim <= K_MAX) ? 0 : static_cast<int>(cudaErrorInvalidValue);
}

extern "C" AISP_API int launch_project_unbounded(const float* x, const float* wt, float* y,
                                                 int64_t n, int64_t k_dim, int64_t out,
                                                 cudaStream_t stream) {
  if (int err = check_shape(out, k_dim)) return err;
  project_unbounded<<<aisp_ceil_div(n, THREADS), THREADS, 0, stream>>>(x, wt, y, n, (int)k_dim);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_project_bounded(const float* x, const float* wt, float* y,
                                               int64_t n, int64_t k_dim, int64_t out,
                                               cudaStream_t stream) {
  if (int err = check_shape(out, k_dim)) return err;
  project_bounded<<<aisp_ceil_div(n, THREADS), THREADS, 0, stream>>>(x, wt, y, n, (int)k_dim);
  return AISP_LAUNCHED();
}
