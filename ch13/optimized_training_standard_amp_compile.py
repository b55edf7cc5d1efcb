"""Stage 2 of 3 (`training_standard_amp_compile`): bf16 autocast plus torch.compile.

torch.compile (TorchInductor) traces forward and loss once and generates fused kernels
for the elementwise chains between the matmuls (LayerNorm, GELU, residual adds, the
cross-entropy's softmax), and AOTAutograd does the same for backward: fewer kernels and
fewer round trips of activations through memory. Compilation and its warm-up happen in
setup() on throwaway updates; the weights are then reset, so the timed step starts from the
same state as every other side. The optimizer is still torch's default AdamW.
"""
from __future__ import annotations

from ch13._training_common import BF16_TOLERANCE, TrainingStep
from ch13.baseline_training_standard import CONFIG


class AmpCompiledStep(TrainingStep):
    cuda_config = CONFIG
    amp = True
    compiled = True
    tolerance = BF16_TOLERANCE


get_benchmark = AmpCompiledStep

if __name__ == "__main__":
    from core.single import main
    main(AmpCompiledStep)
