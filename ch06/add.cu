// add.cu — c = a + b over n floats; the add (teaching) and add_vectorized pairs.
//
// add_serial     : one thread walks all n elements (<<<1, 1>>>): the GPU runs one of its
//                  ~270,000 resident threads and every iteration waits on memory. Teaching only.
// add_per_thread : one thread per element, 256-thread blocks: the first kernel everyone
//                  writes, and a fine one. It is the optimized side of `add` and the baseline
//                  of `add_vectorized`.
// add_float4     : 16-byte float4 loads and stores in a grid-stride loop over a grid sized to
//                  fill the GPU once: a quarter of the memory instructions per byte and 4x the
//                  bytes in flight per thread (LDG.E.128 / STG.E.128 in SASS).
#include "aisp.cuh"

__global__ void add_serial(const float* __restrict__ a, const float* __restrict__ b,
                           float* __restrict__ c, int64_t n) {
  for (int64_t i = 0; i < n; ++i) c[i] = a[i] + b[i];
}

__global__ void add_per_thread(const float* __restrict__ a, const float* __restrict__ b,
                               float* __restrict__ c, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i < n) c[i] = a[i] + b[i];
}

constexpr int FLOAT4_THREADS = 256;

__global__ void __launch_bounds__(FLOAT4_THREADS)
add_float4(const float4* __restrict__ a, const float4* __restrict__ b, float4* __restrict__ c,
           int64_t n4, const float* __restrict__ a_tail, const float* __restrict__ b_tail,
           float* __restrict__ c_tail, int64_t tail) {
  int64_t start = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  int64_t stride = (int64_t)gridDim.x * blockDim.x;
  for (int64_t i = start; i < n4; i += stride) {
    float4 x = a[i], y = b[i];
    c[i] = make_float4(x.x + y.x, x.y + y.y, x.z + y.z, x.w + y.w);
  }
  if (start < tail) c_tail[start] = a_tail[start] + b_tail[start];  // the last n % 4 floats
}

extern "C" AISP_API int launch_add_serial(const float* a, const float* b, float* c, int64_t n,
                                          cudaStream_t stream) {
  add_serial<<<1, 1, 0, stream>>>(a, b, c, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_add_per_thread(const float* a, const float* b, float* c, int64_t n,
                                              cudaStream_t stream) {
  add_per_thread<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(a, b, c, n);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_add_float4(const float* a, const float* b, float* c, int64_t n,
                                          cudaStream_t stream) {
  // One full wave: as many blocks as fit on every SM at once (asked once, then cached).
  static const int64_t wave = [] {
    int device = 0, sms = 0, per_sm = 0;
    cudaGetDevice(&device);
    cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
    cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, add_float4, FLOAT4_THREADS, 0);
    return (int64_t)sms * (per_sm > 0 ? per_sm : 1);
  }();
  // torch allocations are 256-byte aligned, so a, b and c can be read as float4.
  int64_t n4 = n / 4, tail = n % 4;
  int64_t blocks = aisp_ceil_div(n4 > 0 ? n4 : 1, FLOAT4_THREADS);
  if (blocks > wave) blocks = wave;
  add_float4<<<blocks, FLOAT4_THREADS, 0, stream>>>(
      reinterpret_cast<const float4*>(a), reinterpret_cast<const float4*>(b),
      reinterpret_cast<float4*>(c), n4, a + 4 * n4, b + 4 * n4, c + 4 * n4, tail);
  return AISP_LAUNCHED();
}
