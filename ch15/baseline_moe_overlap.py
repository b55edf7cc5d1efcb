"""Routed experts, then the shared expert, one after the other on one stream.

The straightforward forward of a DeepSeek-style MoE layer: `routed(x) + shared(x)`. The
shared expert's GEMMs wait for every small kernel of the routed branch to finish.
"""
from ch15._moe_overlap_common import SharedExpertMoeBench


class SequentialSharedExpert(SharedExpertMoeBench):
    description = "MoE + shared expert (1024 tokens, bf16): routed experts then shared expert, one stream"

    def run(self, x):
        routed = self.routed(x)
        shared = self.shared(x)
        return routed + shared


get_benchmark = SequentialSharedExpert

if __name__ == "__main__":
    from core.single import main
    main(SequentialSharedExpert)
