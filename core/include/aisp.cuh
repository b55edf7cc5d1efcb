// aisp.cuh — the tiny shared header every chapter .cu file includes.
//
// Convention (see README "Adding a pair"): kernels are plain __global__ functions; each
// is driven by an `extern "C" AISP_API int launch_xxx(..., cudaStream_t stream)` launcher
// that takes device pointers, int64 sizes and torch's current stream, launches, and
// returns AISP_LAUNCHED(), i.e. the cudaError_t of the launch (0 = success).
#pragma once
#include <cstdint>
#include <cuda_runtime.h>

#define AISP_API __attribute__((visibility("default")))

// Error of the launch that just happened; never synchronizes (that would distort timing).
#define AISP_LAUNCHED() (static_cast<int>(cudaGetLastError()))

// Return early from a launcher when a CUDA call fails.
#define AISP_CHECK(call)                                   \
  do {                                                     \
    cudaError_t aisp_err_ = (call);                        \
    if (aisp_err_ != cudaSuccess) return static_cast<int>(aisp_err_); \
  } while (0)

static inline int64_t aisp_ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

// A launcher's int64 size that a kernel takes as `int` (or a grid dimension) must fit in
// [0, limit]; otherwise the launcher returns cudaErrorInvalidValue instead of wrapping silently.
#define AISP_REQUIRE_FITS(value, limit)                                          \
  do {                                                                           \
    if ((value) < 0 || (value) > (int64_t)(limit))                               \
      return static_cast<int>(cudaErrorInvalidValue);                            \
  } while (0)

// Lets Python turn a launcher's return code into a message.
// Weak, so a library linking several .cu files that all include this header still links.
extern "C" AISP_API __attribute__((weak)) const char* aisp_error_string(int code) {
  return cudaGetErrorString(static_cast<cudaError_t>(code));
}

// Launch `kernel` in thread-block clusters of `cluster_x` CTAs along x (sm_90+), each CTA
// with `smem` bytes of dynamic shared memory (raising the kernel's limit to that first).
template <typename... Params, typename... Args>
static inline cudaError_t aisp_launch_clustered(void (*kernel)(Params...), dim3 grid, dim3 block,
                                                int smem, unsigned cluster_x,
                                                cudaStream_t stream, Args... args) {
  cudaError_t err = cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem);
  if (err != cudaSuccess) return err;
  cudaLaunchAttribute attr[1] = {};
  attr[0].id = cudaLaunchAttributeClusterDimension;
  attr[0].val.clusterDim.x = cluster_x;
  attr[0].val.clusterDim.y = 1;
  attr[0].val.clusterDim.z = 1;
  cudaLaunchConfig_t config = {};
  config.gridDim = grid;
  config.blockDim = block;
  config.dynamicSmemBytes = smem;
  config.stream = stream;
  config.attrs = attr;
  config.numAttrs = 1;
  return cudaLaunchKernelEx(&config, kernel, args...);
}
