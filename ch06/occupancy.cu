// occupancy.cu — row-wise softmax over rows of 128 floats, one warp per row; the occupancy pair.
//
// One kernel, two launch configurations. Each warp owns one row: lane l loads floats
// 4l..4l+3 (one 16-byte load; the warp reads the 512-byte row in one go), then two warp
// shuffles reductions (max, then sum of exp) and one 16-byte store. The row index is the
// global warp index, so the kernel is correct for any block size that is a multiple of 32.
//
// launch_softmax_rows_warp32  : <<<rows, 32>>> — one block per row. The hand-picked choice:
//     "a row is a warp's job, so a block is a warp" keeps the indexing trivial and needs no
//     shared memory or inter-warp anything; a competent engineer writes exactly this. The
//     catch is a per-SM limit on resident *blocks*: Hopper holds at most 32 blocks per SM, so
//     32-thread blocks cap the SM at 32 of its 64 warps (50% occupancy), and the GPU launches
//     a million tiny blocks. Each warp has only 512 bytes in flight while it waits for DRAM,
//     so half the warps means about half the bytes in flight per SM.
// launch_softmax_rows_occupancy : the block size cudaOccupancyMaxPotentialBlockSize returns
//     for this kernel (asked once, cached; 1024 for a kernel this light), so 64 warps fit
//     per SM and there are 32x fewer blocks.
//
// Both launches run the same code on the same rows: bit-identical outputs.
#include "aisp.cuh"

constexpr int ROW = 128;  // floats per row = 32 lanes x float4

__global__ void softmax_rows_warp(const float4* __restrict__ x, float4* __restrict__ y,
                                  int64_t rows) {
  int64_t row = (blockIdx.x * (int64_t)blockDim.x + threadIdx.x) / 32;
  int lane = threadIdx.x % 32;
  if (row >= rows) return;  // whole warps exit together: the shuffles below see 32 lanes
  float4 v = x[row * (ROW / 4) + lane];
  float m = fmaxf(fmaxf(v.x, v.y), fmaxf(v.z, v.w));
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, offset));
  v = make_float4(__expf(v.x - m), __expf(v.y - m), __expf(v.z - m), __expf(v.w - m));
  float s = (v.x + v.y) + (v.z + v.w);
#pragma unroll
  for (int offset = 16; offset > 0; offset /= 2) s += __shfl_xor_sync(0xffffffffu, s, offset);
  float inv = 1.0f / s;
  y[row * (ROW / 4) + lane] = make_float4(v.x * inv, v.y * inv, v.z * inv, v.w * inv);
}

static int launch_rows(const float* x, float* y, int64_t rows, int block, cudaStream_t stream) {
  int64_t warps_per_block = block / 32;
  softmax_rows_warp<<<aisp_ceil_div(rows, warps_per_block), block, 0, stream>>>(
      reinterpret_cast<const float4*>(x), reinterpret_cast<float4*>(y), rows);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_softmax_rows_warp32(const float* x, float* y, int64_t rows,
                                                   int64_t row_len, cudaStream_t stream) {
  if (row_len != ROW) return static_cast<int>(cudaErrorInvalidValue);
  return launch_rows(x, y, rows, 32, stream);
}

extern "C" AISP_API int launch_softmax_rows_occupancy(const float* x, float* y, int64_t rows,
                                                      int64_t row_len, cudaStream_t stream) {
  if (row_len != ROW) return static_cast<int>(cudaErrorInvalidValue);
  // The block size that maximizes resident threads per SM for this kernel's registers and
  // shared memory (the runtime walks the candidate sizes); asked once, then cached.
  static const int block = [] {
    int min_grid = 0, size = 0;
    if (cudaOccupancyMaxPotentialBlockSize(&min_grid, &size, softmax_rows_warp, 0, 0) != cudaSuccess)
      size = 256;
    return size >= 32 ? size / 32 * 32 : 32;
  }();
  return launch_rows(x, y, rows, block, stream);
}
