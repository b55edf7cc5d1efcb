// lookup.cu — embedding-style gather: out[i, :] = table[index[i], :] (fp32, dim 128).
//
// gather_scalar   : one thread per output float, plain (generic, coherent) loads of the
//                   index and the table; a warp moves one 128-byte slice of a row.
// gather_rows_ldg : one warp per output row; the index is read once per warp and the row
//                   moves as 16-byte float4 loads through the read-only path (__ldg,
//                   LDG.E.128.CONSTANT in SASS), which skips coherence work for data the
//                   kernel never writes and puts 4x the bytes in flight per thread.
#include "aisp.cuh"

__global__ void gather_scalar(const float* table, const int64_t* index, float* out,
                              int64_t rows, int64_t dim) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= rows * dim) return;
  int64_t r = i / dim, d = i % dim;
  out[i] = table[index[r] * dim + d];
}

__global__ void gather_rows_ldg(const float4* __restrict__ table, const int64_t* __restrict__ index,
                                float4* __restrict__ out, int64_t rows, int64_t dim4) {
  int64_t warp = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (warp >= rows) return;
  int64_t src = __ldg(index + warp) * dim4;
  for (int64_t d = lane; d < dim4; d += 32) out[warp * dim4 + d] = __ldg(table + src + d);
}

extern "C" AISP_API int launch_gather_scalar(const float* table, const int64_t* index, float* out,
                                             int64_t rows, int64_t dim, cudaStream_t stream) {
  gather_scalar<<<aisp_ceil_div(rows * dim, 256), 256, 0, stream>>>(table, index, out, rows, dim);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_gather_rows_ldg(const float* table, const int64_t* index,
                                               float* out, int64_t rows, int64_t dim,
                                               cudaStream_t stream) {
  if (dim % 4 != 0) return static_cast<int>(cudaErrorInvalidValue);  // rows must be float4s
  gather_rows_ldg<<<aisp_ceil_div(rows * 32, 256), 256, 0, stream>>>(
      reinterpret_cast<const float4*>(table), index, reinterpret_cast<float4*>(out), rows, dim / 4);
  return AISP_LAUNCHED();
}
