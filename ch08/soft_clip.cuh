// soft_clip.cuh — the threshold pairs' math, shared by threshold.cu and threshold_tma.cu so
// every kernel of both pairs runs the same instructions per element (bit-identical outputs).
//
// soft_clip(x; c, h) runs `steps` damped fixed-point steps y ← y + h·(x − y − c·y³) from y = 0
// toward the root of y + c·y³ = x: a cubic soft clipper. Each step is 4 dependent
// instructions (FMUL, 3 FFMA).
#pragma once

struct Regime {
  float c;  // cubic stiffness
  float h;  // step size; h·(1 + 3c·y²) < 1 on the way to the root, so the steps never overshoot
};
constexpr Regime ABOVE{0.5f, 0.125f};
constexpr Regime BELOW{0.1f, 0.25f};

__device__ __forceinline__ float soft_clip(float x, float c, float h, int steps) {
  float y = 0.f;
  for (int s = 0; s < steps; ++s) {
    float q = fmaf(c * y, y, 1.0f);  // 1 + c·y²
    float r = fmaf(-y, q, x);        // x − y − c·y³
    y = fmaf(h, r, y);
  }
  return y;
}
