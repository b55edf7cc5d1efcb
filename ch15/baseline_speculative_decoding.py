"""Baseline: target-only greedy decoding, one pass per token for a batch of 8 requests.

The prompts are a random phrase repeated (see _speculative_decoding_common); the model runs
in fp32 on the GPU so that the optimized side's verify passes give exactly these tokens.
"""
from ch15._speculative_decoding_common import TargetOnly

get_benchmark = TargetOnly

if __name__ == "__main__":
    from core.single import main
    main(TargetOnly)
