// micro_tiling_matmul.cu — fp32 C = A @ B (row-major, M x K times K x N); the
// micro_tiling_matmul pair.
//
// matmul_tiled : ch07's kernel. A 32x32 block stages 32x32 tiles of A and B in shared
//                memory; each thread computes ONE output, so every FMA needs two
//                shared-memory loads (LDS): the SM's shared-memory bandwidth, not its FMA
//                units, sets the speed (arithmetic intensity 0.5 FMA per loaded float).
// matmul_micro : register blocking. A 256-thread block computes a 128x128 tile of C; each
//                thread owns an 8x8 micro-tile of it in 64 accumulator registers. Per k it
//                loads 8 values of A and 8 of B from shared memory (4 x LDS.128) and does
//                8 x 8 = 64 FMAs with them: 4 FMAs per loaded float instead of 0.5. The
//                block tile also cuts global/L2 traffic: each element loaded into shared
//                memory serves 128 outputs instead of 32.
//
// Same k order in both: every output is one fp32 accumulator updated as
// acc = fma(a[k], b[k], acc) for k = 0, 1, ..., K-1, so the two agree bit for bit.
//
// matmul_micro requires M % 128 == 0, N % 128 == 0, K % 8 == 0 (checked by its launcher;
// the book's version keeps edge handling out of the listing) and 16-byte aligned rows,
// which contiguous torch tensors with those sizes have.
#include "aisp.cuh"

// ---- baseline: ch07's 32x32 shared-memory tiled kernel (copied, not shared across chapters)

constexpr int TILE = 32;

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

// ---- optimized: 128x128 block tile, 8x8 register micro-tile per thread --------------------

constexpr int BM = 128, BN = 128, BK = 8;  // block tile (BK: k-slice staged per iteration)
constexpr int TM = 8, TN = 8;              // micro-tile per thread
constexpr int MICRO_THREADS = (BM / TM) * (BN / TN);  // 16 x 16 = 256
constexpr int A_PAD = 4;  // keeps the transposed A stores conflict-free, rows 16-byte aligned

static_assert(BM * BK / 4 == MICRO_THREADS, "one float4 of A per thread per k-slice");
static_assert(BK * BN / 4 == MICRO_THREADS, "one float4 of B per thread per k-slice");

__global__ void __launch_bounds__(MICRO_THREADS)
matmul_micro(const float* __restrict__ A, const float* __restrict__ B, float* __restrict__ C,
             int M, int N, int K) {
  // A's tile is stored transposed (k-major), so a thread's 8 A values for one k are
  // contiguous and load as two float4, like its 8 B values.
  __shared__ __align__(16) float As[BK][BM + A_PAD];
  __shared__ __align__(16) float Bs[BK][BN];

  const int tid = threadIdx.x;
  const int tx = tid % (BN / TN), ty = tid / (BN / TN);  // position in the 16x16 thread grid
  const int row0 = blockIdx.y * BM, col0 = blockIdx.x * BN;

  // Loaders: A tile is 128 rows x 8 k = 2 float4 per row; B tile is 8 k x 128 cols = 32
  // float4 per row (a warp reads 512 contiguous bytes).
  const int a_row = tid / (BK / 4), a_k = (tid % (BK / 4)) * 4;
  const int b_k = tid / (BN / 4), b_col = (tid % (BN / 4)) * 4;
  const float* a_src = A + (int64_t)(row0 + a_row) * K + a_k;
  const float* b_src = B + (int64_t)b_k * N + col0 + b_col;

  // A thread's rows are ty*4 + {0..3} and 64 + ty*4 + {0..3} (columns likewise with tx):
  // two groups of 4 so that a quarter-warp's LDS.128 / STG.128 touch 128 contiguous bytes.
  float acc[TM][TN];
#pragma unroll
  for (int i = 0; i < TM; ++i)
#pragma unroll
    for (int j = 0; j < TN; ++j) acc[i][j] = 0.f;

  for (int k0 = 0; k0 < K; k0 += BK) {
    const float4 av = *reinterpret_cast<const float4*>(a_src + k0);
    const float4 bv = *reinterpret_cast<const float4*>(b_src + (int64_t)k0 * N);
    As[a_k + 0][a_row] = av.x;
    As[a_k + 1][a_row] = av.y;
    As[a_k + 2][a_row] = av.z;
    As[a_k + 3][a_row] = av.w;
    *reinterpret_cast<float4*>(&Bs[b_k][b_col]) = bv;
    __syncthreads();
#pragma unroll
    for (int k = 0; k < BK; ++k) {
      const float4 a_lo = *reinterpret_cast<const float4*>(&As[k][ty * 4]);
      const float4 a_hi = *reinterpret_cast<const float4*>(&As[k][BM / 2 + ty * 4]);
      const float4 b_lo = *reinterpret_cast<const float4*>(&Bs[k][tx * 4]);
      const float4 b_hi = *reinterpret_cast<const float4*>(&Bs[k][BN / 2 + tx * 4]);
      const float a[TM] = {a_lo.x, a_lo.y, a_lo.z, a_lo.w, a_hi.x, a_hi.y, a_hi.z, a_hi.w};
      const float b[TN] = {b_lo.x, b_lo.y, b_lo.z, b_lo.w, b_hi.x, b_hi.y, b_hi.z, b_hi.w};
#pragma unroll
      for (int i = 0; i < TM; ++i)
#pragma unroll
        for (int j = 0; j < TN; ++j) acc[i][j] += a[i] * b[j];  // FFMA, k in order
    }
    __syncthreads();  // the next k-slice overwrites the tiles
  }

#pragma unroll
  for (int i = 0; i < TM; ++i) {
    const int row = row0 + (i < 4 ? ty * 4 + i : BM / 2 + ty * 4 + (i - 4));
    float* c_row = C + (int64_t)row * N + col0;
    *reinterpret_cast<float4*>(c_row + tx * 4) =
        make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]);
    *reinterpret_cast<float4*>(c_row + BN / 2 + tx * 4) =
        make_float4(acc[i][4], acc[i][5], acc[i][6], acc[i][7]);
  }
}

// ---- launchers ----------------------------------------------------------------------------

extern "C" AISP_API int launch_matmul_tiled(const float* A, const float* B, float* C, int64_t M,
                                            int64_t N, int64_t K, cudaStream_t stream) {
  dim3 grid((N + TILE - 1) / TILE, (M + TILE - 1) / TILE);
  matmul_tiled<<<grid, dim3(TILE, TILE), 0, stream>>>(A, B, C, M, N, K);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_matmul_micro(const float* A, const float* B, float* C, int64_t M,
                                            int64_t N, int64_t K, cudaStream_t stream) {
  if (M % BM || N % BN || K % BK || M <= 0 || N <= 0 || K <= 0 || M > INT32_MAX ||
      N > INT32_MAX || K > INT32_MAX)
    return static_cast<int>(cudaErrorInvalidValue);
  matmul_micro<<<dim3(N / BN, M / BM), MICRO_THREADS, 0, stream>>>(A, B, C, M, N, K);
  return AISP_LAUNCHED();
}
