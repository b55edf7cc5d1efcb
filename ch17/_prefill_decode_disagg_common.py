"""Shared by `prefill_decode_disagg` (two GPUs, one process, goal goodput): how the KV cache
of a prefilled prompt reaches the decode GPU.

Built on ch15's disaggregated engine (ch15/_disaggregated_inference_common.py): GPU 0
prefills one prompt at a time into a staging slot, GPU 1 decodes two groups of rows, one
thread drives both GPUs by launching work and collecting it when its event has fired. The
two sides differ only in the hand-off of each prompt's K/V from GPU 0 to GPU 1:

- blocking (baseline): the prompt's K/V are copied layer by layer on the GPUs' default
  streams, and the serving loop waits until the copy has landed before it goes on, as a
  hand-off through a blocking transfer call does (a send/recv pair in the loop, a
  synchronize "to be safe"). PyTorch orders a cross-GPU copy after the work already queued on
  *both* GPUs' current streams, so the wait also covers the decode steps queued on GPU 1:
  for every prompt the thread stops launching work on either GPU until GPU 1 has drained.
- overlapped (optimized): ch15's `handoff`: every layer's copy is queued on GPU 0 behind the
  prefill, with the destination side of the barrier on a side stream of GPU 1, and one event
  per request that only the decode step that first reads the new row waits for, on the GPU.
  The thread never waits; GPU 1 keeps decoding while the K/V travel.

Both sides serve the same requests with the same weights and forward shapes, so their greedy
tokens are identical (verified offline and during the goodput replay). Prompt and answer
lengths, SLO and offline batch are ch15 disaggregated_inference's (prefill-heavy: prompts
512-2048 tokens; TTFT ≤ 1 s, TPOT ≤ 18 ms), at 64 requests and 10/s of this stem's own,
where hand-offs are frequent and large;
the stems `prefill_decode_disagg_ttft_heavy` (long prompts, short answers) and
`prefill_decode_disagg_tpot_heavy` (short prompts, long answers) replay the other shapes.
Expected: the overlapped hand-off raises goodput mostly through TPOT (decode steps no longer
stall behind every hand-off). Measured on 2 H200s (4xH200, 2026-11-28, README), each rate's
trace warmed: it does not. Both sides met every SLO up to 32 requests/s (TTFT-heavy: 80/s;
TPOT-heavy: 32/s), and past the knee (48/s) they missed alike (41-79% against 62-74%, the
order of the two replays deciding more than the hand-off). Over NVLink a prompt's K/V
(8 KiB a token, at most 16 MiB) land in ~50 microseconds, and the blocking wait is for GPU
1's queued decode steps, which the next launch round refills at once: the optimized side is
a declared negative result on this machine. A PCIe or network hand-off (a slower link, no
peer access) is where the book's lesson would show. Each stem's run is mostly its real-time
replays (a warm-up round and 3 counted ones per side) plus the offline batch: ~100 s each
on a 2xH200, over the 20 s budget for the reason ch15's `TwoGPUServing` declares
(`slow_because`, inherited).
"""
from __future__ import annotations

from dataclasses import replace
from typing import Callable

import torch

from ch15._disaggregated_inference_common import (DecodeGroup, Disaggregated, PrefillDecode,
                                                  PrefillLane, handoff)
from ch15.kv import ContiguousKV
from core.goodput import SLO

Handoff = Callable[[ContiguousKV, int, ContiguousKV, int, int, "torch.cuda.Stream | None"],
                   "torch.cuda.Event | None"]


def blocking_handoff(src: ContiguousKV, src_slot: int, dst: ContiguousKV, dst_slot: int, n_tokens: int,
                     link: torch.cuda.Stream | None = None) -> None:
    """Copy one sequence's K/V (positions [0, n_tokens), every layer) on the current streams,
    then wait on the host until it has arrived. `link` is ignored: no side stream."""
    for layer in range(src.cfg.n_layers):
        dst.k[layer, dst_slot, :n_tokens].copy_(src.k[layer, src_slot, :n_tokens])
        dst.v[layer, dst_slot, :n_tokens].copy_(src.v[layer, src_slot, :n_tokens])
    if dst.k.device.type == "cuda":
        torch.cuda.current_stream(dst.k.device).synchronize()  # the K/V have landed on GPU 1
    return None


class HandoffBench(Disaggregated):
    """ch15's disaggregated pair (models on both GPUs, trace, SLO), the hand-off chosen by
    the side."""

    # ch15's prompt and answer lengths at a rate of this stem's own: the sweep (README) found
    # no rate where the hand-off decides goodput, so the stem replays a light load (10/s)
    gpu = replace(Disaggregated.gpu, requests=64, rate_rps=10.0)
    transfer: Handoff = staticmethod(handoff)

    def engine(self) -> PrefillDecode:
        w = self.sizes.width
        groups = [DecodeGroup(self.models[1], self.rows_kv(1, w + 1), w) for _ in range(2)]
        return PrefillDecode(PrefillLane(self.models[0], self.rows_kv(0, 1), groups, self.link,
                                         type(self).transfer))


# ------------------------------------------------------------------------------------------
# Trace variants. The harness hands every side of a stem the baseline's trace, so a trace of
# another shape is another stem (baseline_/optimized_prefill_decode_disagg_<shape>.py); each
# of these classes sets the sizes, and the pair files mix it into the sides above. Rates and
# TTFT targets are first guesses from ch15's disaggregated runs (SMALL on 2×H200), not
# measured. The TPOT target is ch15's (18 ms): the same engine and thread, so the same decode
# interval (~13 ms there); at 15 ms ch15's rounds spread too wide to store. The width and
# the offline batch (8 requests, outputs 8-16) are ch15's too.
# ------------------------------------------------------------------------------------------
class TTFTHeavy:
    """Long prompts, short answers (summarise, classify, RAG): hand-offs are large and
    frequent, TTFT is what users wait for. 64 requests at 16/s: ~4 s of arrivals, a replay
    of ~5 s (estimated)."""

    gpu = replace(Disaggregated.gpu, prompt_len=(1024, 2048), output_len=(8, 64), requests=64,
                  rate_rps=16.0, slo=SLO(ttft_s=0.5, tpot_s=Disaggregated.gpu.slo.tpot_s))
    cpu = replace(Disaggregated.cpu, prompt_len=(32, 64), output_len=(2, 6))


class TPOTHeavy:
    """Short prompts, long answers (chat, code generation): hand-offs are small and spaced
    out, and a stalled decode step shows in every token's time. 40 requests at 8/s, outputs
    96-224: ~1,200 tokens/s asked, about half of what ch15's sides served overloaded (2,000-
    2,450), and a replay of ~8 s (estimated). The first guess, 80 requests with outputs
    128-512, asked ~2,350 tokens/s (about all the engine serves), and each replay would have
    lasted ~17 s even without queueing."""

    gpu = replace(Disaggregated.gpu, prompt_len=(64, 256), output_len=(96, 224), requests=40,
                  rate_rps=8.0, slo=SLO(ttft_s=1.0, tpot_s=Disaggregated.gpu.slo.tpot_s))
    cpu = replace(Disaggregated.cpu, prompt_len=(4, 12), output_len=(8, 24))
