// cluster_dsmem.cu — Y = X · W with a 64 KB weight tile W (32 x 512 fp32, e.g. a rank-32
// up-projection) that every CTA needs, and an 8-row slice of X per CTA; the cluster_dsmem pair.
// Both kernels give each CTA the same slice, stage all of W in its shared memory and run the
// same tile math (projection_tile.cuh); they differ in where W comes from:
//
// project_weights_per_cta : every CTA loads all 64 KB of W from global memory (L2 hits after
//                           the first CTAs): 64 KB of L2 → SM traffic for ~17 KB of its own data.
// project_weights_cluster : CTAs run in thread-block clusters of CS (2 or 4). Each loads only
//                           its 1/CS share of W from global memory, the cluster synchronizes,
//                           and each copies the other shares out of its peers' shared memory
//                           (distributed shared memory, DSMEM: cluster.map_shared_rank), so L2
//                           serves W once per cluster instead of once per CTA. sm_90+.
//
// Cluster rules this relies on: a peer's shared memory may be read only after a cluster-wide
// barrier that follows the peer's writes (the first cluster.sync), and a CTA must not exit
// while a peer may still read its shared memory (the second cluster.sync comes after every
// DSMEM read; after it each CTA computes on its own copy and may finish at its own pace).
#include <cooperative_groups.h>

#include "aisp.cuh"
#include "projection_tile.cuh"

namespace cg = cooperative_groups;

constexpr int K = 32, N = 512;                    // W: K x N fp32 = 64 KB
constexpr int ROWS = proj_tile_rows<N>();         // 8 rows of X per CTA
constexpr int LDX = proj_x_stride<K>();           // 36
constexpr int W_VEC = K * N / 4;                  // 4096 float4
constexpr int SMEM_BYTES = (K * N + ROWS * LDX) * 4;  // 64 KB of W + 1.1 KB of X
static_assert(ROWS == 8 && ROWS * K / 4 <= PROJ_THREADS, "slice shape");

__device__ __forceinline__ void load_x_slice(float* xs, const float* __restrict__ x) {
  constexpr int VEC_PER_ROW = K / 4;  // 8 rows x 8 float4: threads 0..63 copy one each
  const int v = threadIdx.x;
  if (v < ROWS * VEC_PER_ROW)
    *reinterpret_cast<float4*>(xs + (v / VEC_PER_ROW) * LDX + (v % VEC_PER_ROW) * 4) =
        reinterpret_cast<const float4*>(x)[v];
}

// Copies float4s [first, first + COUNT) of W from `src` (global or a peer's shared memory) to
// the same place in this CTA's copy; every load is issued before the first store.
template <int COUNT>
__device__ __forceinline__ void copy_w(float4* ws, const float4* src, int first) {
  static_assert(COUNT % PROJ_THREADS == 0, "share size");
  float4 v[COUNT / PROJ_THREADS];
#pragma unroll
  for (int j = 0; j < COUNT / PROJ_THREADS; ++j) v[j] = src[first + threadIdx.x + j * PROJ_THREADS];
#pragma unroll
  for (int j = 0; j < COUNT / PROJ_THREADS; ++j) ws[first + threadIdx.x + j * PROJ_THREADS] = v[j];
}

__global__ void __launch_bounds__(PROJ_THREADS)
project_weights_per_cta(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ y) {
  extern __shared__ __align__(16) float smem[];
  float* ws = smem;
  float* xs = smem + K * N;
  copy_w<W_VEC>(reinterpret_cast<float4*>(ws), reinterpret_cast<const float4*>(w), 0);
  load_x_slice(xs, x + static_cast<int64_t>(blockIdx.x) * ROWS * K);
  __syncthreads();
  project_tile<K, N>(xs, ws, y + static_cast<int64_t>(blockIdx.x) * ROWS * N);
}

template <int CS>
__global__ void __launch_bounds__(PROJ_THREADS)
project_weights_cluster(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ y) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  constexpr int SHARE = W_VEC / CS;  // float4s of W each CTA loads from global memory
  extern __shared__ __align__(16) float smem[];
  float4* ws = reinterpret_cast<float4*>(smem);
  float* xs = smem + K * N;
  cg::cluster_group cluster = cg::this_cluster();
  const int rank = static_cast<int>(cluster.block_rank());

  copy_w<SHARE>(ws, reinterpret_cast<const float4*>(w), rank * SHARE);  // my share, from L2/HBM
  load_x_slice(xs, x + static_cast<int64_t>(blockIdx.x) * ROWS * K);
  cluster.sync();  // every CTA's share is written and visible cluster-wide

#pragma unroll
  for (int p = 1; p < CS; ++p) {  // the other shares, each from the CTA that loaded it
    const int peer = (rank + p) % CS;  // start at a different peer in every CTA
    copy_w<SHARE>(ws, cluster.map_shared_rank(ws, peer), peer * SHARE);
  }
  cluster.sync();  // all DSMEM reads are done (peers may exit) and W is whole in every CTA

  project_tile<K, N>(xs, smem, y + static_cast<int64_t>(blockIdx.x) * ROWS * N);
#endif
}

extern "C" AISP_API int launch_project_weights_per_cta(const float* x, const float* w, float* y,
                                                       int64_t rows, cudaStream_t stream) {
  if (rows % ROWS != 0) return static_cast<int>(cudaErrorInvalidValue);
  AISP_CHECK(cudaFuncSetAttribute(project_weights_per_cta,
                                  cudaFuncAttributeMaxDynamicSharedMemorySize, SMEM_BYTES));
  project_weights_per_cta<<<rows / ROWS, PROJ_THREADS, SMEM_BYTES, stream>>>(x, w, y);
  return AISP_LAUNCHED();
}

template <int CS>
static int launch_cluster(const float* x, const float* w, float* y, int64_t slices,
                          cudaStream_t stream) {
  AISP_CHECK(aisp_launch_clustered(project_weights_cluster<CS>,
                                   dim3(static_cast<unsigned>(slices)), dim3(PROJ_THREADS),
                                   SMEM_BYTES, CS, stream, x, w, y));
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_project_weights_cluster(const float* x, const float* w, float* y,
                                                       int64_t rows, int64_t cluster_size,
                                                       cudaStream_t stream) {
  if (rows % ROWS != 0) return static_cast<int>(cudaErrorInvalidValue);
  const int64_t slices = rows / ROWS;
  if (slices % cluster_size != 0) return static_cast<int>(cudaErrorInvalidValue);  // whole clusters
  switch (cluster_size) {
    case 2: return launch_cluster<2>(x, w, y, slices, stream);
    case 4: return launch_cluster<4>(x, w, y, slices, stream);
    default: return static_cast<int>(cudaErrorInvalidValue);
  }
}
