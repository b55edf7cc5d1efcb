// transpose.cu — out (cols x rows) = in (rows x cols)ᵀ, fp32; the transpose pair.
//
// Both kernels use 32x8 thread blocks, each moving a 32x32 tile (4 elements per thread).
// transpose_naive      : reads rows (coalesced) and writes columns: each warp's 32 stores
//                        land 4*rows bytes apart, one 32-byte sector each.
// transpose_smem_tiled : stages the tile in shared memory and writes it back row by row,
//                        so both reads and writes coalesce. The tile is [32][33]: the
//                        padding column shifts each row by one bank, so reading a tile
//                        column hits 32 different banks instead of one (no 32-way conflict).
#include "aisp.cuh"

constexpr int TILE = 32, ROWS_PER_PASS = 8;

__global__ void transpose_naive(const float* __restrict__ in, float* __restrict__ out,
                                int rows, int cols) {
  int x = blockIdx.x * TILE + threadIdx.x;  // column in `in`
  int y0 = blockIdx.y * TILE + threadIdx.y;
  for (int dy = 0; dy < TILE; dy += ROWS_PER_PASS) {
    int y = y0 + dy;
    if (x < cols && y < rows) out[(int64_t)x * rows + y] = in[(int64_t)y * cols + x];
  }
}

__global__ void transpose_smem_tiled(const float* __restrict__ in, float* __restrict__ out,
                                     int rows, int cols) {
  __shared__ float tile[TILE][TILE + 1];
  int x = blockIdx.x * TILE + threadIdx.x;
  int y0 = blockIdx.y * TILE + threadIdx.y;
  for (int dy = 0; dy < TILE; dy += ROWS_PER_PASS) {
    int y = y0 + dy;
    if (x < cols && y < rows) tile[threadIdx.y + dy][threadIdx.x] = in[(int64_t)y * cols + x];
  }
  __syncthreads();
  int ox = blockIdx.y * TILE + threadIdx.x;  // column in `out` = row in `in`
  int oy0 = blockIdx.x * TILE + threadIdx.y;
  for (int dy = 0; dy < TILE; dy += ROWS_PER_PASS) {
    int oy = oy0 + dy;
    if (ox < rows && oy < cols) out[(int64_t)oy * rows + ox] = tile[threadIdx.x][threadIdx.y + dy];
  }
}

static dim3 grid_for(int rows, int cols) {
  return dim3((cols + TILE - 1) / TILE, (rows + TILE - 1) / TILE);
}

extern "C" AISP_API int launch_transpose_naive(const float* in, float* out, int64_t rows,
                                               int64_t cols, cudaStream_t stream) {
  AISP_REQUIRE_FITS(rows, 65535LL * TILE);  // the kernels index with int; grid.y ≤ 65535
  AISP_REQUIRE_FITS(cols, INT32_MAX - TILE);
  transpose_naive<<<grid_for(rows, cols), dim3(TILE, ROWS_PER_PASS), 0, stream>>>(in, out, rows, cols);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_transpose_smem_tiled(const float* in, float* out, int64_t rows,
                                                    int64_t cols, cudaStream_t stream) {
  AISP_REQUIRE_FITS(rows, 65535LL * TILE);
  AISP_REQUIRE_FITS(cols, INT32_MAX - TILE);
  transpose_smem_tiled<<<grid_for(rows, cols), dim3(TILE, ROWS_PER_PASS), 0, stream>>>(in, out, rows, cols);
  return AISP_LAUNCHED();
}
