"""Baseline: vLLM V1 offline generation with `enforce_eager=True` (no compilation, no CUDA
graphs). SKIPs where vLLM is not installed; see _vllm_v1_integration_common for what it
measures and its limits (dummy weights, no downloads)."""
from __future__ import annotations

from ch18._vllm_v1_integration_common import VllmGenerateBench


class VllmEager(VllmGenerateBench):
    enforce_eager = True
    teaching = True  # not vLLM's default (it compiles and graphs): what its defaults buy


get_benchmark = VllmEager

if __name__ == "__main__":
    from core.single import main
    main(VllmEager)
