"""ch04 `nvshmem_pipeline` on a CPU: the NCCL-style baseline on gloo ranks, the put/signal
protocol of the symmetric-memory side.

- The baseline (recv, block, isend per micro-batch) matches reference() on 2 and 4 gloo ranks.
- The optimized side's run() on CPU tensors with a fake symmetric-memory handle: its puts land
  in the next stage's slots and give the reference's activations; the signals it issues, replayed
  over several calls in random interleavings of the ranks (as their GPUs would run them), never
  deadlock, never overwrite a slot before it is read, never let a stage read another call's
  data, and leave the flags as setup() left them (what CUDA-graph replay needs). Without the
  "inbox read" hand-back the same replay finds an overwrite, so the check has teeth.
Symmetric memory, NCCL and the timing need GPUs: `bench run --targets ch04:nvshmem_pipeline`.
"""
from __future__ import annotations

import random
import socket

import pytest
import torch
import torch.distributed as dist
import torch.multiprocessing as mp

from ch04._nvshmem_pipeline_common import CPU_CONFIG, PipelineForward
from ch04.baseline_nvshmem_pipeline import SendRecvPipeline
from ch04.optimized_nvshmem_pipeline import PutSignalPipeline, symmetric_memory
from ch04.optimized_nvshmem_pipeline_store import StoreIntoNextStage
from core.benchmark import BenchContext, Requirements
from core.pairfile import unmet_requirement
from core.verify import compare

SEED, INPUT_SEED = 3, 11


# ---------------------------------------------------------------- the baseline on gloo ranks

def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _baseline_rank(rank: int, world: int, port: int, results) -> None:
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    try:
        bench = SendRecvPipeline()
        bench.ctx = BenchContext(seed=SEED, device="cpu")
        bench.setup(bench.ctx)
        outs = []
        for seed in (INPUT_SEED, INPUT_SEED + 1, INPUT_SEED):  # twice the same inputs: no state
            x = bench.make_inputs(seed)
            outs.append((bench.run(x), bench.reference(x)))
        (out, ref), (other, _), (again, _) = outs
        check = compare(ref, out, PipelineForward.reference_tolerance, same_dtype=False)
        results.put((rank, check.ok, check.message, torch.equal(out, again), torch.equal(out, other),
                     tuple(out.shape), out.dtype))
    finally:
        dist.destroy_process_group()


@pytest.mark.parametrize("world", [2, 4])
def test_baseline_matches_the_reference_on_gloo_ranks(world):
    ctx = mp.get_context("spawn")
    results, port = ctx.Queue(), _free_port()
    procs = [ctx.Process(target=_baseline_rank, args=(r, world, port, results)) for r in range(world)]
    for p in procs:
        p.start()
    got = sorted(results.get(timeout=180) for _ in procs)
    for p in procs:
        p.join(timeout=60)
        assert p.exitcode == 0
    cfg = CPU_CONFIG
    for rank, ok, message, repeatable, same_for_other_seed, shape, dtype in got:
        assert ok, f"rank {rank}: {message}"
        assert repeatable and not same_for_other_seed, rank
        assert shape == (cfg.microbatches, cfg.tokens, cfg.d_model) and dtype == torch.bfloat16
    assert [r for r, *_ in got] == list(range(world))


# ---------------------------------------------------------------- the optimized side's declarations

def test_optimized_side_is_cuda_only_and_shares_the_baselines_rules():
    bench, base = PutSignalPipeline(), SendRecvPipeline()
    assert bench.supports_cpu is False and "needs a CUDA GPU" in unmet_requirement(bench, "cpu")
    assert base.supports_cpu and unmet_requirement(base, "cpu") is None
    assert base.requires == Requirements(gpus=2, scales="weak")
    assert bench.requires == Requirements(gpus=2, scales="weak", one_node=True)  # peers over NVLink
    assert bench.timing_mode == base.timing_mode == "graph"
    assert type(bench).make_inputs is type(base).make_inputs
    assert type(bench).reference is type(base).reference


def test_missing_signal_ops_are_named(monkeypatch):
    import torch._C._distributed_c10d as c10d

    monkeypatch.setattr(c10d, "_SymmetricMemory", object, raising=False)
    with pytest.raises(RuntimeError, match="put_signal"):
        symmetric_memory()


# ---------------------------------------------------------------- the put/signal protocol

class FakeHandle:
    """The SymmetricMemory calls run() makes, on one process: peers' inboxes are the other
    stages' CPU tensors; signals are only logged (the replay below gives them meaning)."""

    def __init__(self, rank: int, inboxes: list[torch.Tensor], log: list):
        self.rank, self.inboxes, self.log = rank, inboxes, log

    def get_buffer(self, peer, shape, dtype):
        buf = self.inboxes[peer]
        assert tuple(buf.shape) == tuple(shape) and buf.dtype == dtype
        return buf

    def put_signal(self, dst_rank, channel=0, timeout_ms=0):
        assert abs(dst_rank - self.rank) == 1 and timeout_ms > 0
        self.log.append(("put", dst_rank, channel))

    def wait_signal(self, src_rank, channel=0, timeout_ms=0):
        assert abs(src_rank - self.rank) == 1 and timeout_ms > 0
        self.log.append(("wait", src_rank, channel))


def _stages(world: int, monkeypatch, cls: type = PutSignalPipeline
            ) -> tuple[list[PutSignalPipeline], list[list], list[list]]:
    """`world` optimized stages on the CPU wired by FakeHandles: the stages, each one's setup
    log and the log of its first run() (on the same inputs, in chain order)."""
    cfg = CPU_CONFIG
    inboxes = [torch.full((cfg.microbatches, cfg.tokens, cfg.d_model), float("nan"),
                          dtype=torch.bfloat16) for _ in range(world)]
    monkeypatch.setattr(dist, "get_world_size", lambda: world)
    stages, setup_logs = [], []
    for rank in range(world):
        monkeypatch.setattr(dist, "get_rank", lambda rank=rank: rank)
        bench = cls()
        bench.ctx = BenchContext(seed=SEED, device="cpu")
        PipelineForward.setup(bench, bench.ctx)  # weights and neighbours; no symmetric memory
        log: list = []
        bench.connect(inboxes[rank], FakeHandle(rank, inboxes, log))
        stages.append(bench)
        setup_logs.append(list(log))
        log.clear()
    return stages, setup_logs, [s.handle.log for s in stages]


SIDES = [PutSignalPipeline, StoreIntoNextStage]  # a copy into the next slot; the block storing there


@pytest.mark.parametrize("cls", SIDES)
@pytest.mark.parametrize("world", [2, 3, 4])
def test_puts_land_in_the_next_stages_slots_and_give_the_reference(world, cls, monkeypatch):
    stages, _, _ = _stages(world, monkeypatch, cls)
    x = stages[0].make_inputs(INPUT_SEED)
    for rank, bench in enumerate(stages):  # in chain order: each stage's slots are filled
        monkeypatch.setattr(dist, "get_rank", lambda rank=rank: rank)
        out = bench.run(x)
        check = compare(bench.reference(x), out, PipelineForward.reference_tolerance, same_dtype=False)
        assert check.ok, f"stage {rank}: {check.message}"
        if bench.next is not None:
            assert torch.equal(stages[rank + 1].inbox, out)  # every slot, bit for bit


def _replay(world: int, setup_logs: list[list], call_logs: list[list], calls: int, rng: random.Random,
            microbatches: int) -> dict:
    """Run each rank's signals (setup's, then `calls` × one call's) in a random interleaving,
    as the ranks' GPUs would: a wait spins until its flag is 1 and consumes it; a put spins
    until its flag is 0 and sets it. A put on a micro-batch channel is preceded by the copy
    into the receiver's slot (stream order); a wait on one is followed by the block reading
    the slot, before the rank's next signal. Returns the flags at the end."""
    flags: dict[tuple[int, int, int], int] = {}  # (owner, source, channel) -> 0/1
    slots: dict[tuple[int, int], tuple[int, bool]] = {}  # (owner, slot) -> (call written, read)
    programs = [[(-1, op) for op in setup_logs[r]] + [(c, op) for c in range(calls) for op in call_logs[r]]
                for r in range(world)]
    pc, copied = [0] * world, [False] * world  # copied: this put's data is in the slot already

    def step(rank: int) -> bool:
        call, (kind, peer, channel) = programs[rank][pc[rank]]
        if kind == "put":
            key = (peer, rank, channel)
            if channel < microbatches and not copied[rank]:
                written = slots.get((peer, channel))
                assert written is None or written[1], (
                    f"rank {rank} call {call} overwrote slot {channel} of rank {peer} before "
                    f"it read call {written[0]}'s data")
                slots[(peer, channel)] = (call, False)
                copied[rank] = True
            if flags.get(key, 0):
                return False  # spins
            flags[key], copied[rank] = 1, False
        else:
            key = (rank, peer, channel)
            if not flags.get(key, 0):
                return False
            flags[key] = 0
            if channel < microbatches:
                written = slots.get((rank, channel))
                assert written == (call, False), (
                    f"rank {rank} call {call} read slot {channel} holding {written}")
                slots[(rank, channel)] = (call, True)
        pc[rank] += 1
        return True

    while any(pc[r] < len(programs[r]) for r in range(world)):
        ready = [r for r in range(world) if pc[r] < len(programs[r])]
        rng.shuffle(ready)
        assert any(step(r) for r in ready), f"deadlock: {[programs[r][pc[r]] for r in ready]}"
    return flags


@pytest.mark.parametrize("cls", SIDES)
@pytest.mark.parametrize("world", [2, 3, 4])
def test_signals_never_deadlock_race_or_leak_across_calls(world, cls, monkeypatch):
    stages, setup_logs, _ = _stages(world, monkeypatch, cls)
    x = stages[0].make_inputs(INPUT_SEED)
    call_logs = []
    for rank, bench in enumerate(stages):
        monkeypatch.setattr(dist, "get_rank", lambda rank=rank: rank)
        bench.run(x)
        call_logs.append(list(bench.handle.log))
    m = CPU_CONFIG.microbatches
    after_setup = _replay(world, setup_logs, [[] for _ in range(world)], 0, random.Random(0), m)
    rng = random.Random(world)
    for _ in range(200):
        flags = _replay(world, setup_logs, call_logs, 3, rng, m)
        assert {k: v for k, v in flags.items() if v} == {k: v for k, v in after_setup.items() if v}
    # every micro-batch is signalled once per call on every link, and read once
    for rank in range(world - 1):
        assert [c for kind, dst, c in call_logs[rank] if kind == "put" and dst == rank + 1] == \
            list(range(m))
        assert [c for kind, src, c in call_logs[rank + 1] if kind == "wait" and src == rank] == \
            list(range(m))


def test_without_the_hand_back_the_replay_finds_an_overwrite(monkeypatch):
    world = 2
    stages, setup_logs, _ = _stages(world, monkeypatch)
    x = stages[0].make_inputs(INPUT_SEED)
    call_logs = []
    for rank, bench in enumerate(stages):
        monkeypatch.setattr(dist, "get_rank", lambda rank=rank: rank)
        bench.run(x)
        free = bench.free
        call_logs.append([op for op in bench.handle.log if op[2] != free])
    no_setup = [[op for op in log if op[2] != free] for log in setup_logs]
    rng = random.Random(1)
    with pytest.raises(AssertionError, match="overwrote|read slot"):
        for _ in range(200):
            _replay(world, no_setup, call_logs, 3, rng, CPU_CONFIG.microbatches)
