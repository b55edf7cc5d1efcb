// bank_conflicts.cu — batched 32x32 score tiles S = Q·Kᵀ (fp32); the bank_conflicts pair.
//
// Each 256-thread block (32 lanes x 8 warps) stages one 32x32 Q tile and one 32x32 K tile in
// shared memory, then lane k of warp w computes S[j][k] = Σ_i Q[j][i]·K[k][i] for the four
// rows j = w, w+8, w+16, w+24. At every step i the 32 lanes read K[0..31][i]: one *column*
// of the K tile. Shared memory has 32 banks of 4 bytes; word address a lives in bank a % 32.
//
// scores_plain    : K tile stored [32][32]: K[k][i] sits at k*32 + i, so a column is 32 words
//                   all in bank i — a 32-way conflict, replayed as 32 wavefronts. (nvcc 13.0
//                   merges four consecutive column reads into one LDS.128 per lane; rows are
//                   128 B apart, so all 32 lanes' 16-byte chunks land in the same 4 banks:
//                   32 wavefronts per LDS.128 where 4 would do — 8 per float instead of 1.)
// scores_padded   : K tile stored [32][33]: K[k][i] at k*33 + i, bank (k + i) % 32, so the 32
//                   lanes hit 32 different banks. One wasted column per tile (3% more smem).
// scores_swizzled : K tile stored [32][32] with the column XOR-ed by the row: K[k][i] at
//                   k*32 + (i ^ k), bank i ^ k — all different over k for a fixed i, and still
//                   all different over i when a row is written. No padding, rows stay 128 B.
//
// Q[j][i] is read by all 32 lanes at one address (a broadcast, never a conflict), so the Q
// tile stays [32][32] in every version. The three kernels run the same FMAs in the same
// order, so their outputs agree bit for bit.
#include "aisp.cuh"

constexpr int TILE = 32, WARPS = 8, ROWS_PER_WARP = TILE / WARPS;

struct PlainLayout {
  static constexpr int kWords = TILE * TILE;
  __device__ static int at(int row, int col) { return row * TILE + col; }
};
struct PaddedLayout {
  static constexpr int kWords = TILE * (TILE + 1);
  __device__ static int at(int row, int col) { return row * (TILE + 1) + col; }
};
struct SwizzledLayout {
  static constexpr int kWords = TILE * TILE;
  __device__ static int at(int row, int col) { return row * TILE + (col ^ row); }
};

template <class KLayout>
__global__ void __launch_bounds__(TILE * WARPS)
scores_tile(const float* __restrict__ q, const float* __restrict__ k, float* __restrict__ s,
            int64_t tiles) {
  __shared__ float q_tile[TILE * TILE];
  __shared__ float k_tile[KLayout::kWords];
  const int lane = threadIdx.x, warp = threadIdx.y;
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const int64_t base = t * TILE * TILE;
    // Coalesced loads: warp w copies rows w, w+8, w+16, w+24 of both tiles (lane = column).
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r) {
      int row = warp + r * WARPS;
      q_tile[row * TILE + lane] = q[base + row * TILE + lane];
      k_tile[KLayout::at(row, lane)] = k[base + row * TILE + lane];
    }
    __syncthreads();
    float acc[ROWS_PER_WARP] = {};
#pragma unroll
    for (int i = 0; i < TILE; ++i) {
      float kv = k_tile[KLayout::at(lane, i)];  // column i of K: where the conflicts are
#pragma unroll
      for (int r = 0; r < ROWS_PER_WARP; ++r)
        acc[r] = fmaf(q_tile[(warp + r * WARPS) * TILE + i], kv, acc[r]);  // broadcast
    }
#pragma unroll
    for (int r = 0; r < ROWS_PER_WARP; ++r) s[base + (warp + r * WARPS) * TILE + lane] = acc[r];
    __syncthreads();  // the next tile overwrites q_tile / k_tile
  }
}

template <class KLayout>
static int launch_scores(const float* q, const float* k, float* s, int64_t tiles,
                         cudaStream_t stream) {
  if (tiles <= 0) return 0;
  int64_t blocks = tiles < (int64_t)1 << 30 ? tiles : (int64_t)1 << 30;  // grid-stride beyond
  scores_tile<KLayout><<<blocks, dim3(TILE, WARPS), 0, stream>>>(q, k, s, tiles);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_scores_plain(const float* q, const float* k, float* s,
                                            int64_t tiles, cudaStream_t stream) {
  return launch_scores<PlainLayout>(q, k, s, tiles, stream);
}

extern "C" AISP_API int launch_scores_padded(const float* q, const float* k, float* s,
                                             int64_t tiles, cudaStream_t stream) {
  return launch_scores<PaddedLayout>(q, k, s, tiles, stream);
}

extern "C" AISP_API int launch_scores_swizzled(const float* q, const float* k, float* s,
                                               int64_t tiles, cudaStream_t stream) {
  return launch_scores<SwizzledLayout>(q, k, s, tiles, stream);
}
