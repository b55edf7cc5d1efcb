// quantization_ilp.cu — y = scale ⊙ (W·x) for an int8 weight W (rows × cols, per-row fp32
// scales) and an fp32 activation vector x: the GEMV of a weight-only int8 layer at decode
// (batch 1). The quantization_ilp pair.
//
// Both kernels: 256-thread blocks, one warp per output row (8 rows per block), the lanes of a
// warp stride over the row, a shuffle reduction at the end, lane 0 applies the row's scale.
// Same launch configuration, same dequantization (an int8 → fp32 conversion per weight).
//
// gemv_int8_one_acc  : each lane loads one int8 weight at a time (k = lane, lane + 32, ...),
//                      converts it and folds it into one accumulator: acc = fma(w, x, acc).
//                      Every FMA waits for the previous one, and a warp's load brings in only
//                      32 bytes of weights.
// gemv_int8_four_acc : each lane loads 16 weights at once (one int4, a 16-byte LDG.128) and
//                      the matching 16 activations (four float4s); the four 32-bit words of
//                      the int4 feed four independent accumulators, added at the end. Same
//                      conversions, same FMA count (+3 adds), different summation order.
//
// The weights are read once and are ~2× the L2: the kernel is memory-bound, so what ILP can
// buy here is bytes in flight — enough outstanding loads per SM to cover HBM latency —
// rather than FMA throughput.
#include "aisp.cuh"

#include <cstdint>

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;  // rows per block
constexpr int VEC = 16;              // int8 weights per 16-byte load

__device__ __forceinline__ float warp_sum(float v) {
#pragma unroll
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void __launch_bounds__(THREADS)
gemv_int8_one_acc(const int8_t* __restrict__ w, const float* __restrict__ scale,
                  const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                  int64_t cols) {
  const int64_t row = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;  // uniform per warp: the shuffles below see whole warps
  const int8_t* w_row = w + row * cols;
  float acc = 0.f;
  for (int64_t k = lane; k < cols; k += 32) acc = fmaf(static_cast<float>(w_row[k]), x[k], acc);
  acc = warp_sum(acc);
  if (lane == 0) y[row] = acc * scale[row];
}

// acc += Σ_{b<4} int8 byte b of `word` · x.{x,y,z,w}, in order: one dependent chain.
__device__ __forceinline__ float dot4(int word, float4 xs, float acc) {
  acc = fmaf(static_cast<float>(static_cast<int8_t>(word)), xs.x, acc);
  acc = fmaf(static_cast<float>(static_cast<int8_t>(word >> 8)), xs.y, acc);
  acc = fmaf(static_cast<float>(static_cast<int8_t>(word >> 16)), xs.z, acc);
  acc = fmaf(static_cast<float>(static_cast<int8_t>(word >> 24)), xs.w, acc);
  return acc;
}

__global__ void __launch_bounds__(THREADS)
gemv_int8_four_acc(const int8_t* __restrict__ w, const float* __restrict__ scale,
                   const float* __restrict__ x, float* __restrict__ y, int64_t rows,
                   int64_t cols) {
  const int64_t row = blockIdx.x * (int64_t)WARPS + threadIdx.x / 32;
  const int lane = threadIdx.x % 32;
  if (row >= rows) return;
  const int4* w_row = reinterpret_cast<const int4*>(w + row * cols);  // cols % 16 == 0
  const float4* x4 = reinterpret_cast<const float4*>(x);
  float acc0 = 0.f, acc1 = 0.f, acc2 = 0.f, acc3 = 0.f;  // four independent chains
  for (int64_t v = lane; v < cols / VEC; v += 32) {
    const int4 packed = w_row[v];  // weights 16v .. 16v+15
    acc0 = dot4(packed.x, x4[4 * v + 0], acc0);
    acc1 = dot4(packed.y, x4[4 * v + 1], acc1);
    acc2 = dot4(packed.z, x4[4 * v + 2], acc2);
    acc3 = dot4(packed.w, x4[4 * v + 3], acc3);
  }
  float acc = warp_sum((acc0 + acc1) + (acc2 + acc3));
  if (lane == 0) y[row] = acc * scale[row];
}

extern "C" AISP_API int launch_gemv_int8_one_acc(const int8_t* w, const float* scale,
                                                 const float* x, float* y, int64_t rows,
                                                 int64_t cols, cudaStream_t stream) {
  gemv_int8_one_acc<<<aisp_ceil_div(rows, WARPS), THREADS, 0, stream>>>(w, scale, x, y, rows,
                                                                        cols);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_gemv_int8_four_acc(const int8_t* w, const float* scale,
                                                  const float* x, float* y, int64_t rows,
                                                  int64_t cols, cudaStream_t stream) {
  // 16-byte loads need 16-byte aligned rows and activations.
  const bool aligned = cols % VEC == 0 && reinterpret_cast<uintptr_t>(w) % 16 == 0 &&
                       reinterpret_cast<uintptr_t>(x) % 16 == 0;
  if (!aligned) return static_cast<int>(cudaErrorInvalidValue);
  gemv_int8_four_acc<<<aisp_ceil_div(rows, WARPS), THREADS, 0, stream>>>(w, scale, x, y, rows,
                                                                         cols);
  return AISP_LAUNCHED();
}
