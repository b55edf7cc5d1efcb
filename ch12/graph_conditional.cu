// graph_conditional.cu — a Jacobi solver whose loop runs on the host or inside a CUDA graph.
//
// The system is tridiagonal, A = tridiag(-1, diag, -1) with diag > 2 (diagonally dominant,
// so Jacobi converges). One loop iteration is two sweeps (x0 -> x1 -> x0); the second sweep
// also writes per-block partial sums of the residual |b - A x1|^2, and a one-block `check`
// kernel adds them in a fixed order and decides whether to go on:
//     go = |r|^2 > tol^2 |b|^2  and  loops < max_loops.
// Both sides run exactly these kernels in exactly this order, so their answers are identical.
//
// solve_host_loop       : the host drives the loop: after each iteration it copies the state
//                         (16 bytes) to pinned host memory, waits for the stream, reads `go`.
// build_conditional_*   : the same loop as a graph with a conditional WHILE node (CUDA 12.4+):
//                         the check kernel calls cudaGraphSetConditional, and the GPU decides
//                         whether to run the body again. One graph launch per solve.
#include "aisp.cuh"

constexpr int THREADS = 256;

struct SolverState {  // lives in device memory; the baseline mirrors it into pinned host memory
  float b2;    // |b|^2
  float res2;  // |b - A x|^2 of the last check
  int loops;   // iterations (two sweeps each) done
  int go;      // 1: run the loop body again
};

// Sum over the block, in a fixed order (deterministic: the same bits on every run).
__device__ float block_sum(float v) {
  __shared__ float warp_sums[THREADS / 32];
  for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  if ((threadIdx.x & 31) == 0) warp_sums[threadIdx.x / 32] = v;
  __syncthreads();
  v = threadIdx.x < THREADS / 32 ? warp_sums[threadIdx.x] : 0.0f;
  if (threadIdx.x < 32)
    for (int offset = 16; offset > 0; offset >>= 1) v += __shfl_down_sync(0xffffffffu, v, offset);
  __syncthreads();  // warp_sums may be reused by the next call
  return v;         // valid in thread 0
}

// Sum of the per-block partials by one block, in a fixed order.
__device__ float sum_partials(const float* partials, int64_t count) {
  float v = 0.0f;
  for (int64_t i = threadIdx.x; i < count; i += THREADS) v += partials[i];
  return block_sum(v);
}

// x = 0 and the partials of |b|^2.
__global__ void __launch_bounds__(THREADS)
zero_and_norm(const float* __restrict__ b, float* __restrict__ x, float* __restrict__ partials,
              int64_t n) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  float v = 0.0f;
  if (i < n) {
    x[i] = 0.0f;
    v = b[i] * b[i];
  }
  v = block_sum(v);
  if (threadIdx.x == 0) partials[blockIdx.x] = v;
}

__global__ void __launch_bounds__(THREADS)
start(const float* __restrict__ partials, int64_t blocks, SolverState* state) {
  float b2 = sum_partials(partials, blocks);
  if (threadIdx.x == 0) *state = SolverState{b2, b2, 0, 1};
}

// y = D^-1 (b + x_left + x_right); with `partials`, also the residual of x (not of y).
__global__ void __launch_bounds__(THREADS)
sweep(const float* __restrict__ x, const float* __restrict__ b, float* __restrict__ y,
      float* __restrict__ partials, int64_t n, float diag) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  float r2 = 0.0f;
  if (i < n) {
    float left = i > 0 ? x[i - 1] : 0.0f;
    float right = i + 1 < n ? x[i + 1] : 0.0f;
    float neighbours = left + right;
    y[i] = (b[i] + neighbours) / diag;
    float r = b[i] - (diag * x[i] - neighbours);
    r2 = r * r;
  }
  if (partials != nullptr) {  // uniform across the grid: no divergent __syncthreads
    r2 = block_sum(r2);
    if (threadIdx.x == 0) partials[blockIdx.x] = r2;
  }
}

__device__ int check_state(const float* partials, int64_t blocks, SolverState* state, float tol2,
                           int max_loops) {
  float res2 = sum_partials(partials, blocks);
  int go = 0;
  if (threadIdx.x == 0) {
    int loops = state->loops + 1;
    go = (res2 > tol2 * state->b2 && loops < max_loops) ? 1 : 0;
    state->res2 = res2;
    state->loops = loops;
    state->go = go;
  }
  return go;  // valid in thread 0
}

__global__ void __launch_bounds__(THREADS)
check(const float* __restrict__ partials, int64_t blocks, SolverState* state, float tol2,
      int max_loops) {
  check_state(partials, blocks, state, tol2, max_loops);
}

__global__ void __launch_bounds__(THREADS)
check_and_set(const float* __restrict__ partials, int64_t blocks, SolverState* state, float tol2,
              int max_loops, cudaGraphConditionalHandle handle) {
  int go = check_state(partials, blocks, state, tol2, max_loops);
  if (threadIdx.x == 0) cudaGraphSetConditional(handle, go);  // 0 ends the WHILE loop
}

static int64_t grid_for(int64_t n) { return aisp_ceil_div(n > 0 ? n : 1, THREADS); }

// Baseline: the loop lives on the host. `host_state` is pinned (cudaHostAlloc / pin_memory).
extern "C" AISP_API int solve_host_loop(const float* b, float* x0, float* x1, float* partials,
                                        SolverState* state, SolverState* host_state, int64_t n,
                                        float diag, float tol, int64_t max_loops,
                                        cudaStream_t stream) {
  int64_t blocks = grid_for(n);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  AISP_REQUIRE_FITS(max_loops, 0x7fffffff);
  zero_and_norm<<<blocks, THREADS, 0, stream>>>(b, x0, partials, n);
  start<<<1, THREADS, 0, stream>>>(partials, blocks, state);
  AISP_CHECK(cudaGetLastError());
  do {
    sweep<<<blocks, THREADS, 0, stream>>>(x0, b, x1, nullptr, n, diag);
    sweep<<<blocks, THREADS, 0, stream>>>(x1, b, x0, partials, n, diag);
    check<<<1, THREADS, 0, stream>>>(partials, blocks, state, tol * tol, (int)max_loops);
    AISP_CHECK(cudaGetLastError());
    AISP_CHECK(cudaMemcpyAsync(host_state, state, sizeof(SolverState), cudaMemcpyDeviceToHost,
                               stream));
    AISP_CHECK(cudaStreamSynchronize(stream));  // the host waits for the GPU's verdict
  } while (host_state->go);
  return AISP_LAUNCHED();
}

// --- the same loop as one graph with a conditional WHILE node ------------------------------
struct ConditionalSolver {
  cudaGraph_t graph;
  cudaGraphExec_t exec;
};

static cudaError_t add_kernel(cudaGraphNode_t* node, cudaGraph_t graph, const cudaGraphNode_t* dep,
                      void* func, int64_t blocks, void** args) {
  cudaKernelNodeParams p = {};
  p.func = func;
  p.gridDim = dim3((unsigned)blocks);
  p.blockDim = dim3(THREADS);
  p.kernelParams = args;  // copied by cudaGraphAddKernelNode
  return cudaGraphAddKernelNode(node, graph, dep, dep ? 1 : 0, &p);
}

// Builds and instantiates the graph for fixed buffers (run() copies each call's b into
// `b_static`); writes an opaque handle for launch_/destroy_conditional_solver.
extern "C" AISP_API int build_conditional_solver(const float* b_static, float* x0, float* x1,
                                                 float* partials, SolverState* state, int64_t n,
                                                 float diag, float tol, int64_t max_loops,
                                                 int64_t* handle_out, cudaStream_t stream) {
  int64_t blocks = grid_for(n);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  AISP_REQUIRE_FITS(max_loops, 0x7fffffff);
  float tol2 = tol * tol;
  int loops_cap = (int)max_loops;
  float* no_partials = nullptr;
  cudaGraph_t graph;
  AISP_CHECK(cudaGraphCreate(&graph, 0));
  cudaGraphConditionalHandle cond;
  // Default 1, assigned at every launch: the body runs at least once, as the host's do-while.
  AISP_CHECK(cudaGraphConditionalHandleCreate(&cond, graph, 1, cudaGraphCondAssignDefault));

  cudaGraphNode_t init, begin, loop, sweep_a, sweep_b, decide;
  void* init_args[] = {&b_static, &x0, &partials, &n};
  AISP_CHECK(add_kernel(&init, graph, nullptr, (void*)zero_and_norm, blocks, init_args));
  void* start_args[] = {&partials, &blocks, &state};
  AISP_CHECK(add_kernel(&begin, graph, &init, (void*)start, 1, start_args));

  cudaGraphNodeParams cp = {};
  cp.type = cudaGraphNodeTypeConditional;
  cp.conditional.handle = cond;
  cp.conditional.type = cudaGraphCondTypeWhile;
  cp.conditional.size = 1;
#if CUDART_VERSION >= 13000
  AISP_CHECK(cudaGraphAddNode(&loop, graph, &begin, nullptr, 1, &cp));
#else
  AISP_CHECK(cudaGraphAddNode(&loop, graph, &begin, 1, &cp));
#endif
  cudaGraph_t body = cp.conditional.phGraph_out[0];  // owned by the conditional node

  void* a_args[] = {&x0, &b_static, &x1, &no_partials, &n, &diag};
  AISP_CHECK(add_kernel(&sweep_a, body, nullptr, (void*)sweep, blocks, a_args));
  void* b_args[] = {&x1, &b_static, &x0, &partials, &n, &diag};
  AISP_CHECK(add_kernel(&sweep_b, body, &sweep_a, (void*)sweep, blocks, b_args));
  void* d_args[] = {&partials, &blocks, &state, &tol2, &loops_cap, &cond};
  AISP_CHECK(add_kernel(&decide, body, &sweep_b, (void*)check_and_set, 1, d_args));

  cudaGraphExec_t exec;
  cudaError_t err = cudaGraphInstantiate(&exec, graph, 0);
  if (err != cudaSuccess) {
    cudaGraphDestroy(graph);
    return static_cast<int>(err);
  }
  AISP_CHECK(cudaGraphUpload(exec, stream));  // the first launch does not pay the upload
  *handle_out = reinterpret_cast<int64_t>(new ConditionalSolver{graph, exec});
  return 0;
}

extern "C" AISP_API int launch_conditional_solver(int64_t handle, cudaStream_t stream) {
  auto* solver = reinterpret_cast<ConditionalSolver*>(handle);
  return static_cast<int>(cudaGraphLaunch(solver->exec, stream));
}

extern "C" AISP_API int destroy_conditional_solver(int64_t handle, cudaStream_t stream) {
  auto* solver = reinterpret_cast<ConditionalSolver*>(handle);
  AISP_CHECK(cudaStreamSynchronize(stream));  // no launch of it may still be running
  cudaGraphExecDestroy(solver->exec);
  cudaGraphDestroy(solver->graph);
  delete solver;
  return 0;
}
