// zero_copy.cu — one kernel that reads a small per-step buffer once; the zero_copy pair.
//
// The kernel (out = x * scale + shift, float4 per thread) is the same on both sides; only
// where `x` lives differs:
// launch_copy_then_affine : cudaMemcpyAsync the host buffer into device memory, then run the
//                           kernel on the device copy (two operations on the stream).
// launch_affine_mapped    : run the kernel on the host buffer itself, through its mapped
//                           device pointer (zero-copy): every load crosses PCIe, once.
// Both take a pinned host buffer (cudaHostAlloc / torch pin_memory). Sizes are in floats and
// must be a multiple of 4 (float4 loads); torch's allocations are 16-byte aligned or better.
#include "aisp.cuh"

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
affine(const float4* __restrict__ x, float4* __restrict__ out, int64_t n4, float scale,
       float shift) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  if (i < n4) {
    float4 v = x[i];  // one 16-byte load per thread: from HBM, or over PCIe when x is mapped
    out[i] = make_float4(v.x * scale + shift, v.y * scale + shift, v.z * scale + shift,
                         v.w * scale + shift);
  }
}

static int launch_affine(const float* x, float* out, int64_t n, float scale, float shift,
                         cudaStream_t stream) {
  if (n % 4 != 0) return static_cast<int>(cudaErrorInvalidValue);
  int64_t n4 = n / 4;
  int64_t blocks = aisp_ceil_div(n4 > 0 ? n4 : 1, THREADS);
  AISP_REQUIRE_FITS(blocks, 0x7fffffff);
  affine<<<blocks, THREADS, 0, stream>>>(reinterpret_cast<const float4*>(x),
                                         reinterpret_cast<float4*>(out), n4, scale, shift);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_copy_then_affine(const float* host, float* staging, float* out,
                                                int64_t n, float scale, float shift,
                                                cudaStream_t stream) {
  AISP_CHECK(cudaMemcpyAsync(staging, host, n * sizeof(float), cudaMemcpyHostToDevice, stream));
  return launch_affine(staging, out, n, scale, shift, stream);
}

extern "C" AISP_API int launch_affine_mapped(const float* host, float* out, int64_t n,
                                             float scale, float shift, cudaStream_t stream) {
  // The device's address for this pinned host buffer. With unified addressing (every 64-bit
  // platform) it is the host pointer itself; asking makes a pageable buffer fail here, with
  // an error, instead of faulting in the kernel. The lookup is no stream work, so relaxing
  // the thread's capture mode around it keeps a CUDA-graph capture from refusing it.
  float* mapped = nullptr;
  cudaStreamCaptureMode mode = cudaStreamCaptureModeRelaxed;
  cudaThreadExchangeStreamCaptureMode(&mode);
  cudaError_t found = cudaHostGetDevicePointer(reinterpret_cast<void**>(&mapped),
                                               const_cast<float*>(host), 0);
  cudaThreadExchangeStreamCaptureMode(&mode);
  AISP_CHECK(found);
  return launch_affine(mapped, out, n, scale, shift, stream);
}
