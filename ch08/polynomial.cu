// polynomial.cu — evaluate p(x) = Σ_{k<TERMS} x^k / (k+1) (a 128-term power series) at every
// element, by Horner's rule; the loop_unrolling pair. Both kernels run the same persistent
// grid-stride loop on the same number of warps and do the same FFMAs in the same order per
// element, so their outputs agree to the last bit. What differs is how much independent work
// a warp has in hand:
//
// poly_one_chain   : one element per loop iteration. Horner is a chain: each FFMA needs the
//                    previous one's result (4 cycles on Hopper), and the next element's load
//                    is not issued until this element is stored. A warp issues one FFMA every
//                    4 cycles at best and sits idle through every load.
// poly_four_chains : the element loop unrolled by four (one float4 per iteration) and the four
//                    Horner chains interleaved: four independent FFMAs per step, so a single
//                    warp can issue every cycle, and one load latency covers four elements.
//
// The compiler unrolls the Horner loop by itself in both kernels (TERMS is a constant and the
// coefficients become FFMA immediates), but unrolling a chain does not make it parallel: the
// SASS of poly_one_chain is 127 FFMAs, each reading the register the previous one wrote.
#include "aisp.cuh"

constexpr int TERMS = 128;
constexpr int THREADS = 256;

__device__ __forceinline__ constexpr float coef(int k) { return 1.0f / static_cast<float>(k + 1); }

__device__ __forceinline__ float horner(float x) {
  float acc = coef(TERMS - 1);
#pragma unroll
  for (int k = TERMS - 2; k >= 0; --k) acc = fmaf(acc, x, coef(k));
  return acc;
}

__global__ void __launch_bounds__(THREADS)
poly_one_chain(const float* __restrict__ x, float* __restrict__ y, int64_t n) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n; i += stride)
    y[i] = horner(x[i]);
}

__global__ void __launch_bounds__(THREADS)
poly_four_chains(const float4* __restrict__ x, float4* __restrict__ y, int64_t n4,
                 const float* __restrict__ x_tail, float* __restrict__ y_tail, int64_t tail) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  int64_t first = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  for (int64_t i = first; i < n4; i += stride) {
    float4 v = x[i];
    float a0 = coef(TERMS - 1), a1 = a0, a2 = a0, a3 = a0;
#pragma unroll
    for (int k = TERMS - 2; k >= 0; --k) {  // four independent chains, one coefficient
      a0 = fmaf(a0, v.x, coef(k));
      a1 = fmaf(a1, v.y, coef(k));
      a2 = fmaf(a2, v.z, coef(k));
      a3 = fmaf(a3, v.w, coef(k));
    }
    y[i] = make_float4(a0, a1, a2, a3);
  }
  if (first < tail) y_tail[first] = horner(x_tail[first]);  // the last n % 4 elements
}

extern "C" AISP_API int launch_poly_one_chain(const float* x, float* y, int64_t n, int64_t ctas,
                                              cudaStream_t stream) {
  poly_one_chain<<<ctas, THREADS, 0, stream>>>(x, y, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_poly_four_chains(const float* x, float* y, int64_t n, int64_t ctas,
                                                cudaStream_t stream) {
  // torch allocations are 256-byte aligned, so x and y can be read and written as float4.
  int64_t n4 = n / 4;
  poly_four_chains<<<ctas, THREADS, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                                 reinterpret_cast<float4*>(y), n4, x + 4 * n4,
                                                 y + 4 * n4, n % 4);
  return AISP_LAUNCHED();
}
