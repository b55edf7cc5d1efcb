"""Several GPUs of one machine: topology (`hw info`) and link ceilings (`hw peak --gpus N`).

Topology comes from NVML: each GPU's NUMA node and CPU affinity, and between each two GPUs
the number of NVLinks (or the PCIe path) and whether CUDA peer access is on. The ceilings
are measured the way the pairs communicate: N ranks under torchrun (core.ranks), NCCL
all-reduce and all-gather bus bandwidth for messages of 1 KiB to 1 GiB (nccl-tests'
convention: all-reduce 2(n-1)/n, all-gather (n-1)/n of the message per rank), plus a P2P
copy between GPU 0 and GPU 1 one way and both ways at once. They are cached per device set
like the single-GPU ceilings; a run's probe adds them when the machine has that many GPUs.
"""
from __future__ import annotations

from typing import Any

SIZES = [1 << (10 + 2 * k) for k in range(11)]  # 1 KiB, 4 KiB, ..., 1 GiB
P2P_BYTES = 1 << 30


def topology() -> dict[str, Any]:
    """Per GPU: NUMA node and CPUs; per pair of GPUs: link and peer access."""
    import pynvml
    import torch

    pynvml.nvmlInit()
    count = pynvml.nvmlDeviceGetCount()
    handles = [pynvml.nvmlDeviceGetHandleByIndex(i) for i in range(count)]
    gpus = []
    for index, handle in enumerate(handles):
        try:
            numa = pynvml.nvmlDeviceGetNumaNodeId(handle)
        except (pynvml.NVMLError, AttributeError):
            numa = None
        try:
            words = pynvml.nvmlDeviceGetCpuAffinity(handle, 4)
            cpus = [64 * w + b for w, word in enumerate(words) for b in range(64) if word >> b & 1]
        except pynvml.NVMLError:
            cpus = []
        gpus.append({"index": index, "name": pynvml.nvmlDeviceGetName(handle),
                     "numa_node": numa, "cpus": _ranges(cpus)})
    links = {}
    for i in range(count):
        for j in range(count):
            if i != j:
                links[f"{i}-{j}"] = {"link": _link(handles, i, j),
                                     "peer_access": bool(torch.cuda.can_device_access_peer(i, j))}
    return {"gpus": gpus, "links": links}


def _link(handles: list[Any], i: int, j: int) -> str:
    """`NV18` (18 NVLinks between them) or the PCIe path (`PIX`, `PHB`, `SYS`, ...)."""
    import pynvml

    target = _bus(pynvml.nvmlDeviceGetPciInfo(handles[j]).busId)
    to_target, active = 0, 0
    for link in range(18):  # NVML_NVLINK_MAX_LINKS on Hopper
        try:
            if not pynvml.nvmlDeviceGetNvLinkState(handles[i], link):
                continue
            active += 1
            if _bus(pynvml.nvmlDeviceGetNvLinkRemotePciInfo(handles[i], link).busId) == target:
                to_target += 1
        except pynvml.NVMLError:
            continue  # a link index this GPU does not have
    if to_target:
        return f"NV{to_target}"
    try:
        # Remote ids can be masked (FFFFFFFF:FF:FF.0 on the lent 2xH200 VM, or an NVSwitch):
        # then, as nvidia-smi does, a pair with NVLink P2P shows the GPU's active links.
        nvlink_p2p = pynvml.nvmlDeviceGetP2PStatus(handles[i], handles[j],
                                                   pynvml.NVML_P2P_CAPS_INDEX_NVLINK)
        if nvlink_p2p == pynvml.NVML_P2P_STATUS_OK and active:
            return f"NV{active}"
    except (pynvml.NVMLError, AttributeError):
        pass
    try:
        level = pynvml.nvmlDeviceGetTopologyCommonAncestor(handles[i], handles[j])
    except pynvml.NVMLError:
        return "?"
    return {0: "X", 10: "PIX", 20: "PXB", 30: "PHB", 40: "NODE", 50: "SYS"}.get(level, str(level))


def _bus(bus_id: bytes | str) -> str:
    """`00000000:19:00.0` and `0000:19:00.0` (NVML spells the domain both ways) → `19:00.0`."""
    text = bus_id.decode() if isinstance(bus_id, bytes) else str(bus_id)
    return text.lower().split(":", 1)[-1]


def _ranges(cpus: list[int]) -> str:
    out, start = [], None
    for k, cpu in enumerate(cpus):
        if start is None:
            start = cpu
        if k + 1 == len(cpus) or cpus[k + 1] != cpu + 1:
            out.append(f"{start}" if start == cpu else f"{start}-{cpu}")
            start = None
    return ",".join(out)


def _time_ms(op: Any, calls: int) -> float:
    """Mean ms of `op` over `calls` back-to-back calls after 3 warm-up calls (CUDA events)."""
    import torch

    for _ in range(3):
        op()
    start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    torch.cuda.synchronize()
    start.record()
    for _ in range(calls):
        op()
    end.record()
    torch.cuda.synchronize()
    return start.elapsed_time(end) / calls


def collective_sweep() -> dict[str, list[dict[str, float]]]:
    """NCCL all-reduce / all-gather of each size on every rank (call from all ranks)."""
    import torch
    import torch.distributed as dist

    world = dist.get_world_size()
    out: dict[str, list[dict[str, float]]] = {"all_reduce": [], "all_gather": []}
    for size in SIZES:
        calls = max(5, min(200, int(4e9 / size)))
        buffer = torch.ones(size // 4, device="cuda")
        gathered = torch.empty(world * (size // 4 // world), device="cuda")
        ms = _time_ms(lambda: dist.all_reduce(buffer), calls)
        out["all_reduce"].append({"bytes": size, "us": ms * 1e3,
                                  "busbw_gbps": size / ms / 1e6 * 2 * (world - 1) / world})
        shard = gathered[: size // 4 // world].clone()
        ms = _time_ms(lambda: dist.all_gather_into_tensor(gathered, shard), calls)
        out["all_gather"].append({"bytes": size, "us": ms * 1e3,
                                  "busbw_gbps": size / ms / 1e6 * (world - 1) / world})
        del buffer, gathered, shard
    return out


def p2p_copy() -> dict[str, float]:
    """GB/s of a 1 GiB copy GPU 0 → GPU 1, and of both directions at once (call on rank 0)."""
    import torch

    a = torch.ones(P2P_BYTES // 4, device="cuda:0")
    b = torch.ones(P2P_BYTES // 4, device="cuda:1")
    b_dst, a_dst = torch.empty_like(a, device="cuda:1"), torch.empty_like(b, device="cuda:0")
    one_way = _time_ms(lambda: b_dst.copy_(a), 5)
    s0, s1 = torch.cuda.Stream("cuda:0"), torch.cuda.Stream("cuda:1")

    def both() -> None:
        with torch.cuda.stream(s0):
            b_dst.copy_(a)
        with torch.cuda.stream(s1):
            a_dst.copy_(b)
        torch.cuda.current_stream().wait_stream(s0)
        torch.cuda.current_stream().wait_stream(s1)
    both_ms = _time_ms(both, 5)
    return {"p2p_oneway_gbps": P2P_BYTES / one_way / 1e6, "p2p_bidir_gbps": 2 * P2P_BYTES / both_ms / 1e6}


def measure(rank: int) -> dict[str, Any] | None:
    """Every rank measures the collectives; rank 0 adds P2P and returns the whole record."""
    import torch.distributed as dist

    sweep = collective_sweep()
    dist.barrier()
    if rank != 0:
        return None
    ceilings = {"nccl_allreduce_gbps": max(r["busbw_gbps"] for r in sweep["all_reduce"]),
                "nccl_allgather_gbps": max(r["busbw_gbps"] for r in sweep["all_gather"]),
                **p2p_copy()}
    return {"world": dist.get_world_size(), "ceilings": ceilings, "sweep": sweep}
