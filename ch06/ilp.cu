// ilp.cu — evaluate one long polynomial p(x) = Σ_{k<K} c_k·x^k at n points (fp32); the ilp pair.
//
// One thread per point. The coefficients stream through shared memory in chunks of 8192
// (32 KB), highest degree first; every thread reads the same float4 of coefficients (a
// broadcast) and folds it into its running value.
//
// horner_one_chain  : Horner's rule, acc = acc·x + c_k: every FMA needs the previous one's
//                     result, so a warp can issue one FMA per FMA latency (~4 cycles).
// horner_four_chains: p(x) = q0(y) + x·q1(y) + x²·q2(y) + x³·q3(y) with y = x⁴ and
//                     q_j(y) = Σ_m c_{4m+j}·y^m. The four Horner chains q_j are independent,
//                     so a warp issues four FMAs back to back; three FMAs combine them at the
//                     end. Same loads, same FMA count (+5), different rounding.
//
// Why it matters here: n = 32768 points is 1024 warps, under 2 per warp scheduler on a
// 132-SM H100, and hiding a 4-cycle dependency needs 4 issuing warps per scheduler. When
// the problem (or a kernel's registers / shared memory) caps the warps, the independence
// has to come from inside each thread. With 16 warps per scheduler the two would tie.
#include "aisp.cuh"

constexpr int THREADS = 256;
constexpr int CHUNK = 8192;                        // coefficients per shared-memory pass
constexpr int CHUNK4 = CHUNK / 4;                  // float4s per pass
constexpr int STAGE_PER_THREAD = CHUNK4 / THREADS;  // float4s each thread copies per pass

// Copy coefficients [top - CHUNK, top) into shared memory; all threads, between barriers.
__device__ __forceinline__ void stage_chunk(float4* chunk, const float* coef, int64_t top) {
  const float4* src = reinterpret_cast<const float4*>(coef + (top - CHUNK));
  __syncthreads();  // everyone is done with the previous chunk
#pragma unroll
  for (int v = 0; v < STAGE_PER_THREAD; ++v) chunk[threadIdx.x + v * THREADS] = src[threadIdx.x + v * THREADS];
  __syncthreads();
}

__global__ void __launch_bounds__(THREADS)
horner_one_chain(const float* __restrict__ coef, int64_t k_len, const float* __restrict__ xs,
                 float* __restrict__ ys, int64_t n) {
  __shared__ float4 chunk[CHUNK4];
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  float x = i < n ? xs[i] : 0.f;  // threads past n still help stage coefficients
  float acc = 0.f;
  for (int64_t top = k_len; top > 0; top -= CHUNK) {
    stage_chunk(chunk, coef, top);
#pragma unroll 8
    for (int m = CHUNK4 - 1; m >= 0; --m) {
      float4 c = chunk[m];  // c.x..c.w = c_{b+4m} .. c_{b+4m+3}
      acc = fmaf(acc, x, c.w);
      acc = fmaf(acc, x, c.z);
      acc = fmaf(acc, x, c.y);
      acc = fmaf(acc, x, c.x);
    }
  }
  if (i < n) ys[i] = acc;
}

__global__ void __launch_bounds__(THREADS)
horner_four_chains(const float* __restrict__ coef, int64_t k_len, const float* __restrict__ xs,
                   float* __restrict__ ys, int64_t n) {
  __shared__ float4 chunk[CHUNK4];
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  float x = i < n ? xs[i] : 0.f;
  float x2 = x * x, y = x2 * x2;
  float q0 = 0.f, q1 = 0.f, q2 = 0.f, q3 = 0.f;
  for (int64_t top = k_len; top > 0; top -= CHUNK) {
    stage_chunk(chunk, coef, top);
#pragma unroll 8
    for (int m = CHUNK4 - 1; m >= 0; --m) {
      float4 c = chunk[m];  // one coefficient for each chain: independent FMAs
      q3 = fmaf(q3, y, c.w);
      q2 = fmaf(q2, y, c.z);
      q1 = fmaf(q1, y, c.y);
      q0 = fmaf(q0, y, c.x);
    }
  }
  if (i < n) ys[i] = fmaf(fmaf(fmaf(q3, x, q2), x, q1), x, q0);
}

// k_len must be a positive multiple of CHUNK (8192).
static int check_k(int64_t k_len) {
  return (k_len > 0 && k_len % CHUNK == 0) ? 0 : static_cast<int>(cudaErrorInvalidValue);
}

extern "C" AISP_API int launch_horner_one_chain(const float* coef, int64_t k_len, const float* xs,
                                                float* ys, int64_t n, cudaStream_t stream) {
  if (int err = check_k(k_len)) return err;
  horner_one_chain<<<aisp_ceil_div(n, THREADS), THREADS, 0, stream>>>(coef, k_len, xs, ys, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_horner_four_chains(const float* coef, int64_t k_len,
                                                  const float* xs, float* ys, int64_t n,
                                                  cudaStream_t stream) {
  if (int err = check_k(k_len)) return err;
  horner_four_chains<<<aisp_ceil_div(n, THREADS), THREADS, 0, stream>>>(coef, k_len, xs, ys, n);
  return AISP_LAUNCHED();
}
