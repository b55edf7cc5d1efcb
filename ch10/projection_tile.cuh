// projection_tile.cuh — the tile math shared by double_buffered_pipeline.cu, persistent.cu,
// cluster_dsmem.cu and cluster_multicast.cu: Y_tile = X_tile · W, fp32, for a tile of X rows
// and all of W staged in shared memory. The kernels around it differ only in how the tiles get
// there.
//
// Layout in shared memory: X tile row-major with a row stride of K + 4 floats (the padding
// moves consecutive rows 4 banks apart, so two rows read by one warp never share a bank;
// rows stay 16-byte aligned for cp.async); W row-major K x N, unpadded.
//
// Each of the PROJ_THREADS threads computes a 4 x 4 block of Y: rows ty + TY*i (i < 4) and
// columns 4*tx .. 4*tx+3, with TX = N/4 threads across and TY = PROJ_THREADS/TX down, so a
// tile has 4*TY rows. Every output is one fmaf chain over k = 0 .. K-1 in order: any kernel
// that calls this on the same data produces bit-identical results.
#pragma once
#include <cstdint>

constexpr int PROJ_THREADS = 256;

template <int K>
__host__ __device__ constexpr int proj_x_stride() { return K + 4; }

template <int N>
__host__ __device__ constexpr int proj_tile_rows() { return 4 * (PROJ_THREADS / (N / 4)); }

template <int K, int N>
__device__ __forceinline__ void project_tile(const float* xs, const float* ws, float* __restrict__ y) {
  constexpr int TX = N / 4, TY = PROJ_THREADS / TX, LDX = proj_x_stride<K>();
  static_assert(N % 4 == 0 && PROJ_THREADS % TX == 0 && K % 4 == 0, "unsupported tile shape");
  const int tx = threadIdx.x % TX, ty = threadIdx.x / TX;
  float acc[4][4];
#pragma unroll
  for (int i = 0; i < 4; ++i)
#pragma unroll
    for (int j = 0; j < 4; ++j) acc[i][j] = 0.f;

#pragma unroll
  for (int k = 0; k < K; k += 4) {
    // 4 rows x 4 k of X (a warp spans at most two rows: broadcast reads) and 4 k x 4 columns
    // of W (a warp reads consecutive 16-byte words): 8 shared loads feed 64 FMAs.
    float4 xv[4], wv[4];
#pragma unroll
    for (int i = 0; i < 4; ++i)
      xv[i] = *reinterpret_cast<const float4*>(xs + (ty + TY * i) * LDX + k);
#pragma unroll
    for (int kk = 0; kk < 4; ++kk)
      wv[kk] = *reinterpret_cast<const float4*>(ws + (k + kk) * N + 4 * tx);
#pragma unroll
    for (int i = 0; i < 4; ++i) {
      const float xk[4] = {xv[i].x, xv[i].y, xv[i].z, xv[i].w};
#pragma unroll
      for (int kk = 0; kk < 4; ++kk) {
        acc[i][0] = fmaf(xk[kk], wv[kk].x, acc[i][0]);
        acc[i][1] = fmaf(xk[kk], wv[kk].y, acc[i][1]);
        acc[i][2] = fmaf(xk[kk], wv[kk].z, acc[i][2]);
        acc[i][3] = fmaf(xk[kk], wv[kk].w, acc[i][3]);
      }
    }
  }
#pragma unroll
  for (int i = 0; i < 4; ++i)  // __stwb: a plain 16-byte store (NVVM split a plain assignment)
    __stwb(reinterpret_cast<float4*>(y + static_cast<int64_t>(ty + TY * i) * N + 4 * tx),
           make_float4(acc[i][0], acc[i][1], acc[i][2], acc[i][3]));
}
