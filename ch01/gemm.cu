// gemm.cu — a batch of small fp32 GEMMs (C[b] = A[b] · B[b], row-major), launched three ways.
//
// Every variant runs the same 32×32 shared-memory tile code (gemm_tile below), so the
// outputs are bit-for-bit identical and only the launch scheme differs:
//   launch_gemm_per_matrix       one launch per matrix, looped on the host
//   launch_gemm_batched          one launch; blockIdx.z indexes arrays of matrix pointers
//                                (the cublasSgemmBatched interface)
//   launch_gemm_strided_batched  one launch; matrix b sits at base + b * stride
//                                (the cublasSgemmStridedBatched interface)
// A 256×256 product is only 64 blocks: one launch cannot fill an H100's 132 SMs, and each
// launch pays its own launch latency and tail. One launch over the batch fills the GPU.
#include "aisp.cuh"

constexpr int TILE = 32;

// One TILE×TILE block computes the tile (blockIdx.y, blockIdx.x) of C = A · B.
// Out-of-range rows/columns load zeros, so any M, N, K works.
__device__ __forceinline__ void gemm_tile(const float* __restrict__ A,
                                          const float* __restrict__ B,
                                          float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  const int ty = threadIdx.y, tx = threadIdx.x;
  const int row = blockIdx.y * TILE + ty;
  const int col = blockIdx.x * TILE + tx;
  float acc = 0.0f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    // Consecutive threads (tx) read consecutive addresses of A and B: coalesced loads.
    As[ty][tx] = (row < M && k0 + tx < K) ? A[static_cast<int64_t>(row) * K + k0 + tx] : 0.0f;
    Bs[ty][tx] = (k0 + ty < K && col < N) ? B[static_cast<int64_t>(k0 + ty) * N + col] : 0.0f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[ty][k] * Bs[k][tx];
    __syncthreads();  // the next iteration overwrites the tiles
  }
  if (row < M && col < N) C[static_cast<int64_t>(row) * N + col] = acc;
}

__global__ void gemm_kernel(const float* __restrict__ A, const float* __restrict__ B,
                            float* __restrict__ C, int M, int N, int K) {
  gemm_tile(A, B, C, M, N, K);
}

__global__ void gemm_batched_kernel(const float* const* __restrict__ A,
                                    const float* const* __restrict__ B,
                                    float* const* __restrict__ C, int M, int N, int K) {
  const int b = blockIdx.z;
  gemm_tile(A[b], B[b], C[b], M, N, K);
}

__global__ void gemm_strided_batched_kernel(const float* __restrict__ A, int64_t stride_a,
                                            const float* __restrict__ B, int64_t stride_b,
                                            float* __restrict__ C, int64_t stride_c,
                                            int M, int N, int K) {
  const int64_t b = blockIdx.z;
  gemm_tile(A + b * stride_a, B + b * stride_b, C + b * stride_c, M, N, K);
}

// The grid for one matrix; false when the sizes do not fit the kernels' int indexing
// or the grid limits (gridDim.y and gridDim.z are at most 65535).
static bool gemm_grid(int64_t batch, int64_t M, int64_t N, int64_t K, dim3* grid) {
  if (batch <= 0 || M <= 0 || N <= 0 || K <= 0 || batch > 65535) return false;
  if (M > INT32_MAX || N > INT32_MAX || K > INT32_MAX) return false;
  const int64_t gx = aisp_ceil_div(N, TILE), gy = aisp_ceil_div(M, TILE);
  if (gy > 65535 || gx > INT32_MAX) return false;
  *grid = dim3(static_cast<unsigned>(gx), static_cast<unsigned>(gy), 1);
  return true;
}

extern "C" AISP_API int launch_gemm_per_matrix(const float* A, const float* B, float* C,
                                               int64_t batch, int64_t M, int64_t N, int64_t K,
                                               cudaStream_t stream) {
  dim3 grid;
  if (!gemm_grid(batch, M, N, K, &grid)) return static_cast<int>(cudaErrorInvalidValue);
  const dim3 block(TILE, TILE);
  // What looping over a list of matrices does: `batch` launches of 64 blocks each.
  for (int64_t b = 0; b < batch; ++b) {
    gemm_kernel<<<grid, block, 0, stream>>>(A + b * M * K, B + b * K * N, C + b * M * N,
                                            static_cast<int>(M), static_cast<int>(N),
                                            static_cast<int>(K));
    AISP_CHECK(cudaGetLastError());  // stop at the first bad launch; does not synchronize
  }
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_gemm_batched(const float* const* A_array,
                                            const float* const* B_array,
                                            float* const* C_array, int64_t batch, int64_t M,
                                            int64_t N, int64_t K, cudaStream_t stream) {
  dim3 grid;
  if (!gemm_grid(batch, M, N, K, &grid)) return static_cast<int>(cudaErrorInvalidValue);
  grid.z = static_cast<unsigned>(batch);
  gemm_batched_kernel<<<grid, dim3(TILE, TILE), 0, stream>>>(
      A_array, B_array, C_array, static_cast<int>(M), static_cast<int>(N), static_cast<int>(K));
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_gemm_strided_batched(const float* A, int64_t stride_a,
                                                    const float* B, int64_t stride_b, float* C,
                                                    int64_t stride_c, int64_t batch, int64_t M,
                                                    int64_t N, int64_t K, cudaStream_t stream) {
  dim3 grid;
  if (!gemm_grid(batch, M, N, K, &grid)) return static_cast<int>(cudaErrorInvalidValue);
  grid.z = static_cast<unsigned>(batch);
  gemm_strided_batched_kernel<<<grid, dim3(TILE, TILE), 0, stream>>>(
      A, stride_a, B, stride_b, C, stride_c, static_cast<int>(M), static_cast<int>(N),
      static_cast<int>(K));
  return AISP_LAUNCHED();
}
