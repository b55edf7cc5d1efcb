// ssm_scan.cu — a diagonal state-space scan (the recurrence inside S4D/Mamba-style layers);
// the occupancy_tuning pair. One thread owns one channel c and walks its sequence:
//
//   h_t[n] = A[c,n]·h_{t-1}[n] + B[c,n]·x_t      (n < STATE = 16)
//   y_t    = Σ_n C[c,n]·h_t[n]
//
// x and y are [T, channels] (a warp's loads and stores at one t are coalesced); A, B, C are
// [channels, STATE], read once into registers. 48 parameters + 16 states live in registers
// for the whole scan: ptxas gives the loop 79 registers (allocated as 80) and no spills. Each
// step loads one float per thread (the compiler hoists two steps' loads), so a warp has 8 bytes
// in flight and then waits a DRAM latency: the kernel needs many warps per SM to stream.
//
// Both kernels run the same device code (same SASS body, same per-thread arithmetic, so the
// outputs are bit-identical); only the block shape and its launch bounds differ:
//
// ssm_scan_block512 : no launch bounds, 512-thread blocks. A block needs 512 x 80 = 40960 of
//                     the SM's 65536 registers, so a second one does not fit: 16 warps per SM
//                     (25% occupancy) and 24576 registers idle.
// ssm_scan_block256 : __launch_bounds__(256, 3), 256-thread blocks: 3 x 20480 = 61440
//                     registers, so 3 blocks = 24 warps per SM (37.5%), still 79 registers and
//                     no spills. (Asking for 4 blocks caps the kernel at 64 registers: ptxas
//                     then spills ~200 bytes per thread inside the time loop. Not worth it.)
#include "aisp.cuh"

constexpr int STATE = 16;

__device__ __forceinline__ void ssm_scan_channel(const float* __restrict__ x,
                                                 const float* __restrict__ A,
                                                 const float* __restrict__ B,
                                                 const float* __restrict__ C,
                                                 float* __restrict__ y, int64_t steps,
                                                 int64_t channels) {
  int64_t c = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (c >= channels) return;
  float a[STATE], b[STATE], w[STATE], h[STATE];
  // A row of 16 floats is 64 bytes, 16-byte aligned (torch allocations are 256-byte aligned).
  const float4* a4 = reinterpret_cast<const float4*>(A + c * STATE);
  const float4* b4 = reinterpret_cast<const float4*>(B + c * STATE);
  const float4* w4 = reinterpret_cast<const float4*>(C + c * STATE);
#pragma unroll
  for (int q = 0; q < STATE / 4; ++q) {
    float4 va = a4[q], vb = b4[q], vw = w4[q];
    a[4 * q] = va.x; a[4 * q + 1] = va.y; a[4 * q + 2] = va.z; a[4 * q + 3] = va.w;
    b[4 * q] = vb.x; b[4 * q + 1] = vb.y; b[4 * q + 2] = vb.z; b[4 * q + 3] = vb.w;
    w[4 * q] = vw.x; w[4 * q + 1] = vw.y; w[4 * q + 2] = vw.z; w[4 * q + 3] = vw.w;
  }
#pragma unroll
  for (int n = 0; n < STATE; ++n) h[n] = 0.f;
  for (int64_t t = 0; t < steps; ++t) {
    float xt = x[t * channels + c];
    float yt = 0.f;
#pragma unroll
    for (int n = 0; n < STATE; ++n) {
      h[n] = fmaf(a[n], h[n], b[n] * xt);
      yt = fmaf(w[n], h[n], yt);
    }
    y[t * channels + c] = yt;
  }
}

__global__ void ssm_scan_block512(const float* __restrict__ x, const float* __restrict__ A,
                                  const float* __restrict__ B, const float* __restrict__ C,
                                  float* __restrict__ y, int64_t steps, int64_t channels) {
  ssm_scan_channel(x, A, B, C, y, steps, channels);
}

__global__ void __launch_bounds__(256, 3)
ssm_scan_block256(const float* __restrict__ x, const float* __restrict__ A,
                  const float* __restrict__ B, const float* __restrict__ C,
                  float* __restrict__ y, int64_t steps, int64_t channels) {
  ssm_scan_channel(x, A, B, C, y, steps, channels);
}

extern "C" AISP_API int launch_ssm_scan_block512(const float* x, const float* A, const float* B,
                                                 const float* C, float* y, int64_t steps,
                                                 int64_t channels, cudaStream_t stream) {
  ssm_scan_block512<<<aisp_ceil_div(channels, 512), 512, 0, stream>>>(x, A, B, C, y, steps,
                                                                      channels);
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_ssm_scan_block256(const float* x, const float* A, const float* B,
                                                 const float* C, float* y, int64_t steps,
                                                 int64_t channels, cudaStream_t stream) {
  ssm_scan_block256<<<aisp_ceil_div(channels, 256), 256, 0, stream>>>(x, A, B, C, y, steps,
                                                                      channels);
  return AISP_LAUNCHED();
}

// The scan `tools occupancy-tuning ch08:occupancy_tuning` rebuilds once per preset: the block
// size and the launch bounds' minimum blocks per SM come from -D flags (a register cap from
// -maxrregcount), so each preset is the same device code under another configuration.
#ifndef AISP_TUNE_BLOCK
#define AISP_TUNE_BLOCK 256
#endif
#ifndef AISP_TUNE_MIN_BLOCKS
#define AISP_TUNE_MIN_BLOCKS 1
#endif

__global__ void __launch_bounds__(AISP_TUNE_BLOCK, AISP_TUNE_MIN_BLOCKS)
ssm_scan_tuned(const float* __restrict__ x, const float* __restrict__ A,
               const float* __restrict__ B, const float* __restrict__ C,
               float* __restrict__ y, int64_t steps, int64_t channels) {
  ssm_scan_channel(x, A, B, C, y, steps, channels);
}

extern "C" AISP_API int launch_ssm_scan_tuned(const float* x, const float* A, const float* B,
                                              const float* C, float* y, int64_t steps,
                                              int64_t channels, cudaStream_t stream) {
  ssm_scan_tuned<<<aisp_ceil_div(channels, AISP_TUNE_BLOCK), AISP_TUNE_BLOCK, 0, stream>>>(
      x, A, B, C, y, steps, channels);
  return AISP_LAUNCHED();
}

// What this build of the tuned kernel got: threads per block, registers per thread, local
// (spill) bytes per thread, and blocks per SM by the occupancy calculator.
extern "C" AISP_API int ssm_scan_tuned_occupancy(int64_t* threads, int64_t* registers,
                                                 int64_t* spill_bytes, int64_t* blocks,
                                                 cudaStream_t) {
  cudaFuncAttributes attr;
  AISP_CHECK(cudaFuncGetAttributes(&attr, ssm_scan_tuned));
  int n = 0;
  AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ssm_scan_tuned, AISP_TUNE_BLOCK, 0));
  *threads = AISP_TUNE_BLOCK;
  *registers = attr.numRegs;
  *spill_bytes = static_cast<int64_t>(attr.localSizeBytes);
  *blocks = n;
  return 0;
}

// Residency as the CUDA occupancy calculator sees it, for the README and `tools` commands:
// blocks of `threads` that fit on one SM of the current device (0 if a launch would fail).
extern "C" AISP_API int ssm_scan_blocks_per_sm(int64_t which, int64_t* blocks, cudaStream_t) {
  int n = 0;
  if (which == 512) {
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ssm_scan_block512, 512, 0));
  } else if (which == 256) {
    AISP_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&n, ssm_scan_block256, 256, 0));
  } else {
    return static_cast<int>(cudaErrorInvalidValue);
  }
  *blocks = n;
  return 0;
}
