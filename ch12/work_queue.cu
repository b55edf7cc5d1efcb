// work_queue.cu — items of uneven cost: one thread per item, or a persistent work queue.
//
// Item i rotates the point (1, 0) by its rotation rot[i] = (cos t, sin t), iters[i] times
// (each step is ROT_PER_STEP rotations), and writes the point it ends on. The rotation never settles, so the answer
// pins down the exact number of steps: a side that did fewer cannot match.
//
// launch_static : one thread per item in a normal grid. A warp runs until its costliest item
//                 is done; with power-law costs most of its lanes sit idle most of the time.
// launch_queue  : persistent warps. Each lane works on one item at a time, CHUNK steps per
//                 loop iteration, with its next item already staged (loaded ahead). A warp
//                 claims BATCH items at once with ONE atomicAdd on a global counter
//                 (warp-batched grabs) and hands them out, in order, to its lanes as they
//                 finish. The loop body is the same for every lane, so a warp stays full
//                 until the queue runs dry. STATUS: still 0.73x of the baseline on an H100
//                 (0.43 vs 0.32 ms); even with near-uniform costs it is ~2.4x slower per
//                 unit of work, so the per-iteration bookkeeping, not the tail, is the cost.
//                 Earlier versions: one atomic per finished item 0.30x (contended counter);
//                 no staging 0.49x (every finish stalled the warp on a global load).
// Both use the same step(), so their answers are bit-identical.
#include "aisp.cuh"

constexpr int THREADS = 256;
constexpr int ROT_PER_STEP = 4;
constexpr unsigned FULL = 0xffffffffu;
constexpr unsigned BATCH = 32;  // items a warp claims per atomicAdd
constexpr int CHUNK = 4;        // steps a lane runs between checks for finished items

struct Point {
  float a, b;
};

__device__ __forceinline__ Point step(Point p, float c, float s) {
#pragma unroll
  for (int k = 0; k < ROT_PER_STEP; ++k) p = Point{fmaf(p.a, c, -p.b * s), fmaf(p.a, s, p.b * c)};
  return p;
}

__global__ void __launch_bounds__(THREADS)
static_kernel(const float2* __restrict__ rot, const int* __restrict__ iters,
              float2* __restrict__ out, int64_t n) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (i >= n) return;
  float2 r = rot[i];
  Point p{1.0f, 0.0f};
  for (int k = iters[i]; k > 0; --k) p = step(p, r.x, r.y);
  out[i] = make_float2(p.a, p.b);
}

extern "C" AISP_API int launch_static(const float* rot, const int* iters, float* out, int64_t n,
                                      cudaStream_t stream) {
  int64_t blocks = aisp_ceil_div(n > 0 ? n : 1, THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  static_kernel<<<blocks, THREADS, 0, stream>>>(reinterpret_cast<const float2*>(rot), iters,
                                                reinterpret_cast<float2*>(out), n);
  return AISP_LAUNCHED();
}

__global__ void __launch_bounds__(THREADS)
queue_kernel(const float2* __restrict__ rot, const int* __restrict__ iters,
             float2* __restrict__ out, int64_t n, unsigned long long* __restrict__ next) {
  const int lane = threadIdx.x & 31;
  const unsigned below = (1u << lane) - 1;  // lanes with a smaller index than this one
  // The lane's current item (>= n: none) and the next one, staged: its loads are issued a
  // chunk or more before they are used, so taking it up costs no memory latency.
  int64_t item = n, staged = n;
  int left = 0, staged_left = 0;
  float c = 1.0f, s = 0.0f;
  float2 staged_rot = make_float2(1.0f, 0.0f);
  Point p{1.0f, 0.0f};
  // The warp's claimed batch (warp-uniform): items [pool, pool + pool_left) are its own.
  unsigned long long pool = 0;
  unsigned pool_left = 0;
  bool dry = false;  // the global queue is exhausted (warp-uniform)
  for (;;) {
    // 1. Lanes with an empty staging slot take items from the warp's batch, in lane order.
    unsigned needing = __ballot_sync(FULL, staged >= n);
    while (needing != 0 && !dry) {
      if (pool_left == 0) {  // one atomicAdd per BATCH items, by one lane
        unsigned long long base = 0;
        if (lane == 0) base = atomicAdd(next, (unsigned long long)BATCH);
        pool = __shfl_sync(FULL, base, 0);
        if (pool >= (unsigned long long)n) {
          dry = true;
          break;
        }
        pool_left = (unsigned)min((unsigned long long)BATCH, (unsigned long long)n - pool);
      }
      unsigned take = min((unsigned)__popc(needing), pool_left);
      unsigned rank = __popc(needing & below);
      if (staged >= n && rank < take) {
        staged = (int64_t)(pool + rank);
        staged_rot = rot[staged];  // loaded now, used when the current item is done
        staged_left = iters[staged];
      }
      pool += take;
      pool_left -= take;
      needing = __ballot_sync(FULL, staged >= n);
    }
    // 2. A lane without a current item takes up its staged one.
    if (item >= n && staged < n) {
      item = staged;
      staged = n;
      c = staged_rot.x;
      s = staged_rot.y;
      p = Point{1.0f, 0.0f};
      left = staged_left;
    }
    if (!__any_sync(FULL, item < n)) break;  // nothing current, so nothing staged: done
    // 3. Up to CHUNK steps of the current item (a lane with fewer left idles for the rest).
    if (item < n) {
      int steps = min(left, CHUNK);
      for (int k = 0; k < steps; ++k) p = step(p, c, s);
      left -= steps;
      if (left == 0) {
        out[item] = make_float2(p.a, p.b);
        item = n;
      }
    }
  }
}

// Resident blocks per SM for queue_kernel (for the persistent grid).
extern "C" AISP_API int queue_blocks_per_sm(int64_t* blocks, cudaStream_t stream) {
  int count = 0;
  AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&count, queue_kernel, THREADS, 0));
  *blocks = count;
  return 0;
}

// `next` is a device counter (8 bytes) reset here, so every call starts an empty queue.
extern "C" AISP_API int launch_queue(const float* rot, const int* iters, float* out, int64_t n,
                                     unsigned long long* next, int64_t grid, cudaStream_t stream) {
  AISP_REQUIRE_FITS(grid, 0x7fffffff);
  AISP_CHECK(cudaMemsetAsync(next, 0, sizeof(unsigned long long), stream));
  queue_kernel<<<grid, THREADS, 0, stream>>>(reinterpret_cast<const float2*>(rot), iters,
                                             reinterpret_cast<float2*>(out), n, next);
  return AISP_LAUNCHED();
}
