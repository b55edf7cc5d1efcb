"""Chapter 15's MoE pairs on a CPU: the dispatch math, the all-to-all splits, two gloo ranks.

- `moe_dispatch`: sort-by-expert + grouped GEMM equals the masked per-expert loop (the
  decoder's own MoE) at tiny sizes, in fp32 and bf16, with idle experts and a single group;
  both equal the float64 reference.
- `expert_parallel`: the split sizes and the receiver's rebuilt expert ids; the padded-list
  and exact-split exchanges on two real gloo ranks agree with the one-device reference.
- `moe_overlap`: the shared-expert layer's sides agree (the streams need a GPU).
Timing, the CUTLASS grouped GEMM and NCCL need a GPU: tests/test_real_pairs.py runs the
pairs' CPU paths through the harness.
"""
from __future__ import annotations

import socket
from dataclasses import replace

import pytest
import torch
import torch.multiprocessing as mp

from ch15._expert_parallel_common import source_expert_ids, split_sizes
from ch15._moe_dispatch_common import (TINY_MOE, expert_offsets, grouped_experts, grouped_mm,
                                       masked_experts, padded_bmm_experts, reference_moe, route)
from ch15.decoder import MoE


def _layer(dtype, seed=0, **over):
    cfg = replace(TINY_MOE, dtype=dtype, **over)
    moe = MoE(cfg, torch.Generator().manual_seed(seed))
    return cfg, moe


def _both(moe, cfg, x):
    weights, experts = route(x, moe.router, cfg.top_k)
    loop = masked_experts(x, weights, experts, moe.w_gate_up, moe.w_down)
    grouped = grouped_experts(x, weights, experts, moe.w_gate_up.transpose(1, 2),
                              moe.w_down.transpose(1, 2))
    return loop, grouped, weights, experts


@pytest.mark.parametrize("n_experts, top_k, tokens", [(4, 2, 64), (8, 2, 37), (6, 3, 50), (4, 1, 9)])
def test_grouped_dispatch_equals_masked_loop_fp32(n_experts, top_k, tokens):
    cfg, moe = _layer(torch.float32, n_experts=n_experts, top_k=top_k)
    x = torch.randn(tokens, cfg.d_model, generator=torch.Generator().manual_seed(1))
    loop, grouped, weights, experts = _both(moe, cfg, x)
    torch.testing.assert_close(grouped, loop, rtol=1e-5, atol=1e-5)
    padded = padded_bmm_experts(x, weights, experts, moe.w_gate_up.transpose(1, 2),
                                moe.w_down.transpose(1, 2))
    torch.testing.assert_close(padded, loop, rtol=1e-5, atol=1e-5)
    ref = reference_moe(x, moe.router, moe.w_gate_up, moe.w_down, cfg.top_k)
    torch.testing.assert_close(grouped.double(), ref, rtol=1e-4, atol=1e-4)
    assert grouped.abs().mean() > 0.05  # not trivially zero


def test_grouped_dispatch_equals_masked_loop_bf16_within_the_pairs_tolerance():
    cfg, moe = _layer(torch.bfloat16, n_experts=8, top_k=2, d_model=128, ffn=64)
    x = torch.randn(256, cfg.d_model, generator=torch.Generator().manual_seed(2)).to(torch.bfloat16)
    loop, grouped, _, _ = _both(moe, cfg, x)
    assert grouped.dtype == torch.bfloat16
    torch.testing.assert_close(grouped, loop, rtol=2e-2, atol=1e-2)


def test_idle_experts_and_one_hot_routing():
    """Experts that get no token (empty groups in offs) and every token on one expert."""
    cfg, moe = _layer(torch.float32, n_experts=4, top_k=2)
    with torch.no_grad():  # a router that always prefers experts 2 then 0: 1 and 3 stay idle
        moe.router.zero_()
        moe.router[2] += 1.0
        moe.router[0] += 0.5
    x = torch.rand(16, cfg.d_model, generator=torch.Generator().manual_seed(3)) + 0.1
    loop, grouped, weights, experts = _both(moe, cfg, x)
    assert set(experts.unique().tolist()) == {0, 2}
    torch.testing.assert_close(grouped, loop, rtol=1e-5, atol=1e-5)
    padded = padded_bmm_experts(x, weights, experts, moe.w_gate_up.transpose(1, 2),
                                moe.w_down.transpose(1, 2))
    torch.testing.assert_close(padded, loop, rtol=1e-5, atol=1e-5)


def test_expert_offsets_sort_stably_and_count_each_group():
    ids = torch.tensor([2, 0, 2, 1, 0, 2, 3, 0])
    order, offs = expert_offsets(ids, 5)
    assert offs.dtype == torch.int32 and offs.tolist() == [3, 4, 7, 8, 8]  # group 4 empty
    assert ids[order].tolist() == [0, 0, 0, 1, 2, 2, 2, 3]
    assert order.tolist()[:3] == [1, 4, 7]  # stable: each group keeps the original order


def test_grouped_mm_matches_per_group_matmuls():
    gen = torch.Generator().manual_seed(4)
    rows, w = torch.randn(10, 8, generator=gen), torch.randn(3, 8, 4, generator=gen)  # 16-byte rows, as the op needs
    offs = torch.tensor([4, 4, 10], dtype=torch.int32)  # group 1 empty
    want = torch.cat([rows[:4] @ w[0], rows[4:] @ w[2]])
    torch.testing.assert_close(grouped_mm(rows, w, offs), want)


# ---------------------------------------------------------------- expert_parallel: the splits

def test_split_sizes_sum_each_ranks_expert_range():
    counts = torch.tensor([3, 0, 5, 2, 7, 1, 0, 4])
    assert split_sizes(counts, 2).tolist() == [10, 12]
    assert split_sizes(counts, 4).tolist() == [3, 7, 8, 4]
    assert split_sizes(counts, 1).tolist() == [22]


def test_receiver_rebuilds_each_rows_expert_from_the_counts():
    # from source 0: 2 rows for local expert 0, 0 for expert 1, 1 for 2; from source 1: 1, 3, 0
    recv = torch.tensor([[2, 0, 1], [1, 3, 0]])
    assert source_expert_ids(recv).tolist() == [0, 0, 2, 0, 1, 1, 1]
    assert source_expert_ids(recv, total=7).tolist() == [0, 0, 2, 0, 1, 1, 1]
    assert source_expert_ids(torch.zeros(2, 3, dtype=torch.long)).numel() == 0


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _ep_rank(rank: int, world: int, port: int, results) -> None:
    import torch.distributed as dist

    from ch15.baseline_expert_parallel import PaddedListAllToAll
    from ch15.optimized_expert_parallel import ExactSplitAllToAllSingle
    from core.benchmark import BenchContext

    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        outs = []
        for cls in (PaddedListAllToAll, ExactSplitAllToAllSingle):
            bench = cls()
            bench.ctx = BenchContext(seed=7, device="cpu")
            bench.setup(bench.ctx)
            inputs = bench.make_inputs(11)
            outs.append((bench.run(inputs), bench.reference(inputs)))
        (base, ref), (opt, _) = outs
        results.put((rank, (base - opt).abs().max().item(), (base.double() - ref).abs().max().item(),
                     base.abs().mean().item()))
    finally:
        dist.destroy_process_group()


def test_expert_parallel_sides_agree_with_the_reference_on_two_gloo_ranks():
    ctx = mp.get_context("spawn")
    results, port = ctx.Queue(), _free_port()
    procs = [ctx.Process(target=_ep_rank, args=(r, 2, port, results)) for r in range(2)]
    for p in procs:
        p.start()
    got = [results.get(timeout=120) for _ in procs]
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    assert sorted(r for r, *_ in got) == [0, 1]
    for _, base_vs_opt, base_vs_ref, mean in got:
        assert base_vs_opt < 1e-5 and base_vs_ref < 1e-4 and mean > 0.05


# ---------------------------------------------------------------- moe_overlap

def test_shared_expert_sides_agree_on_cpu():
    from ch15.baseline_moe_overlap import SequentialSharedExpert
    from ch15.optimized_moe_overlap import SideStreamSharedExpert
    from core.benchmark import BenchContext

    outs = []
    for cls in (SequentialSharedExpert, SideStreamSharedExpert):
        bench = cls()
        bench.ctx = BenchContext(seed=5, device="cpu")
        bench.setup(bench.ctx)
        x = bench.make_inputs(6)
        outs.append((bench.run(x), bench.reference(x)))
    (base, ref), (opt, _) = outs
    torch.testing.assert_close(opt, base)
    torch.testing.assert_close(base.double(), ref, rtol=1e-4, atol=1e-4)


# ---------------------------------------------------------------- continuous_batching_multigpu

def test_shared_queue_claims_in_order_never_twice_and_drains():
    from ch15._continuous_batching_multigpu_common import SharedQueue

    store = torch.distributed.HashStore()
    a, b = SharedQueue(store, "head", 7), SharedQueue(store, "head", 7)  # two replicas
    assert list(a.claim(3)) == [0, 1, 2]
    assert list(b.claim(0)) == []  # a full replica claims nothing (and moves nothing)
    assert list(b.claim(2)) == [3, 4]
    assert list(a.claim(5)) == [5, 6]  # only what is left
    assert list(b.claim(1)) == [] and list(a.claim(4)) == []
    assert list(SharedQueue(store, "another-call", 2).claim(9)) == [0, 1]  # a fresh key, a fresh queue


def test_two_replicas_pulling_from_one_queue_serve_every_request_once_with_the_same_tokens():
    """Two engines on two threads share one queue (a HashStore counter): every request is
    served exactly once, by whichever replica had room, with the tokens one replica alone gives."""
    import threading

    from ch15._continuous_batching_common import ContinuousEngine, StaticEngine
    from ch15._continuous_batching_multigpu_common import CPU, SharedQueue, drain, serve_pulling
    from ch15.decoder import Decoder
    from ch15.kv import ContiguousKV
    from core.goodput import Request

    model = Decoder(CPU.cfg, seed=0)
    gen = torch.Generator().manual_seed(1)
    requests = [Request(i, 0.0, tuple(torch.randint(0, CPU.cfg.vocab, (int(n),), generator=gen).tolist()),
                        int(m))
                for i, (n, m) in enumerate(zip(torch.randint(4, 20, (10,), generator=gen),
                                               torch.randint(2, 12, (10,), generator=gen)))]

    def engine(cls):
        return cls(model, ContiguousKV(CPU.cfg, CPU.width + 1, "cpu"), CPU.width)

    alone: dict[int, list[int]] = {r.id: [] for r in requests}
    single = engine(StaticEngine)
    for r in requests:
        single.add(r)
    drain(single, alone)

    store, tables = torch.distributed.HashStore(), [None, None]

    def replica(i):
        tables[i] = serve_pulling(engine(ContinuousEngine), requests, SharedQueue(store, "q", 10), CPU.width)

    threads = [threading.Thread(target=replica, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert tables[0] and tables[1]  # both replicas pulled work
    assert not set(tables[0]) & set(tables[1])  # nobody served twice
    merged = {**tables[0], **tables[1]}
    assert merged == alone  # everyone served, same tokens, each exactly max_new of them
    assert all(len(merged[r.id]) == r.max_new for r in requests)


def test_every_call_serves_the_same_mix_of_lengths_in_an_order_drawn_from_the_seed(monkeypatch):
    """make_inputs spreads the prompt and output lengths evenly over their ranges; the seed
    only assigns them to requests, so every call asks the same work (and workload() is exact)."""
    import ch15._continuous_batching_multigpu_common as common
    from core.benchmark import BenchContext

    monkeypatch.setattr(common.dist, "get_world_size", lambda: 2)  # no process group needed
    bench = common.MultiReplicaBench()
    bench.ctx = BenchContext(device="cpu")
    one, two = bench.make_inputs(1), bench.make_inputs(2)
    for key, span in (("lengths", common.CPU.prompt_len), ("max_new", common.CPU.output_len)):
        assert sorted(one[key].tolist()) == sorted(two[key].tolist())  # the same mix...
        assert not torch.equal(one[key], two[key])  # ...in another order
        assert (one[key].min().item(), one[key].max().item()) == span
    assert not torch.equal(one["prompts"], two["prompts"])
    assert bench.workload().units == one["max_new"].sum().item()


def test_at_the_gpu_sizes_static_batches_take_more_steps_than_refilled_rows():
    """The lesson at the pair's GPU sizes, counted in engine steps (a step's time is its
    host's launches, nearly flat in its rows): one replica's share of the spread output
    lengths takes static batching ~45 steps and continuous batching ~31. Short prompts on the
    CPU model: a step's count does not depend on the prompt."""
    from ch15._continuous_batching_common import ContinuousEngine, StaticEngine
    from ch15._continuous_batching_multigpu_common import CPU, GPU, spread
    from ch15.decoder import Decoder
    from ch15.kv import ContiguousKV
    from core.goodput import Request

    model = Decoder(CPU.cfg, seed=0)
    gen = torch.Generator().manual_seed(5)
    outputs = spread(GPU.output_len, 2 * GPU.per_replica, gen, "cpu").tolist()[::2]  # rank 0 of 2

    def steps(cls) -> int:
        engine = cls(model, ContiguousKV(CPU.cfg, GPU.width + 1, "cpu"), GPU.width)
        for i, m in enumerate(outputs):
            engine.add(Request(i, 0.0, (1, 2, 3), m))
        count = 0
        while not engine.idle():
            engine.step()
            count += 1
        return count

    static, continuous = steps(StaticEngine), steps(ContinuousEngine)
    assert static >= 1.25 * continuous, (static, continuous)
