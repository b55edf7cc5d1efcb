// threshold.cu — a two-regime nonlinearity with data-dependent branching; the threshold pair.
//
//   y = soft_clip(x; ABOVE)  if x > t
//       soft_clip(x; BELOW)  otherwise
//
// soft_clip(x; c, h) is an implicit saturating curve: it runs `steps` damped fixed-point
// steps y ← y + h·(x − y − c·y³) from y = 0 toward the root of y + c·y³ = x (a cubic
// soft clipper, stiffer above the threshold than below it). Each step is 4 dependent instructions
// (FMUL, 3 FFMA); both regimes are the same computation with different constants.
//
// threshold_branch : `if (x > t) … else …`. With x random around t, nearly every warp holds
//                    lanes of both kinds, so it runs the above-loop with half its lanes masked
//                    off, then the below-loop with the other half: 2·steps iterations per warp.
// threshold_select : select the constants first (two FSELs), then run one loop for all 32
//                    lanes: steps iterations per warp. Same instructions per element in the
//                    same order, so the outputs are bit-identical.
// (Predicating the two *results* — computing both curves and selecting at the end — would
// cost exactly what the divergent branch costs: what saves the work is selecting the operands.)
#include "aisp.cuh"
#include "soft_clip.cuh"

__global__ void threshold_branch(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                 float t, int steps) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  float out;
  if (v > t)
    out = soft_clip(v, ABOVE.c, ABOVE.h, steps);
  else
    out = soft_clip(v, BELOW.c, BELOW.h, steps);
  y[i] = out;
}

__global__ void threshold_select(const float* __restrict__ x, float* __restrict__ y, int64_t n,
                                 float t, int steps) {
  int64_t i = blockIdx.x * (int64_t)blockDim.x + threadIdx.x;
  if (i >= n) return;
  float v = x[i];
  bool above = v > t;
  float c = above ? ABOVE.c : BELOW.c;  // FSEL: no branch, every lane takes the same path
  float h = above ? ABOVE.h : BELOW.h;
  y[i] = soft_clip(v, c, h, steps);
}

extern "C" AISP_API int launch_threshold_branch(const float* x, float* y, int64_t n, float t,
                                                int64_t steps, cudaStream_t stream) {
  AISP_REQUIRE_FITS(steps, INT32_MAX);
  AISP_REQUIRE_FITS(aisp_ceil_div(n, 256), INT32_MAX);  // grid.x
  threshold_branch<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(x, y, n, t, static_cast<int>(steps));
  return AISP_LAUNCHED();
}

extern "C" AISP_API int launch_threshold_select(const float* x, float* y, int64_t n, float t,
                                                int64_t steps, cudaStream_t stream) {
  AISP_REQUIRE_FITS(steps, INT32_MAX);
  AISP_REQUIRE_FITS(aisp_ceil_div(n, 256), INT32_MAX);  // grid.x
  threshold_select<<<aisp_ceil_div(n, 256), 256, 0, stream>>>(x, y, n, t, static_cast<int>(steps));
  return AISP_LAUNCHED();
}
