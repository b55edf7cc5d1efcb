// persistent.cu — a grouped (MoE-style) projection: E experts, expert e owns a contiguous
// block of rows of X (a ragged number of 64-row tiles) and its own 64 x 64 fp32 weight W_e;
// Y = X_e · W_e for every row. The persistent pair. Both sides run the same CTA work per tile
// (stage W_e and the 64-row tile, then projection_tile.cuh's math) and differ in how the
// tiles are launched:
//
// expert_tiles            : one launch per expert, one CTA per tile of that expert (the loop
//                           over experts of a first MoE implementation). Every launch pays
//                           its launch cost, a ramp-up and a tail in which SMs sit idle, and a
//                           launch of 32-160 tiles never has enough CTAs to cover latency.
// expert_tiles_persistent : one launch of as many CTAs as fit on the GPU at once. Each CTA
//                           takes the next tile from a global atomic counter (reset with
//                           cudaMemsetAsync on the stream before every launch), finds its
//                           expert in a prefix-sum table, reloads W_e only when the expert
//                           changes, and loops until the tiles run out.
#include "aisp.cuh"
#include "projection_tile.cuh"

constexpr int D = 64;                                 // features in and out
constexpr int TILE_ROWS = proj_tile_rows<D>();        // 64
constexpr int LDX = proj_x_stride<D>();               // 68
constexpr int W_FLOATS = D * D;                       // 16 KB per expert
constexpr int TILE_FLOATS = TILE_ROWS * D;            // 4096 floats of X (or Y) per tile
constexpr int VEC_PER_THREAD = TILE_FLOATS / 4 / PROJ_THREADS;  // 4 float4 of X, 4 of W
constexpr int MAX_EXPERTS = 256;                      // size of the shared offsets table
static_assert(TILE_ROWS == 64 && W_FLOATS == TILE_FLOATS, "tile shape");

__device__ unsigned int g_next_tile;  // the persistent kernel's work counter

__device__ __forceinline__ void load_weights(float* ws, const float* __restrict__ w) {
  float4 v[VEC_PER_THREAD];
#pragma unroll
  for (int j = 0; j < VEC_PER_THREAD; ++j)
    v[j] = reinterpret_cast<const float4*>(w)[threadIdx.x + j * PROJ_THREADS];
#pragma unroll
  for (int j = 0; j < VEC_PER_THREAD; ++j)
    reinterpret_cast<float4*>(ws)[threadIdx.x + j * PROJ_THREADS] = v[j];
}

__device__ __forceinline__ void load_tile(float* xs, const float* __restrict__ x) {
  float4 v[VEC_PER_THREAD];
#pragma unroll
  for (int j = 0; j < VEC_PER_THREAD; ++j)
    v[j] = reinterpret_cast<const float4*>(x)[threadIdx.x + j * PROJ_THREADS];
#pragma unroll
  for (int j = 0; j < VEC_PER_THREAD; ++j) {
    const int c = threadIdx.x + j * PROJ_THREADS;  // chunk c: row c / 16, column 4 * (c % 16)
    *reinterpret_cast<float4*>(xs + (c / (D / 4)) * LDX + (c % (D / 4)) * 4) = v[j];
  }
}

// Baseline: launched once per expert with one CTA per tile; x, y point at the expert's rows.
__global__ void __launch_bounds__(PROJ_THREADS)
expert_tiles(const float* __restrict__ x, const float* __restrict__ w, float* __restrict__ y) {
  __shared__ __align__(16) float ws[W_FLOATS];
  __shared__ __align__(16) float xs[TILE_ROWS * LDX];
  const int64_t tile = blockIdx.x;
  load_weights(ws, w);
  load_tile(xs, x + tile * TILE_FLOATS);
  __syncthreads();
  project_tile<D, D>(xs, ws, y + tile * TILE_FLOATS);
}

// tile_offsets[e] = first tile of expert e (prefix sums; tile_offsets[experts] = total tiles).
__global__ void __launch_bounds__(PROJ_THREADS)
expert_tiles_persistent(const float* __restrict__ x, const float* __restrict__ w,
                        float* __restrict__ y, const int* __restrict__ tile_offsets,
                        int experts, int total_tiles) {
  __shared__ __align__(16) float ws[W_FLOATS];
  __shared__ __align__(16) float xs[TILE_ROWS * LDX];
  __shared__ int offsets[MAX_EXPERTS + 1];
  __shared__ int next_tile, next_expert;
  for (int e = threadIdx.x; e <= experts; e += PROJ_THREADS) offsets[e] = tile_offsets[e];
  __syncthreads();

  int expert_in_smem = -1;
  while (true) {
    if (threadIdx.x == 0) {
      const int t = static_cast<int>(atomicAdd(&g_next_tile, 1u));
      int e = -1;
      if (t < total_tiles) {  // the last expert whose first tile is <= t (skips empty experts)
        int lo = 0, hi = experts - 1;
        while (lo < hi) {
          const int mid = (lo + hi + 1) / 2;
          if (offsets[mid] <= t) lo = mid; else hi = mid - 1;
        }
        e = lo;
      }
      next_tile = t;
      next_expert = e;
    }
    // Publishes the tile, and (as every thread must arrive) also guarantees that the whole
    // CTA is done computing on the previous tile before ws/xs are overwritten below.
    __syncthreads();
    const int t = next_tile, e = next_expert;
    if (t >= total_tiles) break;  // uniform: every thread read the same t
    if (e != expert_in_smem) {
      load_weights(ws, w + static_cast<int64_t>(e) * W_FLOATS);
      expert_in_smem = e;
    }
    load_tile(xs, x + static_cast<int64_t>(t) * TILE_FLOATS);
    __syncthreads();  // the tile and W_e are in shared memory; thread 0 may overwrite next_tile after this
    project_tile<D, D>(xs, ws, y + static_cast<int64_t>(t) * TILE_FLOATS);
  }
}

// tile_offsets_host: a host array of experts + 1 prefix sums (read here, so no device sync).
extern "C" AISP_API int launch_expert_tiles(const float* x, const float* w, float* y,
                                            const int* tile_offsets_host, int64_t experts,
                                            cudaStream_t stream) {
  for (int64_t e = 0; e < experts; ++e) {
    const int64_t first = tile_offsets_host[e], tiles = tile_offsets_host[e + 1] - first;
    if (tiles < 0) return static_cast<int>(cudaErrorInvalidValue);
    if (tiles == 0) continue;
    expert_tiles<<<static_cast<unsigned>(tiles), PROJ_THREADS, 0, stream>>>(
        x + first * TILE_FLOATS, w + e * W_FLOATS, y + first * TILE_FLOATS);
    AISP_CHECK(cudaGetLastError());
  }
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_expert_tiles_persistent(const float* x, const float* w, float* y,
                                                       const int* tile_offsets, int64_t experts,
                                                       int64_t total_tiles, cudaStream_t stream) {
  if (experts < 1 || experts > MAX_EXPERTS || total_tiles < 0 || total_tiles > INT32_MAX / 2)
    return static_cast<int>(cudaErrorInvalidValue);
  // Queried once: CTAs that fit on one SM, the SM count, the counter's address.
  static int ctas = 0;
  static void* counter = nullptr;
  if (ctas == 0) {
    int device = 0, sms = 0, per_sm = 0;
    AISP_CHECK(cudaGetDevice(&device));
    AISP_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, expert_tiles_persistent,
                                                             PROJ_THREADS, 0));
    AISP_CHECK(cudaGetSymbolAddress(&counter, g_next_tile));
    ctas = sms * (per_sm > 0 ? per_sm : 1);
  }
  AISP_CHECK(cudaMemsetAsync(counter, 0, sizeof(unsigned int), stream));
  expert_tiles_persistent<<<ctas, PROJ_THREADS, 0, stream>>>(
      x, w, y, tile_offsets, static_cast<int>(experts), static_cast<int>(total_tiles));
  return AISP_LAUNCHED();
}
