"""Shared by the `moe_router_topology` pair (simulated): where an MoE layer's experts live.

This pair is a **simulation** of expert-parallel dispatch over a cluster larger than the
machine it runs on. What is real: the routing (top-k over router logits, on the device) and
the dispatch plan built from it (which GPU each token's hidden state must reach, deduplicated
per destination GPU as DeepEP and Megatron's all-to-all dispatchers do, and the bytes that
puts on every GPU pair). What is modelled: the cluster (`nodes` × `gpus_per_node`) and its
link bandwidths, from which `all_to_all_seconds` prices a plan.

Link figures: NVLink between GPUs of a node, InfiniBand/RoCE between nodes, both *assumed*
and named in the pair's expectations key (`sim_<simulated_key>`, on any machine): 450 GB/s
per direction per GPU (H100/H200 SXM, NVLink 4) and 50 GB/s per GPU between nodes (one
400 Gb/s NDR NIC per GPU). With two GPUs visible, `python -m ch17._moe_router_topology_common`
also prints the NVLink measured (core.multigpu.p2p_copy, GPU 0 → 1), as context. The experts' own GEMMs are
priced too, at an *assumed* 600 TFLOP/s of bf16 per GPU (75% of an H100's measured bf16
ceiling, a grouped GEMM's share): a step is dispatch, then the busiest GPU's expert work,
then combine, without overlap (DeepEP's two-batch overlap would hide part of one behind the
other). Without that term the model credited locality with the traffic it saves and charged
nothing for the load it concentrates.

The routing has structure, as trained routers do: experts co-activate in groups ("topics": a
token about code keeps choosing the same handful of experts). Here the model's topics are a
random partition of the experts drawn from the weight seed; each sequence has a topic, and
its tokens' logits favour that topic's experts. Placement decides the traffic:
- uniform (the default of Megatron/DeepSpeed expert parallelism): experts 0..7 on GPU 0,
  8..15 on GPU 1, ...; a token's k experts are spread over many GPUs and nodes;
- locality-aware: in setup(), a calibration batch (other data than the timed inputs) gives
  the co-activation counts, and a greedy partition puts experts that fire together on one
  GPU (equal expert counts per GPU); a token's experts then sit on few GPUs, one copy each.
Both sides route every token to the same experts (the verified output: expert ids and tokens
per expert); only where those experts live differs. Grouping co-activated experts
concentrates load on the GPUs holding a popular topic, so the expert-compute term matters:
`python -m ch17._moe_router_topology_common --sweep` prints the modelled gain over the topic
bias and the link speeds (README).
"""
from __future__ import annotations

from dataclasses import dataclass

import torch

from core.benchmark import BenchContext, Benchmark, Workload

ASSUMED_NVLINK_GBPS = 450.0  # per direction per GPU, H100/H200 SXM (NVLink 4): assumed
ASSUMED_INTERNODE_GBPS = 50.0  # per GPU: one 400 Gb/s NDR NIC: assumed
ASSUMED_EXPERT_TFLOPS = 600.0  # bf16 grouped GEMM per GPU: assumed (75% of an H100's 800)


@dataclass(frozen=True)
class Cluster:
    nodes: int
    gpus_per_node: int
    experts: int
    top_k: int
    topics: int  # co-activation groups of the router (experts / topics experts each)
    tokens: int  # tokens in one MoE layer's step, over the whole cluster
    steps: int  # steps per call: the all-to-all of each is priced, the call's cost is their sum
    seq_len: int  # tokens per sequence (one topic each)
    hidden: int  # d_model: bf16 bytes sent per token copy = 2 * hidden
    topic_bias: float  # logit bonus of a sequence's topic experts
    expert_ffn: int  # an expert's intermediate width: 3 GEMMs of 2 * hidden * expert_ffn per token

    @property
    def gpus(self) -> int:
        return self.nodes * self.gpus_per_node


# Qwen3-235B-A22B-like: 128 experts, top-8, d_model 4096, expert width 1536; expert parallel over
# 2 nodes × 8 GPUs
# 16 steps per call: a step's time is its busiest GPU's, and which GPU that is, and by how much,
# changes with each step's mix of sequences. One step per call put the per-seed ratio of the
# two placements anywhere in 1.34-1.60 (12 seeds, priced on the CPU at these sizes), wider
# than a stored ratio may be; the sum over 16 steps kept it within 1.43-1.51.
GPU_CLUSTER = Cluster(nodes=2, gpus_per_node=8, experts=128, top_k=8, topics=16, tokens=16384,
                      steps=16, seq_len=256, hidden=4096, topic_bias=2.0, expert_ffn=1536)
CPU_CLUSTER = Cluster(nodes=2, gpus_per_node=2, experts=16, top_k=2, topics=4, tokens=256,
                      steps=2, seq_len=16, hidden=64, topic_bias=2.0, expert_ffn=128)


def topic_of_experts(cluster: Cluster, seed: int, device: str) -> torch.Tensor:
    """[experts] topic id: the router's co-activation groups, a property of the weights."""
    gen = torch.Generator(device=device).manual_seed(seed)
    order = torch.randperm(cluster.experts, generator=gen, device=device)
    topic = torch.empty(cluster.experts, dtype=torch.long, device=device)
    topic[order] = torch.arange(cluster.experts, device=device) % cluster.topics
    return topic


def router_logits(cluster: Cluster, expert_topic: torch.Tensor, gen: torch.Generator) -> torch.Tensor:
    """[tokens, experts] fp32: noise plus a bonus on each sequence's topic experts."""
    device = gen.device
    sequences = cluster.tokens // cluster.seq_len
    seq_topic = torch.randint(0, cluster.topics, (sequences,), generator=gen, device=device)
    token_topic = seq_topic.repeat_interleave(cluster.seq_len)
    noise = torch.randn(cluster.tokens, cluster.experts, generator=gen, device=device)
    return noise + cluster.topic_bias * (expert_topic[None, :] == token_topic[:, None])


def uniform_placement(cluster: Cluster, device: str) -> torch.Tensor:
    """[experts] GPU: contiguous blocks, experts_per_gpu each."""
    return torch.arange(cluster.experts, device=device) // (cluster.experts // cluster.gpus)


def coactivation(ids: torch.Tensor, experts: int) -> torch.Tensor:
    """[E, E] counts of tokens that chose both experts (diagonal: tokens per expert)."""
    hot = torch.zeros(ids.shape[0], experts, device=ids.device)
    hot.scatter_(1, ids, 1.0)
    return hot.T @ hot


def locality_placement(co: torch.Tensor, gpus: int) -> torch.Tensor:
    """Greedy partition of the experts into `gpus` bins of equal size: each bin starts from
    the busiest unplaced expert and adds, one at a time, the unplaced expert that co-activates
    most with the bin so far. Deterministic (ties go to the lowest expert id)."""
    experts = co.shape[0]
    per_gpu = experts // gpus
    co = co.double().cpu()
    load = co.diagonal().clone()
    placed = torch.full((experts,), -1, dtype=torch.long)
    for gpu in range(gpus):
        free = placed < 0
        first = int(torch.where(free, load, -1.0).argmax())
        placed[first] = gpu
        affinity = co[first].clone()
        for _ in range(per_gpu - 1):
            candidate = int(torch.where(placed < 0, affinity, -1.0).argmax())
            placed[candidate] = gpu
            affinity += co[candidate]
    return placed


@dataclass(frozen=True)
class Links:
    nvlink_gbps: float
    internode_gbps: float
    measured_nvlink: bool

    def __str__(self) -> str:
        how = "measured" if self.measured_nvlink else "assumed"
        return (f"NVLink {self.nvlink_gbps:.0f} GB/s ({how}), between nodes "
                f"{self.internode_gbps:.0f} GB/s (assumed)")


def link_figures() -> Links:
    if torch.cuda.is_available() and torch.cuda.device_count() >= 2:
        from core.multigpu import p2p_copy

        return Links(p2p_copy()["p2p_oneway_gbps"], ASSUMED_INTERNODE_GBPS, True)
    return Links(ASSUMED_NVLINK_GBPS, ASSUMED_INTERNODE_GBPS, False)


def dispatch_bytes(ids: torch.Tensor, gpu_of_expert: torch.Tensor, cluster: Cluster) -> torch.Tensor:
    """[gpus, gpus] bytes GPU src sends GPU dst to dispatch every token to its experts: one
    copy per (token, destination GPU), none to its own GPU (tokens are spread evenly, token t
    lives on GPU t // (tokens / gpus))."""
    g = cluster.gpus
    src = torch.arange(ids.shape[0], device=ids.device) // (ids.shape[0] // g)
    reach = torch.zeros(ids.shape[0], g, dtype=torch.bool, device=ids.device)
    reach.scatter_(1, gpu_of_expert[ids], True)                  # dedup: one copy per GPU
    reach[torch.arange(ids.shape[0], device=ids.device), src] = False  # local: no transfer
    pairs = (src[:, None] * g + torch.arange(g, device=ids.device))[reach]
    return torch.bincount(pairs, minlength=g * g).view(g, g) * (2 * cluster.hidden)


def all_to_all_seconds(sent: torch.Tensor, cluster: Cluster, links: Links) -> float:
    """Modelled time of dispatch + combine: every GPU's busiest direction on each link type,
    NVLink and the inter-node NIC working concurrently; the slowest GPU sets the time."""
    node = torch.arange(cluster.gpus) // cluster.gpus_per_node
    same = node[:, None] == node[None, :]
    sent = sent.double().cpu()
    worst = 0.0
    for gpu in range(cluster.gpus):
        out_row, in_col = sent[gpu], sent[:, gpu]
        intra = max(out_row[same[gpu]].sum(), in_col[same[:, gpu]].sum()) / (links.nvlink_gbps * 1e9)
        inter = max(out_row[~same[gpu]].sum(), in_col[~same[:, gpu]].sum()) / (links.internode_gbps * 1e9)
        worst = max(worst, float(max(intra, inter)))
    return 2 * worst  # the combine sends the same bytes back


def expert_seconds(ids: torch.Tensor, gpu_of_expert: torch.Tensor, cluster: Cluster,
                   tflops: float = ASSUMED_EXPERT_TFLOPS) -> float:
    """Modelled time of one step's expert GEMMs: the busiest GPU's token-expert pairs, each
    three GEMMs of 2 * hidden * expert_ffn FLOPs (gate, up, down), at `tflops` per GPU."""
    per_gpu = torch.bincount(gpu_of_expert[ids].flatten(), minlength=cluster.gpus)
    flops = float(per_gpu.max()) * 6 * cluster.hidden * cluster.expert_ffn
    return flops / (tflops * 1e12)


def step_seconds(ids: torch.Tensor, gpu_of_expert: torch.Tensor, cluster: Cluster,
                 links: Links) -> float:
    """One MoE step as modelled: dispatch + the busiest GPU's experts + combine."""
    return (all_to_all_seconds(dispatch_bytes(ids, gpu_of_expert, cluster), cluster, links)
            + expert_seconds(ids, gpu_of_expert, cluster))


class TopologyBench(Benchmark):
    supports_cpu = True
    description = "simulated: expert placement over a modelled 2-node cluster, traffic priced at link GB/s"
    cpu_bound = ("the timed work is a few small routing/planning kernels, host-launch bound; the "
                 "placement's gain is the simulated all-to-all time, see ch17/README.md")
    simulated = ("expert placement over a modelled 2-node cluster: each step's all-to-all is "
                 "priced at link GB/s and its busiest GPU's expert GEMMs at 600 TFLOP/s, all "
                 "assumed (python -m ch17._moe_router_topology_common prints them); the time "
                 "column is the routing and planning kernels")
    # what the simulated cost depends on (its expectations key, `sim_<this>`): the cluster,
    # the assumed link and GEMM figures; the GPU that runs the routing is not in it
    simulated_key = "moe_ep_2n8g_nvl450_ib50_gemm600"
    links = Links(ASSUMED_NVLINK_GBPS, ASSUMED_INTERNODE_GBPS, False)  # named in simulated_key

    @property
    def cluster(self) -> Cluster:
        return GPU_CLUSTER if self.ctx.is_cuda else CPU_CLUSTER

    def placement(self) -> torch.Tensor:
        raise NotImplementedError

    def setup(self, ctx: BenchContext) -> None:
        self.expert_topic = topic_of_experts(self.cluster, ctx.seed, ctx.device)
        self.gpu_of_expert = self.placement()

    def calibration_ids(self) -> torch.Tensor:
        """Routing of a calibration batch: drawn from a seed no timed call uses."""
        gen = torch.Generator(device=self.device).manual_seed(2**31 - 1 - self.ctx.seed)
        return router_logits(self.cluster, self.expert_topic, gen).topk(self.cluster.top_k, dim=-1).indices

    def make_inputs(self, seed: int) -> torch.Tensor:
        """[steps, tokens, experts]: the router logits of `steps` consecutive MoE steps."""
        gen = self.generator(seed)
        return torch.stack([router_logits(self.cluster, self.expert_topic, gen)
                            for _ in range(self.cluster.steps)])

    def run(self, logits: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """Route, and plan each step's dispatch for this side's placement. Returns what both
        sides must agree on: expert ids [steps * tokens, k] and tokens per expert [experts]."""
        ids = logits.topk(self.cluster.top_k, dim=-1).indices  # [steps, tokens, k]
        # the plan, [steps, gpus, gpus] bytes (priced in report() and simulated_cost())
        self.sent = torch.stack([dispatch_bytes(step, self.gpu_of_expert, self.cluster) for step in ids])
        ids = ids.flatten(0, 1)
        return ids, torch.bincount(ids.flatten(), minlength=self.cluster.experts)

    def simulated_cost(self, logits: torch.Tensor) -> float:
        """Goal simulated_cost: the modelled seconds of these steps (dispatch, the busiest GPU's
        experts, combine) under this side's placement, summed. Both sides plan the same
        routing, so the planning's own time (the time column) is about equal; this is what
        the placement buys, traffic saved against load concentrated."""
        ids = logits.topk(self.cluster.top_k, dim=-1).indices
        return sum(step_seconds(step, self.gpu_of_expert, self.cluster, self.links) for step in ids)

    def workload(self) -> Workload:
        return Workload(units=self.cluster.tokens * self.cluster.steps,
                        unit_name="simulated tokens dispatched")


def report(bench: TopologyBench, seed: int = 0, links: Links | None = None) -> str:
    """The simulated all-to-all time and the per-GPU expert load balance for `bench` (set up)."""
    links = links or bench.links
    c = bench.cluster
    ids, per_expert = bench.run(bench.make_inputs(seed))
    per_gpu = torch.zeros(c.gpus, dtype=torch.long, device=per_expert.device)
    per_gpu.index_add_(0, bench.gpu_of_expert, per_expert)
    sent = bench.sent.cpu()  # [steps, gpus, gpus]
    node = torch.arange(c.gpus) // c.gpus_per_node
    across = float(sent[:, node[:, None] != node[None, :]].sum()) / c.steps
    seconds = sum(all_to_all_seconds(step, c, links) for step in sent) / c.steps
    steps = ids.view(c.steps, -1, c.top_k)
    compute = sum(expert_seconds(step, bench.gpu_of_expert, c) for step in steps) / c.steps
    imbalance = float(per_gpu.max() / per_gpu.float().mean())
    return (f"{type(bench).__name__:>18}: simulated dispatch+combine {seconds * 1e3:.3g} ms and "
            f"busiest GPU's experts {compute * 1e3:.3g} ms per step, "
            f"{float(sent.sum()) / c.steps / 2**20:.3g} MiB sent per step ({across / 2**20:.3g} "
            f"MiB between nodes), busiest GPU's expert load {imbalance:.2f}× the mean; {links}")


def sweep(biases: tuple[float, ...] = (0.0, 0.5, 1.0, 1.5, 2.0, 3.0),
          internode: tuple[float, ...] = (25.0, 50.0, 100.0), seed: int = 1) -> str:
    """The modelled gain (uniform's cost over locality's, one call of GPU_CLUSTER's 16 steps)
    over the router's topic bias and the inter-node bandwidth, with and without the experts'
    compute priced: a markdown table. On the CPU: the model needs no GPU."""
    from dataclasses import replace

    from ch17.baseline_moe_router_topology import UniformPlacement
    from ch17.optimized_moe_router_topology import LocalityAwarePlacement

    context = BenchContext(seed=0, device="cpu")
    rows = ["| topic bias | locality's busiest GPU, load over the call | " +
            " | ".join(f"{g:g} GB/s between nodes" for g in internode) + " | links only, 50 GB/s |",
            "|---|---|" + "---|" * (len(internode) + 1)]
    for bias in biases:
        cluster = replace(GPU_CLUSTER, topic_bias=bias)
        sides = []
        for cls in (UniformPlacement, LocalityAwarePlacement):
            side = type(cls.__name__, (cls,), {"cluster": cluster})()
            side.ctx = context
            side.setup(context)
            sides.append(side)
        logits = sides[0].make_inputs(seed)
        ids = logits.topk(cluster.top_k, dim=-1).indices
        cells = []
        for gbps in internode:
            links = Links(ASSUMED_NVLINK_GBPS, gbps, False)
            cost = [sum(step_seconds(s, side.gpu_of_expert, cluster, links) for s in ids) for side in sides]
            cells.append(f"{cost[0] / cost[1]:.2f}×")
        links = Links(ASSUMED_NVLINK_GBPS, ASSUMED_INTERNODE_GBPS, False)
        traffic = [sum(all_to_all_seconds(dispatch_bytes(s, side.gpu_of_expert, cluster), cluster, links)
                       for s in ids) for side in sides]
        load = torch.bincount(sides[1].gpu_of_expert[ids].flatten(), minlength=cluster.gpus).float()
        rows.append(f"| {bias:g} | {float(load.max() / load.mean()):.2f}× the mean | "
                    + " | ".join(cells) + f" | {traffic[0] / traffic[1]:.2f}× |")
    return "\n".join(rows)


if __name__ == "__main__":  # python -m ch17._moe_router_topology_common [--sweep]
    import sys

    if "--sweep" in sys.argv:
        print(sweep())
        raise SystemExit(0)
    from ch17.baseline_moe_router_topology import UniformPlacement
    from ch17.optimized_moe_router_topology import LocalityAwarePlacement

    context = BenchContext(seed=0, device="cuda" if torch.cuda.is_available() else "cpu")
    for side in (UniformPlacement(), LocalityAwarePlacement()):
        side.ctx = context
        side.setup(context)
        print(report(side, seed=1))
    measured = link_figures()
    if measured.measured_nvlink:
        print(f"this machine: {measured}")
