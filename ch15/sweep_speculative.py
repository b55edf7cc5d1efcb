"""Where speculative decoding pays: the `speculative_decoding` pair's engine and model with an
oracle draft of chosen acceptance, so the regime that decides the technique is measured.

    python -m ch15.sweep_speculative                   # on a GPU: the pair's shape (SMALL, fp32, 8 rows)
    python -m ch15.sweep_speculative --inputs-seed 2   # other prompts

The pair's prompt lookup seldom drafts on a random-weight model (README), which says nothing
about the technique: what decides it is the acceptance rate alpha (chance a drafted token is
the target's own greedy choice), the draft length k, and what a verify pass and a draft cost
against a plain decode step. This prints, on the pair's shape:

1. Pass costs: t_decode (one 1-token decode step of the batch) and t_verify(k) (one verify
   pass over k + 1 positions, `verify_logits` as the pair calls it), k = 1..8; on a GPU by
   CUDA-graph replay (core.timing.graph_replay: GPU time, no launch cost) and eagerly
   (core.timing's measurer on back-to-back calls: launch-inclusive, as the pair's engine runs).
2. The regime sweep. The target is greedy and deterministic, so its continuation of each
   prompt is computed first (untimed, by the baseline's own engine). An oracle draft then
   proposes the next k tokens of that continuation, each one right with probability alpha,
   independently, until the first miss, and a wrong token from there on (the acceptance
   model of Leviathan et al. 2023). The pair's own `PromptLookupEngine.verify` runs them:
   every kept token is the target's argmax from the verify pass's own logits, and the output
   must equal the target-only engine's exactly (asserted). Per (alpha, k): the measured
   tokens per verify pass per sequence beside the analytic E = (1 - alpha^(k+1)) / (1 - alpha),
   and the batch's verify passes (the rows step together until the slowest is done).
   Per draft cost c (0: free drafts, as prompt lookup; 0.05-0.1: a small draft model),
   the time per generated token and the speedup over target-only decoding:
   - GPU: the loop's verify passes x t_verify(k) by graph replay, against the target-only
     engine's decode steps x t_decode by graph replay;
   - eager: the loop's verify passes timed as they ran (wall time, host work and the token
     read-back included; passes x the median pass), against the target-only engine's decode
     steps timed the same way;
   both plus a MODELLED draft cost of c x t_decode per drafted token position (a draft model
   drafts k tokens for the batch in k batched steps per verify pass), not a measured one.
3. Break-even alpha at k = 4 (c = 0 and 0.1), interpolated in the measured sweep and solved
   from the analytic E with the measured cost ratio, and what prompt lookup achieved on these
   prompts (`ch15._speculative_decoding_common.acceptance`, the pair's own engine).

Acceptance of real drafts, for reading the table (as the sources report them): Leviathan et
al. 2023 (speculative decoding) report alpha ~0.6-0.8 for T5 drafts; the Medusa and EAGLE
papers report 2-3.5 tokens per verify pass; prompt lookup pays on input-grounded tasks
(summarization, code edits). On the CPU it runs at the pair's tiny sizes (for the tests).
"""
from __future__ import annotations

import argparse
import random
import statistics
import sys
import time
from dataclasses import dataclass, replace
from typing import Any, Callable

import torch

from ch15._continuous_batching_common import ContinuousEngine, Seq, serve
from ch15._speculative_decoding_common import PromptLookupEngine, TargetOnly, acceptance, verify_logits
from ch15.decoder import Decoder
from ch15.kv import KVCache
from core.benchmark import BenchContext
from core.goodput import Request
from core.timing import GraphCaptureError, graph_replay, measurer

ALPHAS = (0.0, 0.5, 0.6, 0.7, 0.8, 0.9)
KS = (2, 4, 6)
COSTS = (0.0, 0.05, 0.1)  # draft step / target step
COST_KS = tuple(range(1, 9))


def expected_tokens_per_pass(alpha: float, k: int) -> float:
    """E[accepted + 1] when each of k drafts is right with probability alpha until the first
    miss: 1 + alpha + ... + alpha^k = (1 - alpha^(k+1)) / (1 - alpha)."""
    return float(k + 1) if alpha >= 1.0 else (1.0 - alpha ** (k + 1)) / (1.0 - alpha)


def _sync(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


# -- 1. pass costs ----------------------------------------------------------------------------

@dataclass
class PassCost:
    eager_ms: float  # core.timing's measurer on back-to-back calls (launch-inclusive)
    graph_ms: float | None  # CUDA-graph replay (GPU time only); None on the CPU


def _time(fn: Callable[[], Any], device: str, samples: int) -> PassCost:
    measure = measurer(device)
    measure(fn, 3)  # warm-up: allocator, cuBLAS heuristics for the shape
    eager = statistics.median(measure(fn, samples).samples_ms)
    if not device.startswith("cuda"):
        return PassCost(eager, None)
    try:
        replay, calls = graph_replay(fn)
    except GraphCaptureError as exc:  # say so rather than pass eager time off as GPU time
        print(f"graph capture failed ({exc}); GPU column is eager", file=sys.stderr)
        return PassCost(eager, eager)
    return PassCost(eager, statistics.median(measure(replay, samples).samples_ms) / calls)


@torch.no_grad()
def pass_costs(model: Decoder, kv: KVCache, width: int, max_len: int, start: int,
               ks: tuple[int, ...] = COST_KS, samples: int = 20) -> dict[int, PassCost]:
    """{0: t_decode, k: t_verify(k)}: the engine's decode pass and the pair's verify pass over
    k + 1 positions at the engine's fixed shape (`width` rows, attention over `max_len`)
    with the argmax the engine reads back. The cost does not depend on the positions: every
    pass attends over the whole fixed max_len, masked."""
    dev, vocab = model.device, model.cfg.vocab
    gen = torch.Generator(device=dev).manual_seed(0)
    slots = torch.arange(width, device=dev)
    positions = torch.full((width,), start, device=dev)
    tokens1 = torch.randint(0, vocab, (width,), generator=gen, device=dev)
    costs = {0: _time(lambda: model.decode(tokens1, kv, slots, positions, max_len=max_len).argmax(-1),
                      dev.type, samples)}
    for k in ks:
        tokens = torch.randint(0, vocab, (width, k + 1), generator=gen, device=dev)
        costs[k] = _time(lambda tokens=tokens: verify_logits(model, kv, tokens, slots, positions,
                                                              max_len).argmax(-1), dev.type, samples)
    return costs


# -- 2. the oracle draft in the pair's verify loop --------------------------------------------

class OracleDraft:
    """Stands in for the pair's `Context` (the same `extend`/`propose`): proposes the next k
    tokens of the target's precomputed greedy continuation, each right with probability alpha
    independently until the first miss, wrong from there on."""

    def __init__(self, continuation: list[int], alpha: float, rng: random.Random, vocab: int):
        self.continuation, self.alpha, self.rng, self.vocab = continuation, alpha, rng, vocab
        self.generated = 0  # tokens the engine has emitted for this sequence

    def extend(self, tokens: list[int]) -> None:
        self.generated += len(tokens)

    def propose(self, k: int) -> list[int]:
        truth = self.continuation[self.generated:self.generated + k]
        if len(truth) < k:
            raise RuntimeError("the continuation is shorter than max_new + k")
        draft, hit = [], True
        for token in truth:
            hit = hit and self.rng.random() < self.alpha
            # a wrong token is any other one: the verify pass rejects it and all after it
            draft.append(token if hit else (token + 1 + self.rng.randrange(self.vocab - 1)) % self.vocab)
        return draft


class OracleEngine(PromptLookupEngine):
    """The pair's prompt-lookup engine with the oracle in place of the n-gram lookup; verify()
    is the pair's, timed per pass (wall time from an idle device to the tokens on the host;
    the oracle's few random draws per row run inside it, as the n-gram lookup does in the pair)."""

    def __init__(self, model: Decoder, kv: KVCache, width: int, k: int,
                 continuations: dict[int, list[int]], alpha: float, seed: int):
        super().__init__(model, kv, width, k=k)
        self.continuations, self.alpha = continuations, alpha
        self.rng = random.Random(seed)
        self.seq_passes = 0  # sum over sequences of the verify passes each took part in
        self.pass_s: list[float] = []

    def reserve(self, request: Request) -> int | None:
        slot = super().reserve(request)  # the pair's allocation (prompt + max_new + k)
        if slot is not None:
            self.context[request.id] = OracleDraft(self.continuations[request.id], self.alpha,
                                                   self.rng, self.model.cfg.vocab)
        return slot

    def verify(self, seqs: list[Seq]) -> list[tuple[int, int]]:
        self.seq_passes += len(seqs)
        _sync(self.device)
        t0 = time.perf_counter()
        out = super().verify(seqs)  # ends in a host read of the tokens: the device is idle
        self.pass_s.append(time.perf_counter() - t0)
        return out


class TimedTargetEngine(ContinuousEngine):
    """The baseline's engine with each decode step timed the same way."""

    def __init__(self, model: Decoder, kv: KVCache, width: int):
        super().__init__(model, kv, width)
        self.passes, self.pass_s = 0, []

    def decode(self, seqs: list[Seq]) -> list[tuple[int, int]]:
        self.passes += 1
        _sync(self.device)
        t0 = time.perf_counter()
        out = super().decode(seqs)
        self.pass_s.append(time.perf_counter() - t0)
        return out


@dataclass
class Loop:
    """One served batch: its token table, passes, and the wall time of its passes."""

    table: torch.Tensor
    passes: int  # batch passes (verify or decode)
    loop_s: float  # passes x the median pass's wall time (a host hiccup moves one pass, not the sum)
    tokens_per_pass: float = 1.0  # per sequence, (accepted + 1) per pass, max_new not cut


def make_bench(device: str, seed: int = 0, output_len: tuple[int, int] | None = None) -> TargetOnly:
    """The pair's baseline bench (model and prompts); `output_len` overrides the CPU/GPU sizes'."""
    bench = TargetOnly()
    if output_len is not None:  # this instance only: the pair keeps its sizes
        bench.gpu, bench.cpu = replace(bench.gpu, output_len=output_len), replace(bench.cpu, output_len=output_len)
    bench.ctx = BenchContext(seed=seed, device=device)
    bench.setup(bench.ctx)
    return bench


def target_only(bench: TargetOnly, requests: list[Request]) -> Loop:
    engine = TimedTargetEngine(bench.model, bench.make_kv(), bench.sizes.width)
    table = serve(engine, requests, max(r.max_new for r in requests), bench.device)
    return Loop(table, engine.passes, engine.passes * statistics.median(engine.pass_s))


def continuations(bench: TargetOnly, requests: list[Request], extra: int) -> dict[int, list[int]]:
    """Each request's greedy continuation, `extra` tokens past its max_new, from the
    target-only engine (the same fixed-width passes as the baseline: the same tokens)."""
    longer = [replace(r, max_new=r.max_new + extra) for r in requests]
    engine = ContinuousEngine(bench.model, bench.make_kv(), bench.sizes.width)
    table = serve(engine, longer, max(r.max_new for r in longer), bench.device).tolist()
    return {r.id: row[:r.max_new] for r, row in zip(longer, table)}


def oracle_loop(bench: TargetOnly, requests: list[Request], conts: dict[int, list[int]],
                alpha: float, k: int, seed: int = 0) -> Loop:
    """Serve the batch with oracle drafts of acceptance alpha through the pair's verify()."""
    engine = OracleEngine(bench.model, bench.make_kv(), bench.sizes.width, k, conts, alpha, seed)
    table = serve(engine, requests, max(r.max_new for r in requests), bench.device)
    return Loop(table, engine.passes, engine.passes * statistics.median(engine.pass_s),
                (engine.accepted + engine.seq_passes) / max(engine.seq_passes, 1))


# -- 3. break-even ------------------------------------------------------------------------------

def crossing(points: list[tuple[float, float]]) -> str:
    """The alpha where speedup crosses 1, linearly between the sweep's alphas."""
    points = sorted(points)
    if points[0][1] >= 1.0:
        return f"<= {points[0][0]:g}"
    for (a0, s0), (a1, s1) in zip(points, points[1:]):
        if s1 >= 1.0:
            return f"{a0 + (1.0 - s0) * (a1 - a0) / (s1 - s0):.2f}"
    return f"> {points[-1][0]:g}"


def analytic_break_even(ratio: float, k: int) -> float | None:
    """The alpha with E[tokens/pass] = ratio (= t_verify(k)/t_decode + k c), by bisection."""
    if ratio <= 1.0:
        return 0.0
    if ratio >= k + 1:
        return None
    lo, hi = 0.0, 1.0
    for _ in range(60):
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if expected_tokens_per_pass(mid, k) < ratio else (lo, mid)
    return lo


# -- the sweep ----------------------------------------------------------------------------------

def sweep(device: str, alphas: tuple[float, ...] = ALPHAS, ks: tuple[int, ...] = KS,
          costs: tuple[float, ...] = COSTS, seed: int = 0, inputs_seed: int = 1,
          lookup: bool = True) -> list[str]:
    bench = make_bench(device, seed)
    s, dev = bench.sizes, torch.device(device)
    requests = bench.requests(bench.make_inputs(inputs_seed))
    gpu = dev.type == "cuda"
    out = [f"device: {torch.cuda.get_device_name(dev) if gpu else 'cpu'}; model {s.cfg.d_model}x"
           f"{s.cfg.n_layers} layers, vocab {s.cfg.vocab}, {s.cfg.dtype}; {len(requests)} requests "
           f"decoded {s.width} rows a pass, attention over {bench.model.cfg.max_seq} positions; "
           f"outputs {s.output_len}", ""]

    # 1. what a pass costs
    start = min(s.prompt_len[1], s.cfg.max_seq - max(COST_KS) - 1)
    pc = pass_costs(bench.model, bench.make_kv(), s.width, s.cfg.max_seq, start)
    dcost = pc[0]
    gname = "GPU ms (graph replay)" if gpu else "host ms (CPU)"
    out += ["Pass costs (median of 20; eager = core.timing's measurer on back-to-back eager calls, "
            "launch-inclusive):", "",
            f"| pass | positions per row | {gname} | / t_decode | eager ms | / t_decode |", "|---" * 6 + "|"]
    for k, c in pc.items():
        g = c.graph_ms if c.graph_ms is not None else c.eager_ms
        gd = dcost.graph_ms if dcost.graph_ms is not None else dcost.eager_ms
        out.append(f"| {'decode' if k == 0 else f'verify k={k}'} | {k + 1} | {g:.3f} | {g / gd:.2f} | "
                   f"{c.eager_ms:.3f} | {c.eager_ms / dcost.eager_ms:.2f} |")
    print("\n".join(out), file=sys.stderr, flush=True)

    # 2. the oracle sweep (the continuation and the reference are untimed for the sweep)
    base = target_only(bench, requests)
    conts = continuations(bench, requests, max(ks))
    for r in requests:  # the continuation's first max_new tokens are the baseline's
        assert conts[r.id][:r.max_new] == base.table[r.id, :r.max_new].tolist(), r.id
    tokens = sum(r.max_new - 1 for r in requests)  # from decode/verify passes (the 1st: prefill)
    g_dec = dcost.graph_ms if dcost.graph_ms is not None else dcost.eager_ms
    e_dec = base.loop_s * 1e3 / base.passes  # the target-only engine's step, as it ran
    g_base = base.passes * g_dec / tokens
    e_base = base.loop_s * 1e3 / tokens
    head = " / ".join(f"c={c:g}" for c in costs)
    out += ["", f"Target-only: {base.passes} decode passes for {tokens} tokens; "
            f"{g_base:.4f} ms/token ({'graph replay' if gpu else 'CPU'}), {e_base:.4f} ms/token eager "
            f"(engine loop: passes x median pass wall time, {e_dec:.3f} ms a decode pass).",
            "Oracle drafts verified by the pair's verify(): output == target-only output, asserted. "
            "Draft cost c x t_decode per drafted token is MODELLED (added), not measured.", "",
            f"| alpha | k | E tokens/pass (analytic) | tokens/pass (measured, per seq) | batch passes "
            f"| tokens per batch pass per seq | {'GPU' if gpu else 'CPU'} ms/token, speedup: {head} "
            f"| eager ms/token, speedup: {head} |", "|---" * 8 + "|"]
    results: dict[tuple[float, int, float], tuple[float, float]] = {}
    for k in ks:
        g_ver = pc[k].graph_ms if pc[k].graph_ms is not None else pc[k].eager_ms
        for alpha in alphas:
            loop = oracle_loop(bench, requests, conts, alpha, k, seed)
            same = loop.table.tolist() == base.table.tolist()
            assert same, (f"alpha={alpha} k={k}: the verified output differs from target-only greedy "
                          "(a near-tie argmax flipped between the k+1-wide and the 1-wide pass?)")
            cells_g, cells_e = [], []
            for c in costs:
                draft = loop.passes * k * c  # draft steps x t_decode, modelled
                g = (loop.passes * g_ver + draft * g_dec) / tokens
                e = (loop.loop_s * 1e3 + draft * e_dec) / tokens
                results[(alpha, k, c)] = (g_base / g, e_base / e)
                cells_g.append(f"{g:.4f}, {g_base / g:.2f}x")
                cells_e.append(f"{e:.4f}, {e_base / e:.2f}x")
            out.append(f"| {alpha:g} | {k} | {expected_tokens_per_pass(alpha, k):.2f} | "
                       f"{loop.tokens_per_pass:.2f} | {loop.passes} | {tokens / loop.passes / len(requests):.2f} | "
                       f"{' / '.join(cells_g)} | "
                       f"{' / '.join(cells_e)} |")
            print(out[-1], file=sys.stderr, flush=True)

    # 3. break-even at k = 4, and what prompt lookup achieved
    k = 4 if 4 in ks else ks[len(ks) // 2]
    ratio_g = (pc[k].graph_ms if pc[k].graph_ms is not None else pc[k].eager_ms) / g_dec
    parts = []
    for c in (0.0, 0.1):
        if (alphas[0], k, c) not in results:
            continue
        meas_g = crossing([(a, results[(a, k, c)][0]) for a in alphas])
        meas_e = crossing([(a, results[(a, k, c)][1]) for a in alphas])
        an = analytic_break_even(ratio_g + k * c, k)
        an_s = "none" if an is None else f"{an:.2f} ({expected_tokens_per_pass(an, k):.2f} tokens/pass)"
        parts.append(f"c={c:g}: alpha {meas_g} ({'GPU' if gpu else 'CPU'}, measured sweep), {meas_e} "
                     f"(eager), {an_s} (analytic E vs t_verify/t_decode + k c = {ratio_g + k * c:.2f})")
    line = f"Break-even at k={k}: " + "; ".join(parts)
    if lookup:
        acc = acceptance(device, seed=seed, inputs_seed=inputs_seed)
        line += (f". Prompt lookup on the same prompts (the pair's engine, k=4, "
                 f"ch15._speculative_decoding_common.acceptance): {acc['tokens_per_pass_per_seq']:.3f} "
                 f"tokens per batch pass per seq (the column above), {acc['accepted']} of "
                 f"{acc['proposed']} drafts accepted in {acc['verify_passes']} passes.")
    out += ["", line]
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                     formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--inputs-seed", type=int, default=1, help="the prompts' seed (the pair's acceptance() uses 1)")
    parser.add_argument("--seed", type=int, default=0, help="weights and oracle draws")
    args = parser.parse_args(argv)
    device = "cuda" if torch.cuda.is_available() else "cpu"
    if device == "cpu":  # tiny passes: a contended 2-thread OpenMP pool made them ~40x slower
        torch.set_num_threads(1)
    print("\n".join(sweep(device, seed=args.seed, inputs_seed=args.inputs_seed)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
