"""What a training-step pair returns for verification, in units one tolerance fits.

A step's outputs live on very different scales (losses ~ln(vocab), gradients ~1e-4,
parameter moves ~lr), and sides that differ in precision or summation order differ in
different ways in each. These helpers put each on a scale of order one:

- a gradient as a sketch: its projections on 64 fixed random rank-one directions
  (U^T G V with U [rows, 8], V [cols, 8]), in units of its RMS, plus the RMS itself (which
  catches a wrong scale). Elementwise, bf16 and fp32 gradients differ by ~0.8% of the RMS
  typically but with heavy tails, concentrated in a few rows (8-13 sigma, measured at CPU
  sizes); each projection sums every element, so it errs by ~0.8% whatever the tails,
  while a wrong gradient moves every projection by O(1);
- the step a weight took, as `alignment`: -sum(dW * g) / (lr * sum|g|). Adam's first step
  moves every element by ~lr against the sign of its gradient, so this is ~1 (0 for no step,
  ~2 for two, negative for a step uphill). Elementwise, the moved weights themselves cannot
  be compared across precisions: an element whose gradient is near zero can flip sign
  between bf16 and fp32 and move 2 lr the other way.
"""
from __future__ import annotations

import torch


PROBES = 8  # random directions per dimension: PROBES**2 projections


def probe_for(size: int, device: str | torch.device) -> torch.Tensor:
    """Fixed random directions [size, PROBES], seeded by `size`: the same on every side."""
    g = torch.Generator().manual_seed(size)
    return torch.randn(size, PROBES, generator=g).to(device)


def sketch(grad: torch.Tensor, left: torch.Tensor, right: torch.Tensor
           ) -> tuple[torch.Tensor, torch.Tensor]:
    """(left^T G right / (RMS sqrt(numel)), RMS) for a 2-D gradient G, fp32: PROBES x PROBES
    values of order one."""
    g = grad.float()
    rms = g.pow(2).mean().sqrt()
    return (left.T @ g @ right) / (rms * g.numel() ** 0.5), rms


def alignment(before: torch.Tensor, after: torch.Tensor, grad: torch.Tensor, lr: float
              ) -> torch.Tensor:
    """-sum((after - before) * grad) / (lr * sum|grad|), fp32: ~1 for one Adam step."""
    delta, g = (after.float() - before.float()), grad.float()
    return -(delta * g).sum() / (lr * g.abs().sum())
