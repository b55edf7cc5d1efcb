// matmul.cu — fp32 C = A @ B (row-major, M x K times K x N); the matmul_tiled pair.
//
// matmul_naive : each thread computes one C element straight from global memory:
//                2K loads per output, reuse left to the caches.
// matmul_tiled : a 32x32 block stages 32x32 tiles of A and B in shared memory, so each
//                element loaded from global memory is reused 32 times from shared memory.
// Both accumulate k in the same order, so the results agree to the last bit.
#include "aisp.cuh"

constexpr int TILE = 32;

__global__ void matmul_naive(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;  // threadIdx.x along N: B and C reads coalesce
  if (row >= M || col >= N) return;
  float acc = 0.f;
  for (int k = 0; k < K; ++k) acc += A[(int64_t)row * K + k] * B[(int64_t)k * N + col];
  C[(int64_t)row * N + col] = acc;
}

__global__ void matmul_tiled(const float* __restrict__ A, const float* __restrict__ B,
                             float* __restrict__ C, int M, int N, int K) {
  __shared__ float As[TILE][TILE];
  __shared__ float Bs[TILE][TILE];
  int row = blockIdx.y * TILE + threadIdx.y;
  int col = blockIdx.x * TILE + threadIdx.x;
  float acc = 0.f;
  for (int k0 = 0; k0 < K; k0 += TILE) {
    int ak = k0 + threadIdx.x, bk = k0 + threadIdx.y;
    As[threadIdx.y][threadIdx.x] = (row < M && ak < K) ? A[(int64_t)row * K + ak] : 0.f;
    Bs[threadIdx.y][threadIdx.x] = (bk < K && col < N) ? B[(int64_t)bk * N + col] : 0.f;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < TILE; ++k) acc += As[threadIdx.y][k] * Bs[k][threadIdx.x];
    __syncthreads();
  }
  if (row < M && col < N) C[(int64_t)row * N + col] = acc;
}

static dim3 grid_for(int M, int N) { return dim3((N + TILE - 1) / TILE, (M + TILE - 1) / TILE); }

extern "C" AISP_API int launch_matmul_naive(const float* A, const float* B, float* C, int64_t M,
                                            int64_t N, int64_t K, cudaStream_t stream) {
  matmul_naive<<<grid_for(M, N), dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_matmul_tiled(const float* A, const float* B, float* C, int64_t M,
                                            int64_t N, int64_t K, cudaStream_t stream) {
  matmul_tiled<<<grid_for(M, N), dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
  return AISP_LAUNCHED();
}
