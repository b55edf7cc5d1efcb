// uneven_partition.cu — row sums of a CSR array whose row lengths follow a power law.
//
// y[r] = sum of vals[offsets[r] .. offsets[r+1]). Both kernels give every warp an equal
// count of something; what they count differs:
// launch_rows_per_warp   : an equal count of ROWS (one row per warp, the classic CSR-vector
//                          kernel). A warp given a hub row of 10^5 elements runs long after
//                          the rest of the grid is done.
// launch_nnz_per_warp    : an equal count of ELEMENTS (SLICE per warp). The prefix sum of
//                          the row costs is the CSR offsets array itself, so a warp finds the
//                          first row of its slice by binary search in it, on the GPU; then it
//                          walks the rows its slice covers. A row cut by a slice boundary is
//                          finished with atomicAdd (y is zeroed first); a row inside one slice
//                          is stored. Empty rows stay 0.
#include "aisp.cuh"

constexpr int THREADS = 256;
constexpr int WARPS = THREADS / 32;
constexpr int64_t SLICE = 1024;  // elements per warp: 32 per lane

__device__ __forceinline__ float warp_sum(float v) {
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_xor_sync(0xffffffffu, v, offset);
  return v;
}

__global__ void __launch_bounds__(THREADS)
rows_per_warp(const int64_t* __restrict__ offsets, const float* __restrict__ vals,
              float* __restrict__ y, int64_t rows) {
  int64_t row = (blockIdx.x * (int64_t)THREADS + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  if (row >= rows) return;  // whole warps leave together
  float s = 0.0f;
  for (int64_t j = offsets[row] + lane; j < offsets[row + 1]; j += 32) s += vals[j];
  s = warp_sum(s);
  if (lane == 0) y[row] = s;
}

extern "C" AISP_API int launch_rows_per_warp(const int64_t* offsets, const float* vals, float* y,
                                             int64_t rows, cudaStream_t stream) {
  int64_t blocks = aisp_ceil_div(rows > 0 ? rows : 1, WARPS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  rows_per_warp<<<blocks, THREADS, 0, stream>>>(offsets, vals, y, rows);
  return AISP_LAUNCHED();
}

__global__ void __launch_bounds__(THREADS)
nnz_per_warp(const int64_t* __restrict__ offsets, const float* __restrict__ vals,
             float* __restrict__ y, int64_t rows, int64_t nnz) {
  int64_t warp = (blockIdx.x * (int64_t)THREADS + threadIdx.x) / 32;
  int lane = threadIdx.x & 31;
  int64_t begin = warp * SLICE;
  if (begin >= nnz) return;
  int64_t end = min(begin + SLICE, nnz);
  // The last row starting at or before `begin` (that row is not empty: offsets[r+1] > begin).
  int64_t lo = 0, hi = rows - 1;
  while (lo < hi) {
    int64_t mid = (lo + hi + 1) / 2;
    if (offsets[mid] <= begin) lo = mid; else hi = mid - 1;
  }
  for (int64_t r = lo; r < rows; ++r) {
    int64_t row_begin = offsets[r], row_end = offsets[r + 1];
    if (row_begin >= end) break;
    int64_t from = max(row_begin, begin), to = min(row_end, end);
    if (from >= to) continue;  // an empty row: y[r] stays 0
    float s = 0.0f;
    for (int64_t j = from + lane; j < to; j += 32) s += vals[j];
    s = warp_sum(s);
    if (lane == 0) {
      if (row_begin >= begin && row_end <= end) y[r] = s;  // the whole row is in this slice
      else atomicAdd(&y[r], s);                            // other slices add their parts
    }
  }
}

extern "C" AISP_API int launch_nnz_per_warp(const int64_t* offsets, const float* vals, float* y,
                                            int64_t rows, int64_t nnz, cudaStream_t stream) {
  AISP_CHECK(cudaMemsetAsync(y, 0, rows * sizeof(float), stream));
  if (nnz <= 0 || rows <= 0) return AISP_LAUNCHED();
  int64_t blocks = aisp_ceil_div(aisp_ceil_div(nnz, SLICE), WARPS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  nnz_per_warp<<<blocks, THREADS, 0, stream>>>(offsets, vals, y, rows, nnz);
  return AISP_LAUNCHED();
}
