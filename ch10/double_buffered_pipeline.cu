// double_buffered_pipeline.cu — a token projection Y = X · W (X: rows x 64, W: 64 x 64, fp32)
// computed tile by tile; the double_buffered_pipeline pair. Both kernels run the same
// persistent grid (each CTA loops over 64-row tiles, W stays in shared memory), call the same
// tile math (projection_tile.cuh) and differ only in how tiles reach shared memory:
//
// project_single_stage : load tile t (global → registers → shared), __syncthreads, compute,
//                        __syncthreads, repeat: while the tile is on its way from DRAM the
//                        CTA's warps have nothing to do, and while they compute no load is in
//                        flight.
// project_pipelined    : a two-stage cuda::pipeline shared by the whole block. Every thread
//                        is producer and consumer: it issues cuda::memcpy_async (cp.async,
//                        LDGSTS in SASS) for tile t+1 into the other stage, then waits only for
//                        tile t. The pipeline's barriers (mbarriers in shared memory) replace
//                        the __syncthreads pair: consumer_wait = "this stage has landed for
//                        every producer", consumer_release / producer_acquire = "every
//                        consumer is done with the stage it is about to refill".
#include <cooperative_groups.h>
#include <cuda/pipeline>

#include "aisp.cuh"
#include "projection_tile.cuh"

namespace cg = cooperative_groups;

constexpr int D = 64;                                  // features in and out
constexpr int TILE_ROWS = proj_tile_rows<D>();         // 64
constexpr int LDX = proj_x_stride<D>();                // 68
constexpr int TILE_SMEM_FLOATS = TILE_ROWS * LDX;      // 17 KB per stage
constexpr int W_FLOATS = D * D;                        // 16 KB
constexpr int CHUNKS_PER_THREAD = TILE_ROWS * D / 4 / PROJ_THREADS;  // 16-byte chunks: 4
constexpr int STAGES = 2;
using PipeState = cuda::pipeline_shared_state<cuda::thread_scope_block, STAGES>;
static_assert(TILE_ROWS == 64 && CHUNKS_PER_THREAD * PROJ_THREADS * 4 == TILE_ROWS * D, "tile shape");

// The c-th 16-byte chunk of a tile (row c / 16, column 4 * (c % 16)) in the padded layout.
__device__ __forceinline__ int chunk_offset(int c) { return (c / (D / 4)) * LDX + (c % (D / 4)) * 4; }

__device__ __forceinline__ void load_weights(float* ws, const float* __restrict__ w) {
#pragma unroll
  for (int v = threadIdx.x; v < W_FLOATS / 4; v += PROJ_THREADS)
    reinterpret_cast<float4*>(ws)[v] = reinterpret_cast<const float4*>(w)[v];
}

__global__ void __launch_bounds__(PROJ_THREADS)
project_single_stage(const float* __restrict__ x, const float* __restrict__ w,
                     float* __restrict__ y, int64_t tiles) {
  __shared__ __align__(16) float ws[W_FLOATS];
  __shared__ __align__(16) float xs[TILE_SMEM_FLOATS];
  load_weights(ws, w);
  for (int64_t t = blockIdx.x; t < tiles; t += gridDim.x) {
    const float4* src = reinterpret_cast<const float4*>(x + t * TILE_ROWS * D);
    float4 v[CHUNKS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j) v[j] = src[threadIdx.x + j * PROJ_THREADS];
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j)
      *reinterpret_cast<float4*>(xs + chunk_offset(threadIdx.x + j * PROJ_THREADS)) = v[j];
    __syncthreads();  // the tile (and, the first time, W) is in shared memory
    project_tile<D, D>(xs, ws, y + t * TILE_ROWS * D);
    __syncthreads();  // everyone is done with the tile before it is overwritten
  }
}

__global__ void __launch_bounds__(PROJ_THREADS)
project_pipelined(const float* __restrict__ x, const float* __restrict__ w,
                  float* __restrict__ y, int64_t tiles) {
  extern __shared__ __align__(16) float smem[];  // W, then STAGES padded tiles
  float* ws = smem;
  float* stages = smem + W_FLOATS;
  // The pipeline's barriers (two mbarriers per stage). Raw storage: a __shared__ variable gets
  // no constructor call, and make_pipeline initializes the barriers itself (thread 0, then a
  // block-wide sync), so every thread of the block must call it.
  __shared__ alignas(PipeState) unsigned char pipe_storage[sizeof(PipeState)];
  auto pipe = cuda::make_pipeline(cg::this_thread_block(), reinterpret_cast<PipeState*>(pipe_storage));

  // Tiles of this CTA: blockIdx.x, blockIdx.x + gridDim.x, ... (the same as the baseline's).
  const int64_t count = tiles > blockIdx.x ? (tiles - 1 - blockIdx.x) / gridDim.x + 1 : 0;
  auto tile_of = [&](int64_t i) { return blockIdx.x + i * gridDim.x; };

  int64_t fetch = 0;
  auto fill_stages = [&](int64_t up_to) {  // keep STAGES tiles in flight ahead of compute
    for (; fetch < count && fetch < up_to; ++fetch) {
      pipe.producer_acquire();  // waits until every consumer released this stage
      float* dst = stages + (fetch % STAGES) * TILE_SMEM_FLOATS;
      const float* src = x + tile_of(fetch) * TILE_ROWS * D;
#pragma unroll
      for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {
        int c = threadIdx.x + j * PROJ_THREADS;
        cuda::memcpy_async(dst + chunk_offset(c), src + 4 * c, cuda::aligned_size_t<16>(16), pipe);
      }
      pipe.producer_commit();
    }
  };

  fill_stages(STAGES);  // the first tiles stream in while W is loaded
  load_weights(ws, w);
  __syncthreads();  // W is written with ordinary stores: make it visible to every thread
  for (int64_t i = 0; i < count; ++i) {
    fill_stages(i + STAGES);  // refill the stage tile i-1 used with tile i+1
    pipe.consumer_wait();     // tile i has landed, from every thread's copies
    project_tile<D, D>(stages + (i % STAGES) * TILE_SMEM_FLOATS, ws, y + tile_of(i) * TILE_ROWS * D);
    pipe.consumer_release();
  }
}

extern "C" AISP_API int launch_project_single_stage(const float* x, const float* w, float* y,
                                                    int64_t rows, int64_t ctas,
                                                    cudaStream_t stream) {
  if (rows % TILE_ROWS != 0 || ctas <= 0) return static_cast<int>(cudaErrorInvalidValue);
  project_single_stage<<<ctas, PROJ_THREADS, 0, stream>>>(x, w, y, rows / TILE_ROWS);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_project_pipelined(const float* x, const float* w, float* y,
                                                 int64_t rows, int64_t ctas, cudaStream_t stream) {
  if (rows % TILE_ROWS != 0 || ctas <= 0) return static_cast<int>(cudaErrorInvalidValue);
  const int smem = (W_FLOATS + STAGES * TILE_SMEM_FLOATS) * sizeof(float);  // 50 KB: opt in
  AISP_CHECK(cudaFuncSetAttribute(project_pipelined, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  project_pipelined<<<ctas, PROJ_THREADS, smem, stream>>>(x, w, y, rows / TILE_ROWS);
  return AISP_LAUNCHED();
}

// Residency as the occupancy calculator sees it: CTAs of one of the two kernels (0: single
// stage, 1: pipelined, with its 50 KB of dynamic shared memory) that one SM holds. The pairs
// launch that many per SM, the natural persistent grid, rather than a pinned count.
extern "C" AISP_API int project_blocks_per_sm(int64_t which, int64_t* blocks, cudaStream_t) {
  int n = 0;
  if (which == 0) {
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, project_single_stage, PROJ_THREADS, 0));
  } else {
    const int smem = (W_FLOATS + STAGES * TILE_SMEM_FLOATS) * sizeof(float);
    AISP_CHECK(cudaFuncSetAttribute(project_pipelined, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, project_pipelined, PROJ_THREADS, smem));
  }
  *blocks = n;
  return 0;
}
