"""Shared by `speculative_decoding`: target-only greedy decoding → prompt-lookup (n-gram)
speculation with one verification pass per step.

- Baseline: one decode pass per token per sequence (the continuous-batching engine over
  the whole batch).
- Optimized: for each sequence, propose k = 4 tokens by finding the most recent earlier
  occurrence of the context's last n-gram (n = 3, else 2, else 1) and copying what followed
  it; run the target once over the k + 1 positions (the last accepted token + the k drafts,
  a prefill-style pass that continues each sequence's cache); keep the longest prefix of
  drafts that equals the target's own greedy choices, plus the target's next token. Every
  emitted token is the target's argmax given the tokens before it: the same tokens as plain
  greedy decoding, by construction, and 1 to k + 1 tokens per pass instead of 1.
  vLLM (`ngram` speculative method), SGLang and TensorRT-LLM ship prompt lookup decoding.

Why not a draft model: with random weights a small draft model agrees with the target by
chance only. Prompt lookup needs no second model; it pays where the output repeats its
input (code edits, retrieval, summaries quoting the source). The prompts here are a random
phrase of 8-24 tokens repeated, and a random-weight model's greedy output falls into loops
of its own, which the lookup also catches. The acceptance rate is what it is for this model:
`python -m ch15._speculative_decoding_common` prints it (README).

Precision: the verify pass (k + 1 tokens per row) and the decode pass (1 token per row) are
different matmul shapes, so in bf16 their roundings differ and a near-tie argmax would flip
now and then (the tokens must be identical). Both sides therefore run the model in fp32 on
the GPU (TF32 off, torch's default), where such flips are ~1e-6 per token; the passes are
memory-bound at this batch, so the lesson (fewer passes, each about as dear) holds.
"""
from __future__ import annotations

from dataclasses import replace

import torch

from ch15._continuous_batching_common import ContinuousEngine, Engine, Seq, ServingBench, Sizes
from ch15.decoder import SMALL, TINY, Decoder
from ch15.kv import KVCache
from core.benchmark import Workload
from core.goodput import SLO, Request

K = 4  # draft tokens proposed per step
NGRAM = 3  # longest n-gram matched


def propose(context: list[int], k: int = K, ngram: int = NGRAM) -> list[int]:
    """Up to k tokens that followed the most recent earlier occurrence of the context's
    last n-gram (longest n first); [] when nothing matches."""
    for n in range(min(ngram, len(context) - 1), 0, -1):
        tail = context[-n:]
        for j in range(len(context) - n - 1, -1, -1):
            if context[j:j + n] == tail:
                return context[j + n:j + n + k]
    return []


class Context:
    """A sequence's tokens and, for each n-gram of up to NGRAM tokens, where its most recent
    occurrence starts, kept as tokens arrive: `propose` in O(NGRAM) per step instead of a
    scan of the whole context (~9,000 slice compares a step at 8 rows of 256+ tokens, about
    2 ms of the host's time; vLLM's ngram proposer searches with numpy for the same reason).
    Proposes exactly what `propose()` does (tests/test_ch15_serving.py)."""

    def __init__(self, tokens: list[int], ngram: int = NGRAM):
        self.tokens: list[int] = []
        self.ngram = ngram
        self.starts: dict[tuple[int, ...], int] = {}
        self.extend(tokens)

    def extend(self, tokens: list[int]) -> None:
        for token in tokens:
            # the n-grams ending at the current last token become "earlier" occurrences for
            # every later tail (propose() looks at starts up to len - n - 1)
            for n in range(1, min(self.ngram, len(self.tokens)) + 1):
                self.starts[tuple(self.tokens[-n:])] = len(self.tokens) - n
            self.tokens.append(token)

    def propose(self, k: int = K) -> list[int]:
        for n in range(min(self.ngram, len(self.tokens) - 1), 0, -1):
            start = self.starts.get(tuple(self.tokens[-n:]))
            if start is not None:
                return self.tokens[start + n:start + n + k]
        return []


@torch.no_grad()
def verify_logits(model: Decoder, kv: KVCache, tokens: torch.Tensor, slots: torch.Tensor,
                  start: torch.Tensor, kv_len: int) -> torch.Tensor:
    """Logits at every position [B, T, vocab] of tokens [B, T] that continue each sequence's
    cache at `start` [B] (Decoder.prefill's `start` path, which returns the last position's
    logits only); attends over a fixed kv_len so the pass's shape never changes."""
    t = tokens.shape[1]
    positions = start[:, None] + torch.arange(t, device=tokens.device)
    visible = torch.arange(kv_len, device=tokens.device) <= positions[:, :, None]
    p = model._pass(positions, kv=kv, slots=slots, kv_len=kv_len, visible=visible)
    return model._logits(model._hidden(tokens, p))


class PromptLookupEngine(Engine):
    """Prefill as the other engines do; each decode step is one verification pass, or the
    plain decode pass when no sequence has a draft (an audit found acceptance near zero on
    the GPU's model: k + 1 positions a row were paid for one token)."""

    def __init__(self, model: Decoder, kv: KVCache, width: int, k: int = K):
        super().__init__(model, kv, width, scratch_tokens=k + 1)
        self.k = k
        self.context: dict[int, Context] = {}
        self.proposed = self.accepted = self.passes = 0

    def reserve(self, request: Request) -> int | None:
        self.context[request.id] = Context(list(request.prompt))
        try:  # the verify pass writes up to k positions past the last accepted token
            return self.kv.allocate(len(request.prompt) + request.max_new + self.k)
        except Exception:
            del self.context[request.id]
            return None

    def step(self) -> list[tuple[int, int]]:
        out = self.prefill(self.admit(self.width))
        for request_id, token in out:
            self.context[request_id].extend([token])
        self.retire()
        live = [s for s in self.running if not s.done]
        if live:
            out += self.verify(live)
        self.retire()
        return out

    @torch.no_grad()
    def verify(self, seqs: list[Seq]) -> list[tuple[int, int]]:
        k, pad = self.k, self.width - len(seqs)
        drafts = [self.context[s.request.id].propose(k) for s in seqs]
        if not any(drafts):  # nothing to verify: the plain 1-token decode pass, not k + 1 wide
            self.passes += 1
            out = self.decode(seqs)
            for request_id, token in out:
                self.context[request_id].extend([token])
            return out
        rows = [[s.last] + d + [0] * (k - len(d)) for s, d in zip(seqs, drafts)] + [[0] * (k + 1)] * pad
        meta = [[s.slot for s in seqs] + [self.scratch] * pad, [s.cached for s in seqs] + [0] * pad]
        tokens = torch.tensor(rows).to(self.device)
        slots, start = torch.tensor(meta).to(self.device)
        logits = verify_logits(self.model, self.kv, tokens, slots, start, self.max_len)
        picked = logits[:len(seqs)].argmax(-1).tolist()  # [n, k + 1]: the target's greedy choices
        self.passes += 1
        out = []
        for seq, draft, greedy in zip(seqs, drafts, picked):
            a = 0
            while a < len(draft) and draft[a] == greedy[a]:
                a += 1
            self.proposed += len(draft)
            self.accepted += a
            new = greedy[:a + 1][:seq.request.max_new - seq.emitted]
            seq.cached += a + 1  # the fed token and the a accepted drafts are in the cache
            seq.last, seq.emitted = new[-1], seq.emitted + len(new)
            self.context[seq.request.id].extend(new)
            out += [(seq.request.id, t) for t in new]
        return out


class SpecBench(ServingBench):
    gpu = Sizes(cfg=replace(SMALL, max_seq=512, dtype=torch.float32), width=8, requests=0,
                rate_rps=1.0, prompt_len=(128, 256), output_len=(128, 128), batch=8,
                slo=SLO(1.0, 1.0))
    cpu = Sizes(cfg=TINY, width=4, requests=0, rate_rps=1.0, prompt_len=(24, 48),
                output_len=(24, 24), batch=4, slo=SLO(1.0, 1.0))
    offline_output_len = None
    phrase = (8, 24)  # each prompt repeats a random phrase of this many tokens

    def make_inputs(self, seed: int) -> dict[str, torch.Tensor]:
        s, gen = self.sizes, self.generator(seed)
        (plo, phi), (olo, ohi) = s.prompt_len, s.output_len
        prompts = torch.empty(s.batch, phi, dtype=torch.long, device=self.device)
        phrase_len = torch.randint(self.phrase[0], self.phrase[1] + 1, (s.batch,), generator=gen, device=self.device)
        phrases = torch.randint(0, s.cfg.vocab, (s.batch, self.phrase[1]), generator=gen, device=self.device)
        where = torch.arange(phi, device=self.device)
        for i in range(s.batch):  # row i: phrase i repeated over the whole row
            prompts[i] = phrases[i, where % phrase_len[i]]
        return {"prompts": prompts,
                "lengths": torch.randint(plo, phi + 1, (s.batch,), generator=gen, device=self.device),
                "max_new": torch.randint(olo, ohi + 1, (s.batch,), generator=gen, device=self.device)}

    def workload(self) -> Workload:
        s = self.sizes
        return Workload(units=s.batch * sum(s.output_len) / 2, unit_name="tokens")


class TargetOnly(SpecBench):
    def engine(self) -> Engine:
        return ContinuousEngine(self.model, self.make_kv(), self.sizes.width)


class PromptLookup(SpecBench):
    def engine(self) -> Engine:
        return PromptLookupEngine(self.model, self.make_kv(), self.sizes.width)


def acceptance(device: str = "cpu", seed: int = 0, inputs_seed: int = 1) -> dict[str, float]:
    """Serve one offline batch with prompt lookup; the acceptance rate and tokens per pass."""
    from core.benchmark import BenchContext

    bench = PromptLookup()
    bench.ctx = BenchContext(seed=seed, device=device)
    bench.setup(bench.ctx)
    engine = bench.engine()
    inputs = bench.make_inputs(inputs_seed)
    requests = bench.requests(inputs)
    for request in requests:
        engine.add(request)
    tokens = 0
    while not engine.idle():
        tokens += len(engine.step())
    decode_tokens = tokens - len(requests)  # the first token of each comes from prefill
    return {"proposed": engine.proposed, "accepted": engine.accepted,
            "acceptance": engine.accepted / max(engine.proposed, 1),
            "verify_passes": engine.passes,
            "tokens_per_pass_per_seq": decode_tokens / max(engine.passes, 1) / len(requests)}


if __name__ == "__main__":
    print(acceptance("cuda" if torch.cuda.is_available() else "cpu"))
