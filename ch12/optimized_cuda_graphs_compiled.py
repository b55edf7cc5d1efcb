"""Optimized: torch.compile(mode="reduce-overhead"): Inductor fuses the step, then CUDA graphs.

Inductor fuses the elementwise work (RMSNorm, SiLU·up, residual adds) into a few Triton
kernels, leaving the matmuls and attention to cuBLAS/SDPA, and "reduce-overhead" records the
result as a CUDA graph (cudagraph trees) with its own static input buffer, which it copies
each call's input into. Compile and warm-up happen in setup(). Fusion keeps intermediates in
fp32 where eager rounds them to bf16, so outputs differ by bf16 roundings: measured on CPU,
max |eager - compiled| was 0.047 on outputs up to ~4 (BF16_STEP_TOLERANCE).
"""
import torch

from ch12._cuda_graphs_common import BF16_STEP_TOLERANCE, DecodeBench
from core.benchmark import BenchContext, Requirements


class CompiledDecode(DecodeBench):
    requires = Requirements(cuda=True, modules=("triton",))
    tolerance = BF16_STEP_TOLERANCE

    def setup(self, ctx: BenchContext) -> None:
        super().setup(ctx)
        # the KV cache is written inside the graph: keep it at a fixed address
        torch._dynamo.mark_static_address(self.model.k_cache)
        torch._dynamo.mark_static_address(self.model.v_cache)
        self.step = torch.compile(self.model, mode="reduce-overhead", fullgraph=True)
        warm = self.make_inputs(ctx.seed)
        with torch.no_grad():
            for _ in range(3):  # compile, record the graph, replay it once
                torch.compiler.cudagraph_mark_step_begin()
                self.step(warm)
        torch.cuda.synchronize()

    @torch.no_grad()
    def run(self, x: torch.Tensor) -> torch.Tensor:
        torch.compiler.cudagraph_mark_step_begin()  # a new decode step: earlier outputs may be reused
        return self.step(x).clone()  # the graph's output buffer is overwritten by the next step


get_benchmark = CompiledDecode

if __name__ == "__main__":
    from core.single import main
    main(CompiledDecode)
