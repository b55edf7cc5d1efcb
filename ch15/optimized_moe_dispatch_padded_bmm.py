"""Attribution variant: sort by expert, pad each expert's rows to the busiest expert's count,
one `torch.bmm` per projection. The batched-GEMM way to drop the per-expert loop when no
grouped GEMM is at hand: one host sync (the capacity) and the padding rows' FLOPs remain.
The gap to `optimized_moe_dispatch` is what the grouped GEMM's device-side offsets buy.
"""
from ch15._moe_dispatch_common import MoeLayerBench, padded_bmm_experts


class PaddedBmmMoe(MoeLayerBench):
    description = "MoE layer: sort by expert + capacity-padded torch.bmm per projection (one host sync)"

    def experts(self, x, weights, experts):
        return padded_bmm_experts(x, weights, experts, self.w_gate_up_t, self.w_down_t)


get_benchmark = PaddedBmmMoe

if __name__ == "__main__":
    from core.single import main
    main(PaddedBmmMoe)
