"""Baseline: whole-prompt prefill that stalls the running decodes.

A continuous-batching engine that, when prompts are waiting, prefills them to the end
(2048 tokens: 8 passes of 256) before the next decode pass: every running request's next
token waits for the whole prompt, and its time per output token (TPOT) grows with the
prompts that arrive while it decodes.
"""
from ch15._prefill_decode_split_common import WholePrompt

get_benchmark = WholePrompt

if __name__ == "__main__":
    from core.single import main
    main(WholePrompt)
