// copy.cu — three ways to copy n floats; used by the copy_coalescing and copy_vectorized pairs.
//
// copy_column_walk : consecutive threads touch elements `cols` apart (a column-order walk of a
//                    row-major matrix): every 4-byte access pulls its own 32-byte sector.
// copy_scalar      : consecutive threads touch consecutive floats: one 128-byte line per warp.
// copy_float2      : the same, 8 bytes per thread per access (half-way: 2x the bytes in flight).
// copy_float4      : the same, 16 bytes per thread per access, grid-stride: 4x fewer
//                    instructions and 4x more bytes in flight per thread.
// copy_scalar_ilp4 : 4-byte accesses again, but four independent loads per thread before any
//                    store: float4's bytes in flight with scalar's instruction width, which
//                    separates the two explanations of float4's gain.
#include "aisp.cuh"

__global__ void copy_column_walk(const float* __restrict__ in, float* __restrict__ out,
                                 int64_t rows, int64_t cols) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= rows * cols) return;
  int64_t r = i % rows, c = i / rows;  // thread i walks down column c
  out[r * cols + c] = in[r * cols + c];
}

__global__ void copy_scalar(const float* __restrict__ in, float* __restrict__ out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) out[i] = in[i];
}

__global__ void copy_scalar_ilp4(const float* __restrict__ in, float* __restrict__ out,
                                 int64_t n) {
  int64_t base = blockIdx.x * (int64_t)blockDim.x * 4 + threadIdx.x;
  float v[4];
#pragma unroll
  for (int k = 0; k < 4; ++k) {  // the four loads issue back to back: all in flight at once
    int64_t i = base + k * (int64_t)blockDim.x;  // coalesced: a warp reads 128 B per k
    v[k] = i < n ? in[i] : 0.f;
  }
#pragma unroll
  for (int k = 0; k < 4; ++k) {
    int64_t i = base + k * (int64_t)blockDim.x;
    if (i < n) out[i] = v[k];
  }
}

__global__ void copy_float2(const float2* __restrict__ in, float2* __restrict__ out, int64_t n2,
                            const float* __restrict__ in_tail, float* __restrict__ out_tail,
                            int64_t tail) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n2; i += stride)
    out[i] = in[i];
  int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t < tail) out_tail[t] = in_tail[t];  // the last float when n is odd
}

__global__ void copy_float4(const float4* __restrict__ in, float4* __restrict__ out, int64_t n4,
                            const float* __restrict__ in_tail, float* __restrict__ out_tail,
                            int64_t tail) {
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x; i < n4; i += stride)
    out[i] = in[i];
  int64_t t = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (t < tail) out_tail[t] = in_tail[t];  // the last n % 4 floats
}

extern "C" AISP_API int launch_copy_column_walk(const float* in, float* out, int64_t rows,
                                                int64_t cols, cudaStream_t stream) {
  copy_column_walk<<<aisp_ceil_div(rows * cols, 256), 256, 0, stream>>>(in, out, rows, cols);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_copy_scalar(const float* in, float* out, int64_t n,
                                           cudaStream_t stream) {
  copy_scalar<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(in, out, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_copy_float4(const float* in, float* out, int64_t n,
                                           cudaStream_t stream) {
  // torch allocations are 256-byte aligned, so in/out can be read as float4.
  int64_t n4 = n / 4, tail = n % 4;
  int64_t blocks = aisp_ceil_div(n4 > 0 ? n4 : 1, 256);
  copy_float4<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float4*>(in),
                                          reinterpret_cast<float4*>(out), n4, in + 4 * n4,
                                          out + 4 * n4, tail);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_copy_float2(const float* in, float* out, int64_t n,
                                           cudaStream_t stream) {
  int64_t n2 = n / 2, tail = n % 2;
  int64_t blocks = aisp_ceil_div(n2 > 0 ? n2 : 1, 256);
  copy_float2<<<blocks, 256, 0, stream>>>(reinterpret_cast<const float2*>(in),
                                          reinterpret_cast<float2*>(out), n2, in + 2 * n2,
                                          out + 2 * n2, tail);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_copy_scalar_ilp4(const float* in, float* out, int64_t n,
                                                cudaStream_t stream) {
  copy_scalar_ilp4<<<aisp_ceil_div(n, 4 * 256), 256, 0, stream>>>(in, out, n);
  return AISP_LAUNCHED();
}
