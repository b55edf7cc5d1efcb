"""Optimized: a persistent matmul, one program per SM, operands through TMA descriptors.

The grid is the SM count; each program walks tiles NUM_SMS apart in the same grouped order,
so no CTA is launched twice and the tail is at most one tile per SM. A, B and C move through
host-built TMA descriptors (`TensorDescriptor.from_tensor`): one instruction copies a whole
tile into shared memory (and C back out), with no per-thread address math. The flattened
tile loop lets Triton's pipeliner prefetch the next tile while this one's epilogue runs.
Needs Hopper (sm_90) for TMA. Same tile configs, same autotuning, same output as the baseline.
"""
from __future__ import annotations

import torch

from ch14._triton_persistent_common import PersistentBench
from core.benchmark import Requirements


class PersistentTmaMatmul(PersistentBench):
    requires = Requirements(modules=("triton",), min_compute_capability=(9, 0))  # TMA
    negative_result = ("parity, not a gain, on an H100 at 8192^3 bf16: 1.03x in one run, 0.97x in "
                       "the next, both sides at the bf16 ceiling under the GPU's power cap")

    def prepare(self) -> None:
        from ch14._triton_persistent_kernels import (  # lazy: needs triton
            matmul_persistent, matmul_persistent_tuned)

        self.matmul = matmul_persistent
        self.num_sms = self.sm_count()
        self.matmul(self.make_inputs(self.ctx.seed), self.b, self.c, self.num_sms)  # autotune
        self.best_config = str(matmul_persistent_tuned.best_config)

    def run(self, a: torch.Tensor) -> torch.Tensor:
        return self.matmul(a, self.b, self.c, self.num_sms)


get_benchmark = PersistentTmaMatmul

if __name__ == "__main__":
    from core.single import main
    main(PersistentTmaMatmul)
