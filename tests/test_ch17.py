"""Chapter 17 on the CPU: the fused MoE gating kernel (Triton interpreter) against eager
gating and a sort-based reference; the routing simulation's invariants, routers and early
rejection on a synthetic step-cost table; expert placement and dispatch traffic; the
two-stage pipeline on a CPU "split"; and every pair through the harness (ok or SKIP)."""
from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from dataclasses import replace

import pytest
import torch

from ch17 import _dynamic_routing_common as routing
from ch17._dynamic_routing_common import (GPU_FLEET, AdmissionControl, QueueAndKVAware, Replica,
                                          RoundRobin, SimRequest, StepCosts, simulate)
from ch17._moe_gating_common import GatingBench, GatingSize, eager_gating, router_logits
from ch17._moe_router_topology_common import (CPU_CLUSTER, Links, all_to_all_seconds, coactivation,
                                              dispatch_bytes, expert_seconds, locality_placement,
                                              topic_of_experts, uniform_placement)
from core import REPO_ROOT
from core.benchmark import BenchContext
from core.goodput import SLO, summarize
from tests.conftest import cpu_only

CPU = BenchContext(seed=0, device="cpu")


def set_up(cls, ctx=CPU):
    bench = cls()
    bench.ctx = ctx
    bench.setup(ctx)
    return bench


# ------------------------------------------------------------------------------------------
# moe_gating
# ------------------------------------------------------------------------------------------
GATING_CHILD = r'''
import json, sys
import torch
from ch17._moe_gating_common import GatingSize, eager_gating, router_logits
from ch17._moe_gating_kernel import BLOCK_T, fused_gating

results = {}
for tokens, experts, k in json.loads(sys.argv[1]):
    size = GatingSize(tokens, experts, k)
    logits = router_logits(size, torch.Generator().manual_seed(tokens + experts + k))
    want = eager_gating(logits, k)
    got = fused_gating(logits, k)
    same = [a.dtype == b.dtype and a.shape == b.shape for a, b in zip(want, got)]
    results[f"{tokens}x{experts}k{k}"] = {
        "meta": all(same),
        "ids": torch.equal(want[0], got[0]),
        "weights_err": float((want[1] - got[1]).abs().max()),
        "positions": torch.equal(want[2], got[2]),
        "counts": torch.equal(want[3], got[3]),
        "blocks": (tokens + BLOCK_T - 1) // BLOCK_T,
    }

# the pair's two sides through their contract, at the CPU size: the fused side compiles on
# throwaway logits in setup() and must answer the inputs it is handed
from core.benchmark import BenchContext
from ch17.baseline_moe_gating import EagerGating
from ch17.optimized_moe_gating import FusedGating
ctx = BenchContext(seed=0, device="cpu")
sides = [EagerGating(), FusedGating()]
for side in sides:
    side.ctx = ctx
    side.setup(ctx)
pair_ok = True
for seed in (5, 6):
    logits = sides[0].make_inputs(seed)
    want, got = sides[0].run(logits), sides[1].run(logits)
    pair_ok &= all(torch.allclose(a.double(), b.double(), rtol=1e-5, atol=1e-6) and a.dtype == b.dtype
                   for a, b in zip(want, got))
results["pair"] = {"ok": bool(pair_ok)}
print(json.dumps(results))
'''
# tokens not a multiple of the block, one block, many blocks; experts not a power of two;
# top-1, top-2, top-3 (not a power of two), top-8 over 128 experts
GATING_SHAPES = [(70, 16, 2), (32, 64, 1), (100, 64, 8), (45, 128, 8), (67, 12, 3)]


@pytest.mark.skipif(importlib.util.find_spec("triton") is None, reason="triton is not installed")
def test_fused_gating_kernel_equals_eager_gating_under_the_triton_interpreter():
    env = {**os.environ, "TRITON_INTERPRET": "1", "PYTHONWARNINGS": "ignore"}
    done = subprocess.run([sys.executable, "-c", GATING_CHILD, json.dumps(GATING_SHAPES)], env=env,
                          cwd=REPO_ROOT, capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    results = json.loads(done.stdout.strip().splitlines()[-1])
    assert results.pop("pair")["ok"]
    assert len(results) == len(GATING_SHAPES)
    assert any(r["blocks"] > 2 for r in results.values())  # the cross-block scan is exercised
    for name, r in results.items():
        assert r["meta"] and r["ids"] and r["positions"] and r["counts"], (name, r)
        assert r["weights_err"] < 1e-6, (name, r)


@pytest.mark.parametrize("size", [GatingSize(96, 16, 2), GatingSize(50, 128, 8)])
def test_eager_gating_matches_the_sort_based_reference(size):
    bench = GatingBench()
    bench.ctx = CPU
    bench.top_k = size.top_k
    logits = router_logits(size, torch.Generator().manual_seed(4))
    ids, weights, positions, counts = eager_gating(logits, size.top_k)
    ref = bench.reference(logits)
    assert torch.equal(ids, ref[0]) and torch.equal(positions, ref[2]) and torch.equal(counts, ref[3])
    torch.testing.assert_close(weights, ref[1], rtol=1e-6, atol=1e-7)
    torch.testing.assert_close(weights.sum(-1), torch.ones(size.tokens))
    # every expert's positions are 0..count-1, in token order
    for e in range(size.experts):
        rows, cols = (ids == e).nonzero(as_tuple=True)
        assert positions[rows, cols].tolist() == list(range(int(counts[e])))


def test_router_logits_have_no_ties_within_a_token():
    logits = router_logits(GatingSize(256, 128, 8), torch.Generator().manual_seed(0))
    gaps = logits.sort(dim=-1).values.diff(dim=-1)
    assert float(gaps.min()) > 1e-4


# ------------------------------------------------------------------------------------------
# dynamic_routing (simulation)
# ------------------------------------------------------------------------------------------
# A cost table shaped like a small decoder's on a GPU: prefill grows with the prompt, a
# decode step is nearly flat in the batch (launch- and weight-read-bound).
COSTS = StepCosts((64, 256, 1024, 2048, 3072), (0.003, 0.004, 0.010, 0.020, 0.032),
                  (1, 4, 8, 16, 32), (0.003, 0.0031, 0.0032, 0.0035, 0.004))


def fleet_bench(cls, load: float, requests: int = 300):
    """A side on the GPU fleet's shape, over COSTS (no measurement)."""
    bench = cls()
    bench.ctx = CPU
    fleet = replace(GPU_FLEET, requests=requests, load=load)
    type(bench).fleet = property(lambda self: fleet)
    bench.costs, bench.slo = COSTS, fleet.slo(COSTS)
    bench.rate_rps = fleet.load * fleet.capacity_rps(COSTS)
    return bench


@pytest.fixture
def sides():
    from ch17.baseline_dynamic_routing import RoundRobinRouting
    from ch17.optimized_dynamic_routing import LoadAwareRouting
    from ch17.optimized_dynamic_routing_admission import LoadAwareWithAdmission

    made = {}
    for cls in (RoundRobinRouting, LoadAwareRouting, LoadAwareWithAdmission):
        sub = type(cls.__name__, (cls,), {})  # fleet is patched on a subclass, not the pair's class
        made[cls.__name__] = sub
    return made


def test_step_costs_interpolate_and_clamp():
    assert COSTS.prefill(64) == 0.003 and COSTS.prefill(640) == pytest.approx(0.007)
    assert COSTS.prefill(10_000) == 0.032 and COSTS.decode(0) == 0.0
    assert COSTS.decode(6) == pytest.approx(0.00315)


def test_simulation_invariants_and_determinism(sides, monkeypatch):
    bench = fleet_bench(sides["LoadAwareRouting"], load=1.1)
    inputs = bench.make_inputs(3)
    requests = bench.requests(inputs)
    fleet = bench.fleet
    start = Replica.start

    def checked_start(self, now):
        start(self, now)
        assert len(self.running) + len(self._admitted) <= self.width
        assert 0 <= self.kv_used <= self.kv_tokens
    monkeypatch.setattr(Replica, "start", checked_start)
    first = bench.simulate(inputs)
    again = bench.simulate(inputs)
    assert [t.token_s for t in first.served] == [t.token_s for t in again.served]
    assert not first.rejected and len(first.served) == len(requests)
    for timing, request in zip(first.served, requests):
        assert len(timing.token_s) == request.max_new
        assert timing.token_s == sorted(timing.token_s)
        # the first token needs at least this request's own prefill after its arrival
        assert timing.ttft_s >= COSTS.prefill(request.prompt) - 1e-12
    used = set(first.replica_of.values())
    assert used == set(range(fleet.replicas))


def test_round_robin_cycles_and_queue_and_kv_aware_avoids_the_backed_up_replica():
    rr = RoundRobin()
    replicas = [Replica(COSTS, width=4, kv_tokens=10_000) for _ in range(3)]
    assert [rr.route(None, replicas, 0.0) for _ in range(5)] == [0, 1, 2, 0, 1]
    long_prompt = SimRequest(0, 0.0, 3000, 10)
    replicas[0].queue.extend([long_prompt, replace(long_prompt, id=1)])
    replicas[1].queue.append(SimRequest(2, 0.0, 100, 10))
    assert QueueAndKVAware().route(SimRequest(3, 0.0, 64, 4), replicas, 0.0) == 2
    # a replica without KV room is chosen only when all lack it
    replicas[2].kv_used = 9_999
    assert QueueAndKVAware().route(SimRequest(4, 0.0, 64, 4), replicas, 0.0) == 1


def test_load_aware_routing_balances_alternating_long_and_short_requests():
    # every other request is a long document: round-robin sends all of them to replica 0,
    # which then needs 30 ms of prefill every 24 ms; spread over two replicas they fit
    requests = [SimRequest(i, 0.012 * i, 3000 if i % 2 == 0 else 64, 8) for i in range(40)]
    slo = SLO(ttft_s=0.1, tpot_s=0.05)
    rr = simulate(requests, RoundRobin(), COSTS, replicas=2, width=8, kv_tokens=100_000)
    aware = simulate(requests, QueueAndKVAware(), COSTS, replicas=2, width=8, kv_tokens=100_000)
    assert {rr.replica_of[i] for i in range(0, 40, 2)} == {0}
    assert {aware.replica_of[i] for i in range(0, 40, 2)} == {0, 1}
    fair, skewed = summarize(aware.served, slo), summarize(rr.served, slo)
    assert fair.ttft_p99_s < 0.5 * skewed.ttft_p99_s
    assert fair.met == 40 > skewed.met


def test_early_rejection_raises_goodput_under_overload_and_accounts_for_every_request(sides):
    rr = fleet_bench(sides["RoundRobinRouting"], load=1.3)
    admission = fleet_bench(sides["LoadAwareWithAdmission"], load=1.3)
    inputs = rr.make_inputs(1)
    base, gated = rr.simulate(inputs), admission.simulate(inputs)
    assert not base.rejected and gated.rejected
    assert len(gated.served) + len(gated.rejected) == rr.fleet.requests
    assert admission.stats(gated).goodput_rps > rr.stats(base).goodput_rps
    # run()'s accounting is the same on both sides: nothing lost, nothing half-served
    assert torch.equal(rr.run(inputs), admission.run(inputs))


def test_admission_rejects_only_when_the_predicted_ttft_misses_the_slo():
    replica = Replica(COSTS, width=4, kv_tokens=100_000)
    request = SimRequest(0, 0.0, 1024, 8)
    assert AdmissionControl(SLO(0.05, 1.0)).route(request, [replica], 0.0) == 0  # 10 ms prefill
    replica.queue.extend(SimRequest(i, 0.0, 3072, 8) for i in range(1, 4))  # 96 ms ahead
    assert replica.predicted_ttft(request, 0.0) == pytest.approx(0.096 + 0.010)
    assert AdmissionControl(SLO(0.05, 1.0)).route(request, [replica], 0.0) is None


def test_measured_costs_are_shared_by_both_sides_on_the_cpu():
    from ch17.baseline_dynamic_routing import RoundRobinRouting
    from ch17.optimized_dynamic_routing import LoadAwareRouting

    a, b = set_up(RoundRobinRouting), set_up(LoadAwareRouting)
    assert a.costs is b.costs and len(a.costs.decode_s) == len(routing.CPU_FLEET.batch_sizes)
    assert all(s > 0 for s in a.costs.prefill_s + a.costs.decode_s)
    inputs = a.make_inputs(2)
    assert torch.equal(a.run(inputs), b.run(inputs))
    assert not torch.equal(a.run(inputs), a.run(a.make_inputs(3)))


# ------------------------------------------------------------------------------------------
# moe_router_topology (simulation)
# ------------------------------------------------------------------------------------------
def test_dispatch_bytes_deduplicates_per_gpu_and_skips_the_local_one():
    cluster = replace(CPU_CLUSTER, hidden=1)  # 2 bytes per copy; 4 GPUs, token t on GPU t
    gpu_of_expert = torch.tensor([0, 0, 1, 1, 2, 2, 3, 3] + [3] * 8)
    local = torch.tensor([[0, 1], [2, 3], [4, 5], [6, 7]])  # every token's experts are on its GPU
    assert int(dispatch_bytes(local, gpu_of_expert, cluster).sum()) == 0
    ids = torch.tensor([[2, 3], [0, 6], [0, 1], [0, 4]])
    sent = dispatch_bytes(ids, gpu_of_expert, cluster)
    assert sent[0].tolist() == [0, 2, 0, 0]  # one copy to GPU 1 for its two experts there
    assert sent[1].tolist() == [2, 0, 0, 2]
    assert sent[2].tolist() == [2, 0, 0, 0]
    assert sent[3].tolist() == [2, 0, 2, 0]


def test_all_to_all_time_is_set_by_the_busiest_link():
    cluster = CPU_CLUSTER  # 2 nodes x 2 GPUs
    sent = torch.zeros(4, 4)
    sent[0, 1] = 4e9  # inside node 0
    sent[0, 2] = 1e9  # node 0 -> node 1
    links = Links(nvlink_gbps=400.0, internode_gbps=50.0, measured_nvlink=False)
    assert all_to_all_seconds(sent, cluster, links) == pytest.approx(2 * max(4 / 400, 1 / 50))


def test_locality_placement_recovers_the_routers_topics_and_cuts_traffic():
    from ch17.baseline_moe_router_topology import UniformPlacement
    from ch17.optimized_moe_router_topology import LocalityAwarePlacement

    uniform, local = set_up(UniformPlacement), set_up(LocalityAwarePlacement)
    c = CPU_CLUSTER
    placement = local.gpu_of_expert
    assert torch.bincount(placement, minlength=c.gpus).tolist() == [c.experts // c.gpus] * c.gpus
    topics = topic_of_experts(c, CPU.seed, "cpu")
    # topics of 4 experts, 4 per GPU: the greedy partition puts each topic on one GPU
    assert all(len(set(topics[placement == g].tolist())) == 1 for g in range(c.gpus))
    assert torch.equal(uniform.gpu_of_expert, uniform_placement(c, "cpu"))
    logits = uniform.make_inputs(7)
    (ids_u, load_u), (ids_l, load_l) = uniform.run(logits), local.run(logits)
    assert torch.equal(ids_u, ids_l) and torch.equal(load_u, load_l)  # same routing, same work
    assert local.sent.shape == (c.steps, c.gpus, c.gpus)  # one plan per step of the call
    assert float(local.sent.sum()) < 0.7 * float(uniform.sent.sum())
    links = Links(450.0, 50.0, False)
    for step in range(c.steps):
        assert all_to_all_seconds(local.sent[step], c, links) < all_to_all_seconds(uniform.sent[step], c, links)
    uniform.links = local.links = links  # the cost of a call is the sum of its steps'
    steps = logits.topk(c.top_k, dim=-1).indices
    assert uniform.simulated_cost(logits) == pytest.approx(
        sum(all_to_all_seconds(sent, c, links) + expert_seconds(ids, uniform.gpu_of_expert, c)
            for sent, ids in zip(uniform.sent, steps)))


def test_expert_time_is_the_busiest_gpus_share_of_the_gemms():
    c = CPU_CLUSTER  # 4 GPUs, 16 experts: experts 0-3 on GPU 0, ...
    ids = torch.tensor([[0, 1], [2, 5], [3, 9], [12, 13]])  # GPU 0 gets 4 token-experts
    flops = 4 * 6 * c.hidden * c.expert_ffn
    assert expert_seconds(ids, uniform_placement(c, "cpu"), c, tflops=1.0) == pytest.approx(flops / 1e12)


def test_no_topic_structure_no_gain_and_the_gain_grows_with_it():
    """The sweep's sanity: a router without topics gives locality nothing to find (1.00x);
    with the stored bias 2.0 the modelled gain, experts' compute priced, is well below the
    links-only 1.46x it was stored at."""
    from ch17 import _moe_router_topology_common as topology

    table = topology.sweep(biases=(0.0, 2.0), internode=(50.0,))
    zero, two = [line.split("|") for line in table.splitlines()[2:]]
    assert zero[3].strip() == "1.00×" and zero[4].strip() == "1.00×"
    assert 1.05 < float(two[3].strip()[:-1]) < float(two[4].strip()[:-1])


def test_the_gpu_clusters_per_seed_ratios_are_steady_enough_to_store():
    """The GPU sizes' simulated costs, priced on the CPU (the model does not need the GPU):
    over the harness's three seeds the ratio of the placements must stay within the ±5% a
    stored ratio may span, which one step per call did not (1.34-1.60 over 12 seeds)."""
    from ch17 import _moe_router_topology_common as topology
    from ch17.baseline_moe_router_topology import UniformPlacement
    from ch17.optimized_moe_router_topology import LocalityAwarePlacement

    sides = []
    for cls in (UniformPlacement, LocalityAwarePlacement):
        side = type("OnTheGpuCluster", (cls,), {"cluster": topology.GPU_CLUSTER})()
        side.ctx = CPU
        side.setup(CPU)
        side.links = Links(450.0, 50.0, False)
        sides.append(side)
    ratios = []
    for seed in (11, 12, 13):
        logits = sides[0].make_inputs(seed)
        ratios.append(sides[0].simulated_cost(logits) / sides[1].simulated_cost(logits))
    assert 1.05 < min(ratios) and max(ratios) / min(ratios) < 1.10, ratios


def test_coactivation_counts_pairs_of_experts():
    co = coactivation(torch.tensor([[0, 2], [1, 3], [0, 2], [1, 3], [0, 1]]), 4)
    assert co.tolist() == [[3, 1, 2, 0], [1, 3, 0, 2], [2, 0, 2, 0], [0, 2, 0, 2]]
    # experts 0 and 2 fire together, as do 1 and 3; uniform placement would split both pairs
    assert locality_placement(co, 2).tolist() == [0, 1, 0, 1]


# ------------------------------------------------------------------------------------------
# pipeline_parallelism (two GPUs; a CPU "split" here)
# ------------------------------------------------------------------------------------------
def test_pipeline_sides_agree_with_the_unsplit_model_and_micro_batch(monkeypatch):
    from ch17._pipeline_parallelism_common import CPU_SIZES, Stage
    from ch17.baseline_pipeline_parallelism import OneInFlight
    from ch17.optimized_pipeline_parallelism import MicroBatchedPipeline

    base, piped = set_up(OneInFlight), set_up(MicroBatchedPipeline)
    assert base.stages[1].model is not base.stages[0].model  # two models, same weights
    assert torch.equal(base.stages[1].model.lm_head, base.stages[0].model.lm_head)
    seen = []
    call = Stage.__call__

    def spy(self, x):
        seen.append((self.first, x.shape[0]))
        return call(self, x)
    monkeypatch.setattr(Stage, "__call__", spy)
    tokens = base.make_inputs(5)
    want = base.run(tokens)
    assert seen == [(0, CPU_SIZES.batch), (CPU_SIZES.cfg.n_layers // 2, CPU_SIZES.batch)]
    seen.clear()
    got = piped.run(tokens)
    per = CPU_SIZES.batch // CPU_SIZES.micro_batches
    assert seen == [(0, per), (CPU_SIZES.cfg.n_layers // 2, per)] * CPU_SIZES.micro_batches
    torch.testing.assert_close(got, want, rtol=1e-5, atol=1e-5)
    torch.testing.assert_close(base.reference(tokens), want, rtol=1e-5, atol=1e-5)
    # the stages really are the decoder: the unsplit forward's last-token logits
    full = base.stages[0].model(tokens)[:, -1].float()
    torch.testing.assert_close(want, full, rtol=1e-5, atol=1e-5)


# ------------------------------------------------------------------------------------------
# prefill_decode_disagg (two GPUs, one process; ch15's CPU "split" here)
# ------------------------------------------------------------------------------------------
def test_handoffs_copy_the_prompt_kv_and_both_sides_serve_the_same_tokens(monkeypatch):
    import ch17._prefill_decode_disagg_common as disagg
    from ch17.baseline_prefill_decode_disagg import BlockingHandoff
    from ch17.optimized_prefill_decode_disagg import OverlappedHandoff
    from core.goodput import replay, token_table

    ctx = BenchContext(seed=3, device="cpu")
    blocking, overlapped = set_up(BlockingHandoff, ctx), set_up(OverlappedHandoff, ctx)
    assert BlockingHandoff.transfer is disagg.blocking_handoff
    assert OverlappedHandoff.transfer is disagg.handoff and OverlappedHandoff.goal == "goodput"
    # the blocking hand-off moves exactly the prompt's positions of every layer
    cfg = blocking.sizes.cfg
    src, dst = blocking.rows_kv(0, 1), blocking.rows_kv(1, 2)
    slot, row = src.allocate(10), dst.allocate(12)
    src.k.normal_(), src.v.normal_()
    dst.k.zero_(), dst.v.zero_()
    assert disagg.blocking_handoff(src, slot, dst, row, 7) is None
    assert torch.equal(dst.k[:, row, :7], src.k[:, slot, :7])
    assert torch.equal(dst.v[:, row, :7], src.v[:, slot, :7])
    assert int(dst.k[:, row, 7:].count_nonzero()) == 0 and dst.k.shape[0] == cfg.n_layers
    # every prefilled request with more than one token is handed off once, on both sides
    trace = blocking.trace(0)
    counts = {}
    for side in (blocking, overlapped):
        seen = []
        real = type(side).transfer

        def counted(*args, real=real, seen=seen):
            seen.append(args[4])
            return real(*args)
        monkeypatch.setattr(type(side), "transfer", staticmethod(counted))
        counts[type(side).__name__] = (token_table(replay(side.engine(), trace)), sorted(seen))
    (tokens_a, moved_a), (tokens_b, moved_b) = counts.values()
    assert tokens_a == tokens_b
    assert moved_a == moved_b == sorted(len(r.prompt) for r in trace.requests if r.max_new > 1)
    inputs = blocking.make_inputs(11)
    assert torch.equal(blocking.run(inputs), overlapped.run(inputs))


def test_trace_variants_change_only_the_request_shapes():
    from ch17.baseline_prefill_decode_disagg import BlockingHandoff
    from ch17.baseline_prefill_decode_disagg_tpot_heavy import BlockingHandoffTPOTHeavy
    from ch17.baseline_prefill_decode_disagg_ttft_heavy import BlockingHandoffTTFTHeavy
    from ch17._prefill_decode_disagg_common import TTFTHeavy
    from ch17.optimized_prefill_decode_disagg import OverlappedHandoff
    from ch17.optimized_prefill_decode_disagg_ttft_heavy import OverlappedHandoffTTFTHeavy

    assert issubclass(OverlappedHandoffTTFTHeavy, OverlappedHandoff)
    assert OverlappedHandoffTTFTHeavy.gpu is TTFTHeavy.gpu is BlockingHandoffTTFTHeavy.gpu
    assert OverlappedHandoffTTFTHeavy.goal == "goodput" and BlockingHandoffTTFTHeavy.goal == "speed"
    for heavy in (BlockingHandoffTTFTHeavy, BlockingHandoffTPOTHeavy):
        assert heavy.transfer is BlockingHandoff.transfer
        for sizes in (heavy.gpu, heavy.cpu):
            assert sizes.prompt_len[1] + sizes.output_len[1] <= sizes.cfg.max_seq
    ttft, tpot = BlockingHandoffTTFTHeavy.gpu, BlockingHandoffTPOTHeavy.gpu
    assert ttft.prompt_len[0] > tpot.prompt_len[1] and tpot.output_len[0] > ttft.output_len[1]


# ------------------------------------------------------------------------------------------
# every pair through the harness
# ------------------------------------------------------------------------------------------
@cpu_only
def test_every_ch17_pair_verifies_or_skips_through_the_harness():
    from core.child import run_pair
    from tests.conftest import spec_for
    from core.discovery import discover

    chapter = next(c for c in discover(REPO_ROOT) if c.name == "ch17")
    assert {p.stem for p in chapter.pairs} == {"moe_gating", "dynamic_routing", "moe_router_topology",
                                               "pipeline_parallelism", "prefill_decode_disagg",
                                               "prefill_decode_disagg_ttft_heavy",
                                               "prefill_decode_disagg_tpot_heavy"}
    statuses = {}
    for pair in chapter.pairs:
        result = run_pair(spec_for(pair, pair.examples, iterations=2, warmup=1))
        for ex in result.examples:
            statuses[ex.id] = (ex.status, ex.reason)
            if pair.stem == "dynamic_routing" and ex.status == "ok":  # gated on simulated goodput
                assert ex.goal == "goodput" and ex.simulated
                assert len(ex.timing.goodput) == len(result.baseline.goodput) == 3
    for name in ("dynamic_routing", "dynamic_routing_admission", "moe_router_topology",
                 "prefill_decode_disagg", "prefill_decode_disagg_ttft_heavy",
                 "prefill_decode_disagg_tpot_heavy"):
        assert statuses[f"ch17:{name}"][0] == "ok", statuses
    for name in ("moe_gating", "pipeline_parallelism"):
        assert statuses[f"ch17:{name}"][0] == "skipped", statuses
        assert "CUDA" in statuses[f"ch17:{name}"][1]


def test_the_rate_sweep_takes_another_chapters_stem():
    """ch15.sweep_rates places a goodput pair's trace (the rate where the baseline starts to
    miss its SLO); the ch17 disaggregation stems share ch15's sizes, so it sweeps them too."""
    from ch15.sweep_rates import sweep

    rows = sweep("ch17:prefill_decode_disagg", [20.0], seconds=0.3, device="cpu")
    assert rows[0].startswith("`prefill_decode_disagg`") and "2 replay(s) per side" in rows[0]
    assert rows[-1].startswith("| 20 | ") and rows[-1].count("%") == 4  # each side's share met, twice
    assert rows[-1].count(" · ") == 8  # both sides' four figures, two repeats each


def test_the_rate_sweep_judges_the_same_replays_by_other_ttft_targets():
    """`--ttft`: each side gains a share-met column per extra TTFT target, from the same
    replays. A target no request can meet (0 s: a first token takes time) is 0%; one every
    served request meets (an hour) is 100%, on both sides and both repeats."""
    from ch15.sweep_rates import sweep

    rows = sweep("ch17:prefill_decode_disagg", [20.0], seconds=0.3, device="cpu",
                 ttft_targets=[0.0, 3600.0])
    assert "met at TTFT ≤ 0 ms | met at TTFT ≤ 3.6e+06 ms" in rows[2]
    assert rows[2].count("|") == rows[3].count("|") == rows[-1].count("|") == 14
    cells = [c.strip() for c in rows[-1].strip("| \n").split("|")]
    assert cells[5:7] == ["0% · 0%", "100% · 100%"] and cells[11:13] == ["0% · 0%", "100% · 100%"]
