"""Optimized: chunked prefill piggybacked on decode passes.

Every pass carries one 256-token chunk of the oldest waiting prompt *and* a decode row for
every running sequence (one set of weight reads for both), so running requests emit a token
per pass however long the arriving prompts are. Sarathi-Serve's stall-free batching; vLLM,
SGLang (chunked prefill) and TensorRT-LLM (chunked context) do it at scale. Goal: goodput.
"""
from ch15._prefill_decode_split_common import ChunkedPrefill

get_benchmark = ChunkedPrefill

if __name__ == "__main__":
    from core.single import main
    main(ChunkedPrefill)
