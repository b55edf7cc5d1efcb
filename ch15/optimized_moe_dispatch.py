"""MoE layer, tokens sorted by expert and each projection one grouped GEMM (`torch._grouped_mm`).

One stable argsort of the 16384 (token, expert) assignments puts each expert's rows
together; `bincount` + `cumsum` give the group ends as an int32 device tensor; the gate/up
projection of all 8 experts is one CUTLASS grouped GEMM, the down projection another; a
permutation scatter puts the rows back in (token, slot) order and the two slots are summed
with the router weights. No host sync, ~10 launches in all, and GEMM tiles that span the
whole assignment list instead of 8 small problems.
"""
from ch15._moe_dispatch_common import MoeLayerBench, grouped_experts


class GroupedGemmMoe(MoeLayerBench):
    description = "MoE layer: sort by expert + torch._grouped_mm per projection, no host sync"

    def experts(self, x, weights, experts):
        return grouped_experts(x, weights, experts, self.w_gate_up_t, self.w_down_t)


get_benchmark = GroupedGemmMoe

if __name__ == "__main__":
    from core.single import main
    main(GroupedGemmMoe)
