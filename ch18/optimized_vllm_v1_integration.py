"""Optimized: the same generation with V1's default compilation (torch.compile of the
model, CUDA graphs captured for the decode batch sizes at engine start-up, in setup(), not
timed). SKIPs where vLLM is not installed; see _vllm_v1_integration_common."""
from __future__ import annotations

from ch18._vllm_v1_integration_common import VllmGenerateBench


class VllmCompiledGraphs(VllmGenerateBench):
    enforce_eager = False


get_benchmark = VllmCompiledGraphs

if __name__ == "__main__":
    from core.single import main
    main(VllmCompiledGraphs)
