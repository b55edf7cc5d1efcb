// pdl.cu — a chain of small dependent kernels, launched plainly or with programmatic
// dependent launch (PDL, sm_90+); the pdl pair.
//
// Layer k computes out = tanh(in * scale_k + bias_k) over a [batch, hidden] activation, the
// shape of a decode step's per-layer small ops: each kernel is a couple of µs, about as long
// as the gap between two kernels on a stream (the previous grid drains, the next one is
// launched and its blocks are scheduled). Every layer is the same kernel:
//   prologue   load this layer's scale and bias: nothing the previous layer writes
//   cudaGridDependencySynchronize()       wait for the previous kernel to complete and its
//                                         writes to be visible (returns at once without PDL)
//   cudaTriggerProgrammaticLaunchCompletion()  let the next kernel be scheduled now: its
//                                         prologue overlaps this kernel's work
//   body       read the previous layer's output, write this layer's
// launch_chain launches the layers with <<<>>> (use_pdl = 0) or with cudaLaunchKernelEx and
// cudaLaunchAttributeProgrammaticStreamSerialization (use_pdl = 1); the first layer is always
// launched plainly, since what precedes it on the stream (the input's producer) may not be a
// kernel. Same kernel, same arithmetic: the outputs are bit-identical.
#include "aisp.cuh"

constexpr int THREADS = 256;

__global__ void __launch_bounds__(THREADS)
layer(const float* __restrict__ in, float* __restrict__ out, const float* __restrict__ scale,
      const float* __restrict__ bias, int64_t n, int64_t hidden) {
  int64_t i = blockIdx.x * (int64_t)THREADS + threadIdx.x;
  float s = 0.0f, b = 0.0f;
  if (i < n) {  // prologue: independent of the previous layer
    s = scale[i % hidden];
    b = bias[i % hidden];
  }
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
  cudaGridDependencySynchronize();  // the previous layer has completed; its output is visible
  cudaTriggerProgrammaticLaunchCompletion();  // a hint: the next layer may start its prologue
#endif
  if (i < n) out[i] = tanhf(in[i] * s + b);
}

static cudaError_t launch_layer(const float* in, float* out, const float* scale,
                                const float* bias, int64_t n, int64_t hidden, bool pdl,
                                cudaStream_t stream) {
  cudaLaunchConfig_t config = {};
  config.gridDim = dim3(static_cast<unsigned>(aisp_ceil_div(n, THREADS)));
  config.blockDim = dim3(THREADS);
  config.dynamicSmemBytes = 0;
  config.stream = stream;
  cudaLaunchAttribute attribute[1];
  attribute[0].id = cudaLaunchAttributeProgrammaticStreamSerialization;
  attribute[0].val.programmaticStreamSerializationAllowed = 1;
  config.attrs = attribute;
  config.numAttrs = pdl ? 1 : 0;
  if (!pdl) {  // the plain launch, as written without PDL
    layer<<<config.gridDim, THREADS, 0, stream>>>(in, out, scale, bias, n, hidden);
    return cudaGetLastError();
  }
  return cudaLaunchKernelEx(&config, layer, in, out, scale, bias, n, hidden);
}

// x: [n] input; work: [2, n] ping-pong buffers for the intermediate layers; out: [n];
// scale, bias: [layers, hidden]. A layer overwrites a ping-pong buffer only after
// cudaGridDependencySynchronize, i.e. after the layer that read it has completed.
extern "C" AISP_API int launch_chain(const float* x, float* work, float* out, const float* scale,
                                     const float* bias, int64_t layers, int64_t n, int64_t hidden,
                                     int64_t use_pdl, cudaStream_t stream) {
  if (layers < 1 || hidden < 1) return static_cast<int>(cudaErrorInvalidValue);
  AISP_REQUIRE_FITS(aisp_ceil_div(n, THREADS), 0x7fffffff);
  const float* in = x;
  for (int64_t k = 0; k < layers; ++k) {
    float* dst = (k == layers - 1) ? out : work + (k % 2) * n;
    AISP_CHECK(launch_layer(in, dst, scale + k * hidden, bias + k * hidden, n, hidden,
                            use_pdl != 0 && k > 0, stream));
    in = dst;
  }
  return 0;
}
