// stream_ordered.cu — a multi-stream task loop that needs a scratch buffer per task; the
// stream_ordered pair and its prealloc variant.
//
// Task t (of `tasks`) runs on stream t % nstreams: it squares its slice of x into a scratch
// buffer, then reduces each row of the scratch buffer to its mean (one block per row, a
// fixed summation order, so every run gives the same bits). The launchers differ only in
// how the scratch buffer is obtained and returned:
// launch_tasks_malloc : cudaMalloc before the task, cudaFree after it. cudaFree waits for the
//                       whole device to go idle (and cudaMalloc may), so the streams never
//                       overlap and the host stalls on every task.
// launch_tasks_pool   : cudaMallocFromPoolAsync / cudaFreeAsync on the task's stream, from a
//                       memory pool made once (create_pool) whose release threshold keeps
//                       freed memory in the pool: allocation and free are stream operations,
//                       nothing synchronizes, and after the first call no memory is mapped.
// launch_tasks_prealloc: no allocation at all: the caller owns one scratch buffer per stream,
//                       allocated once, and task t reuses stream t % nstreams's buffer. Stream
//                       order makes the reuse safe: a stream's next task starts after its last.
// `streams` is a host array of `nstreams` cudaStream_t handles (an int64 CPU tensor); the
// caller forks them from, and joins them back to, its own stream.
#include "aisp.cuh"

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
square(const float* __restrict__ x, float* __restrict__ scratch, int64_t n) {
  for (int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x; i < n;
       i += (int64_t)gridDim.x * THREADS) {
    float v = x[i];
    scratch[i] = v * v;
  }
}

__global__ void __launch_bounds__(THREADS)
row_mean(const float* __restrict__ scratch, float* __restrict__ out, int64_t cols) {
  __shared__ float partial[THREADS];
  const float* row = scratch + blockIdx.x * cols;
  float sum = 0.0f;
  for (int64_t c = threadIdx.x; c < cols; c += THREADS) sum += row[c];
  partial[threadIdx.x] = sum;
  __syncthreads();
  for (int half = THREADS / 2; half > 0; half /= 2) {  // fixed order: same bits every run
    if (threadIdx.x < half) partial[threadIdx.x] += partial[threadIdx.x + half];
    __syncthreads();
  }
  if (threadIdx.x == 0) out[blockIdx.x] = partial[0] / (float)cols;
}

static int launch_task(const float* x, float* scratch, float* out, int64_t rows, int64_t cols,
                       cudaStream_t stream) {
  int64_t n = rows * cols;
  int64_t blocks = aisp_ceil_div(n, THREADS);
  if (blocks > 4096) blocks = 4096;  // grid-stride: enough CTAs to fill any GPU several times
  square<<<blocks, THREADS, 0, stream>>>(x, scratch, n);
  AISP_CHECK(cudaGetLastError());
  row_mean<<<rows, THREADS, 0, stream>>>(scratch, out, cols);
  return AISP_LAUNCHED();
}

#define AISP_CHECK_TASKS(rows, cols, nstreams)                                  \
  do {                                                                          \
    AISP_REQUIRE_FITS(rows, 0x7fffffff);                                        \
    if ((cols) <= 0 || (nstreams) <= 0) return static_cast<int>(cudaErrorInvalidValue); \
  } while (0)

extern "C" AISP_API int launch_tasks_malloc(const float* x, float* out, int64_t tasks,
                                            int64_t rows, int64_t cols, const int64_t* streams,
                                            int64_t nstreams, cudaStream_t /*caller*/) {
  AISP_CHECK_TASKS(rows, cols, nstreams);
  size_t bytes = (size_t)(rows * cols) * sizeof(float);
  for (int64_t t = 0; t < tasks; ++t) {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(streams[t % nstreams]);
    float* scratch = nullptr;
    AISP_CHECK(cudaMalloc(&scratch, bytes));
    int code = launch_task(x + t * rows * cols, scratch, out + t * rows, rows, cols, s);
    AISP_CHECK(cudaFree(scratch));  // waits until the device is idle, every stream included
    if (code != 0) return code;
  }
  return 0;
}

extern "C" AISP_API int launch_tasks_pool(const float* x, float* out, int64_t tasks,
                                          int64_t rows, int64_t cols, const int64_t* streams,
                                          int64_t nstreams, int64_t pool_handle,
                                          cudaStream_t /*caller*/) {
  AISP_CHECK_TASKS(rows, cols, nstreams);
  cudaMemPool_t pool = reinterpret_cast<cudaMemPool_t>(pool_handle);
  size_t bytes = (size_t)(rows * cols) * sizeof(float);
  for (int64_t t = 0; t < tasks; ++t) {
    cudaStream_t s = reinterpret_cast<cudaStream_t>(streams[t % nstreams]);
    float* scratch = nullptr;
    AISP_CHECK(cudaMallocFromPoolAsync(reinterpret_cast<void**>(&scratch), bytes, pool, s));
    int code = launch_task(x + t * rows * cols, scratch, out + t * rows, rows, cols, s);
    if (code != 0) return code;
    AISP_CHECK(cudaFreeAsync(scratch, s));  // returns to the pool once the task's kernels finish
  }
  return 0;
}

extern "C" AISP_API int launch_tasks_prealloc(const float* x, float* out, float* scratch,
                                             int64_t tasks, int64_t rows, int64_t cols,
                                             const int64_t* streams, int64_t nstreams,
                                             cudaStream_t /*caller*/) {
  AISP_CHECK_TASKS(rows, cols, nstreams);
  for (int64_t t = 0; t < tasks; ++t) {
    int64_t k = t % nstreams;
    cudaStream_t s = reinterpret_cast<cudaStream_t>(streams[k]);
    int code = launch_task(x + t * rows * cols, scratch + k * rows * cols, out + t * rows, rows,
                           cols, s);
    if (code != 0) return code;
  }
  return 0;
}

// A pool on the current device that keeps up to `release_threshold` bytes of freed memory
// mapped (instead of returning it to the OS at the next synchronization) and never makes one
// stream wait for another to reuse a block: each stream reuses the block it freed itself, so
// streams stay independent. Writes the pool's handle to handle[0] (an int64 CPU tensor).
extern "C" AISP_API int create_pool(int64_t release_threshold, int64_t* handle,
                                    cudaStream_t /*unused*/) {
  int device = 0;
  AISP_CHECK(cudaGetDevice(&device));
  cudaMemPoolProps props = {};
  props.allocType = cudaMemAllocationTypePinned;
  props.handleTypes = cudaMemHandleTypeNone;
  props.location.type = cudaMemLocationTypeDevice;
  props.location.id = device;
  cudaMemPool_t pool = nullptr;
  AISP_CHECK(cudaMemPoolCreate(&pool, &props));
  uint64_t threshold = static_cast<uint64_t>(release_threshold);
  AISP_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolAttrReleaseThreshold, &threshold));
  int no = 0;
  AISP_CHECK(cudaMemPoolSetAttribute(pool, cudaMemPoolReuseAllowInternalDependencies, &no));
  handle[0] = reinterpret_cast<int64_t>(pool);
  return 0;
}

extern "C" AISP_API int destroy_pool(int64_t pool_handle, cudaStream_t /*unused*/) {
  return static_cast<int>(cudaMemPoolDestroy(reinterpret_cast<cudaMemPool_t>(pool_handle)));
}
