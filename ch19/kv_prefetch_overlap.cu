// kv_prefetch_overlap.cu — decode attention over an int8 KV cache, tile by tile; the
// kv_prefetch_overlap pair. One CTA per (sequence, KV head), no split of the sequence (like
// vLLM's PagedAttention v1 kernel, one CTA per sequence and head): it takes the GROUP = 4
// query heads that share the KV head (grouped-query attention, each KV byte read once),
// walks the sequence's 64-token tiles of int8 K and V (8 KB each, one fp32 scale per tile
// for K and one for V), and keeps an online softmax. Both kernels call the
// same tile math (attend_tile) and differ only in how tiles reach shared memory:
//
// kv_decode_sync      : load tile t (global -> registers -> shared), __syncthreads, compute;
//                       the next tile's loads start only after the compute: while a tile is
//                       on its way from HBM this CTA's warps wait, and while they compute,
//                       none of its loads is in flight.
// kv_decode_pipelined : STAGES = 3 tiles in flight per CTA. Each thread issues cp.async
//                       (__pipeline_memcpy_async, LDGSTS: global -> shared without registers)
//                       for tile t+2 before it computes tile t; __pipeline_wait_prior lets it
//                       wait only for tile t's copies, and a __syncthreads makes every
//                       thread's copies of tile t visible to the block.
#include <cuda_bf16.h>
#include <cuda_pipeline.h>

#include "aisp.cuh"

constexpr int D = 128;                       // head_dim
constexpr int GROUP = 4;                     // query heads per KV head
constexpr int TILE = 64;                     // tokens per tile (and per scale)
constexpr int THREADS = 128;
constexpr int K_STRIDE = D + 16;             // padded K rows: 16-byte reads of 8 rows hit 8 bank groups
constexpr int K_BYTES = TILE * K_STRIDE;     // 9 KB
constexpr int V_BYTES = TILE * D;            // 8 KB (rows read whole by consecutive threads: no pad)
constexpr int STAGE_BYTES = K_BYTES + V_BYTES;
constexpr int CHUNKS = TILE * D / 16;        // 16-byte chunks per K (or V) tile: 512
constexpr int CHUNKS_PER_THREAD = CHUNKS / THREADS;  // 4
constexpr int STAGES = 3;
static_assert(THREADS == GROUP * 32 && THREADS == D && 2 * TILE == THREADS, "thread mapping");

__device__ __forceinline__ int k_offset(int c) { return (c / (D / 16)) * K_STRIDE + (c % (D / 16)) * 16; }

struct SoftmaxState {  // in shared memory, per query head
  float m[GROUP];      // running max (log2 domain)
  float l[GROUP];      // running sum of exp2(score - m)
  float corr[GROUP];   // this tile's rescale of earlier partial sums
};

// Load this CTA's GROUP query rows (bf16) into shared memory, pre-scaled by sm_scale·log2(e).
__device__ __forceinline__ void load_queries(float* qs, const __nv_bfloat16* __restrict__ q,
                                             int64_t head0, float qk_scale, SoftmaxState& st) {
  for (int i = threadIdx.x; i < GROUP * D; i += THREADS) qs[i] = __bfloat162float(q[head0 * D + i]) * qk_scale;
  if (threadIdx.x < GROUP) {
    st.m[threadIdx.x] = -INFINITY;
    st.l[threadIdx.x] = 0.f;
  }
}

// One tile: scores (K), online-softmax statistics, then P·V into acc[GROUP] (thread = one
// output dimension). Ends with __syncthreads: the tile's shared memory may then be reused.
__device__ __forceinline__ void attend_tile(const int8_t* ks, const int8_t* vs, float k_scale, float v_scale,
                                            const float* qs, float* ss, SoftmaxState& st, float (&acc)[GROUP]) {
  const int t = threadIdx.x;
  {  // A: thread t scores token t % 64 for heads 2·(t / 64) and 2·(t / 64) + 1
    const int j = t % TILE, h0 = 2 * (t / TILE);
    const int8_t* krow = ks + j * K_STRIDE;
    float s0 = 0.f, s1 = 0.f;
#pragma unroll
    for (int c = 0; c < D / 16; ++c) {
      const int4 raw = *reinterpret_cast<const int4*>(krow + 16 * c);
      const int8_t* kb = reinterpret_cast<const int8_t*>(&raw);
#pragma unroll
      for (int e = 0; e < 16; ++e) {
        const float kv = static_cast<float>(kb[e]);
        s0 = fmaf(qs[h0 * D + 16 * c + e], kv, s0);
        s1 = fmaf(qs[(h0 + 1) * D + 16 * c + e], kv, s1);
      }
    }
    ss[h0 * TILE + j] = s0 * k_scale;
    ss[(h0 + 1) * TILE + j] = s1 * k_scale;
  }
  __syncthreads();
  {  // B: warp h updates head h's max and sum; the tile's scores become probabilities
    const int h = t / 32, lane = t % 32;
    const float a = ss[h * TILE + lane], b = ss[h * TILE + lane + 32];
    float mx = fmaxf(a, b);
#pragma unroll
    for (int o = 16; o > 0; o /= 2) mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, o));
    const float m_old = st.m[h], m_new = fmaxf(m_old, mx);
    const float pa = exp2f(a - m_new), pb = exp2f(b - m_new);
    ss[h * TILE + lane] = pa;
    ss[h * TILE + lane + 32] = pb;
    float sum = pa + pb;
#pragma unroll
    for (int o = 16; o > 0; o /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, o);
    __syncwarp();
    if (lane == 0) {
      const float corr = exp2f(m_old - m_new);  // 0 on the first tile (m_old = -inf)
      st.corr[h] = corr;
      st.l[h] = st.l[h] * corr + sum;
      st.m[h] = m_new;
    }
  }
  __syncthreads();
  {  // C: thread t accumulates output dimension t of every head
    float part[GROUP] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll 8
    for (int j = 0; j < TILE; ++j) {
      const float vv = static_cast<float>(vs[j * D + t]);
#pragma unroll
      for (int h = 0; h < GROUP; ++h) part[h] = fmaf(ss[h * TILE + j], vv, part[h]);
    }
#pragma unroll
    for (int h = 0; h < GROUP; ++h) acc[h] = fmaf(v_scale, part[h], acc[h] * st.corr[h]);
  }
  __syncthreads();
}

__device__ __forceinline__ void store_output(float* __restrict__ out, int64_t head0, const SoftmaxState& st,
                                             const float (&acc)[GROUP]) {
#pragma unroll
  for (int h = 0; h < GROUP; ++h) out[(head0 + h) * D + threadIdx.x] = acc[h] / st.l[h];
}

__global__ void __launch_bounds__(THREADS)
kv_decode_sync(const __nv_bfloat16* __restrict__ q, const int8_t* __restrict__ k, const int8_t* __restrict__ v,
               const float* __restrict__ k_scale, const float* __restrict__ v_scale, float* __restrict__ out,
               int64_t seq, float qk_scale) {
  __shared__ __align__(16) int8_t tile[STAGE_BYTES];
  __shared__ float qs[GROUP * D];
  __shared__ float ss[GROUP * TILE];
  __shared__ SoftmaxState st;
  const int64_t bh = blockIdx.x;  // sequence · kv_heads + kv head
  const int64_t tiles = seq / TILE;
  load_queries(qs, q, bh * GROUP, qk_scale, st);
  float acc[GROUP] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t i = 0; i < tiles; ++i) {
    const int4* ksrc = reinterpret_cast<const int4*>(k + (bh * seq + i * TILE) * D);
    const int4* vsrc = reinterpret_cast<const int4*>(v + (bh * seq + i * TILE) * D);
    int4 rk[CHUNKS_PER_THREAD], rv[CHUNKS_PER_THREAD];
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {  // all loads issued before the first store
      rk[j] = ksrc[threadIdx.x + j * THREADS];
      rv[j] = vsrc[threadIdx.x + j * THREADS];
    }
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {
      const int c = threadIdx.x + j * THREADS;
      *reinterpret_cast<int4*>(tile + k_offset(c)) = rk[j];
      *reinterpret_cast<int4*>(tile + K_BYTES + 16 * c) = rv[j];
    }
    __syncthreads();  // the tile (and, the first time, the queries) is in shared memory
    attend_tile(tile, tile + K_BYTES, k_scale[bh * tiles + i], v_scale[bh * tiles + i], qs, ss, st, acc);
  }
  store_output(out, bh * GROUP, st, acc);
}

__global__ void __launch_bounds__(THREADS)
kv_decode_pipelined(const __nv_bfloat16* __restrict__ q, const int8_t* __restrict__ k,
                    const int8_t* __restrict__ v, const float* __restrict__ k_scale,
                    const float* __restrict__ v_scale, float* __restrict__ out, int64_t seq, float qk_scale) {
  extern __shared__ __align__(16) int8_t stages[];  // STAGES × (K tile, V tile)
  __shared__ float qs[GROUP * D];
  __shared__ float ss[GROUP * TILE];
  __shared__ SoftmaxState st;
  const int64_t bh = blockIdx.x;
  const int64_t tiles = seq / TILE;
  auto fetch = [&](int64_t i) {  // this thread's 16-byte pieces of tile i, into stage i % STAGES
    int8_t* dst = stages + (i % STAGES) * STAGE_BYTES;
    const int4* ksrc = reinterpret_cast<const int4*>(k + (bh * seq + i * TILE) * D);
    const int4* vsrc = reinterpret_cast<const int4*>(v + (bh * seq + i * TILE) * D);
#pragma unroll
    for (int j = 0; j < CHUNKS_PER_THREAD; ++j) {
      const int c = threadIdx.x + j * THREADS;
      __pipeline_memcpy_async(dst + k_offset(c), ksrc + c, 16);
      __pipeline_memcpy_async(dst + K_BYTES + 16 * c, vsrc + c, 16);
    }
  };
  for (int64_t i = 0; i < STAGES - 1; ++i) {  // the first tiles stream in while q is loaded
    if (i < tiles) fetch(i);
    __pipeline_commit();  // one group per tile slot, empty or not: the counting stays uniform
  }
  load_queries(qs, q, bh * GROUP, qk_scale, st);
  float acc[GROUP] = {0.f, 0.f, 0.f, 0.f};
  for (int64_t i = 0; i < tiles; ++i) {
    // Refill the stage tile i-1 used (attend_tile ended with a block-wide barrier).
    if (i + STAGES - 1 < tiles) fetch(i + STAGES - 1);
    __pipeline_commit();
    __pipeline_wait_prior(STAGES - 1);  // this thread's copies of tile i have landed
    __syncthreads();                    // ... and every other thread's
    const int8_t* tile = stages + (i % STAGES) * STAGE_BYTES;
    attend_tile(tile, tile + K_BYTES, k_scale[bh * tiles + i], v_scale[bh * tiles + i], qs, ss, st, acc);
  }
  store_output(out, bh * GROUP, st, acc);
}

static int check_shape(int64_t batch, int64_t kv_heads, int64_t seq) {
  if (batch <= 0 || kv_heads <= 0 || seq <= 0 || seq % TILE != 0) return static_cast<int>(cudaErrorInvalidValue);
  return 0;
}

extern "C" AISP_API int launch_kv_decode_sync(const __nv_bfloat16* q, const int8_t* k, const int8_t* v,
                                              const float* k_scale, const float* v_scale, float* out,
                                              int64_t batch, int64_t kv_heads, int64_t seq, float qk_scale,
                                              cudaStream_t stream) {
  AISP_CHECK(static_cast<cudaError_t>(check_shape(batch, kv_heads, seq)));
  AISP_REQUIRE_FITS(batch * kv_heads, 0x7fffffff);
  kv_decode_sync<<<batch * kv_heads, THREADS, 0, stream>>>(q, k, v, k_scale, v_scale, out, seq, qk_scale);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_kv_decode_pipelined(const __nv_bfloat16* q, const int8_t* k, const int8_t* v,
                                                   const float* k_scale, const float* v_scale, float* out,
                                                   int64_t batch, int64_t kv_heads, int64_t seq, float qk_scale,
                                                   cudaStream_t stream) {
  AISP_CHECK(static_cast<cudaError_t>(check_shape(batch, kv_heads, seq)));
  AISP_REQUIRE_FITS(batch * kv_heads, 0x7fffffff);
  constexpr int smem = STAGES * STAGE_BYTES;  // 51 KB: above the 48 KB default, opt in
  AISP_CHECK(cudaFuncSetAttribute(kv_decode_pipelined, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
  kv_decode_pipelined<<<batch * kv_heads, THREADS, smem, stream>>>(q, k, v, k_scale, v_scale, out, seq, qk_scale);
  return AISP_LAUNCHED();
}
