"""MoE layer, experts in a Python loop over boolean masks (the chapter decoder's own MoE).

For each of the 8 experts: `(experts == e).nonzero()` finds its tokens (a device→host sync,
since the count sizes the gather), gather, the expert's gate/up and down GEMMs, scale by the
router weight, `index_add_` into the output. It is what most first implementations (and
Hugging Face's Mixtral reference) do: 8 syncs, ~6 launches per expert, and 8 GEMM pairs of
~2048 uneven rows each at 8192 tokens × top-2.
"""
from ch15._moe_dispatch_common import MoeLayerBench, masked_experts


class MaskedLoopMoe(MoeLayerBench):
    description = "MoE layer (8 experts, top-2, d 2048, ffn 1408, 8192 tokens, bf16): per-expert mask + nonzero loop"
    # measured on two H100 VMs a day apart: 3.02 and 1.79 ms a call, the grouped GEMM 1.04 ms on both
    cpu_bound = ("the loop waits on the host for each expert's token count (8 syncs), then "
                 "launches that expert's kernels from Python: the host's speed is its speed")

    def experts(self, x, weights, experts):
        return masked_experts(x, weights, experts, self.w_gate_up, self.w_down)


get_benchmark = MaskedLoopMoe

if __name__ == "__main__":
    from core.single import main
    main(MaskedLoopMoe)
