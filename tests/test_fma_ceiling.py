"""The fp32 FMA ceiling: its Triton kernel does every FMA it counts (checked by Triton's CPU
interpreter), and fp32 FLOPs are judged against it where it is the higher roof."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from core.benchmark import Workload
from core.metrics import compute_ceiling, rates

REPO_ROOT = Path(__file__).resolve().parents[1]
CHILD = '''
import torch
from core import fma_ceiling as f
x = torch.randn(2 * f.BLOCK)
out = torch.empty_like(x)
f.fma_call(x, out, iters=7)()
error = (out.double() - f.reference(x, 7)).abs().max().item()
print("ERROR", error, "FLOPS", f.flops(x, 7))
'''


def test_the_fma_kernel_does_the_fmas_it_counts():
    env = {**os.environ, "TRITON_INTERPRET": "1"}
    proc = subprocess.run([sys.executable, "-c", CHILD], cwd=REPO_ROOT, env=env,
                          capture_output=True, text=True, timeout=300)
    line = [l for l in proc.stdout.splitlines() if l.startswith("ERROR")]
    assert proc.returncode == 0 and line, proc.stderr[-2000:]
    _, error, _, flops = line[0].split()
    assert float(error) < 1e-4  # 4 chains of 7 FMAs per element, as counted
    assert int(flops) == 2 * 4 * 7 * 2048


def test_fp32_flops_use_the_higher_of_the_gemm_and_fma_roofs():
    ceilings = {"copy_gbps": 3000.0, "matmul_fp32_tflops": 52.0, "fma_fp32_tflops": 62.0,
                "matmul_bf16_tflops": 800.0}
    assert compute_ceiling("fp32", ceilings) == "fma_fp32_tflops"
    assert compute_ceiling("bf16", ceilings) == "matmul_bf16_tflops"
    assert compute_ceiling("fp32", {**ceilings, "fma_fp32_tflops": 40.0}) == "matmul_fp32_tflops"
    assert compute_ceiling("fp32", {"matmul_fp32_tflops": 52.0}) == "matmul_fp32_tflops"
    # ch08's polynomial on an H100: 52.7 TFLOP/s was 102% of the GEMM roof, 85% of the FMA one
    r = rates(Workload(bytes=8e6, flops=52.7e9, flops_dtype="fp32"), 1.0, ceilings)
    assert r.bound == "compute" and r.ceiling == "fma_fp32_tflops"
    assert abs(r.pct_of_ceiling - 100 * 52.7 / 62.0) < 1e-6
