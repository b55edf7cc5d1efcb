"""Shared by `pipeline_parallelism` (two GPUs, one process): the decoder's layers in two stages.

Stage 0 on GPU 0 holds the embedding and the first half of the layers; stage 1 on GPU 1 holds
the second half, the final norm and the LM head. One run() prefills a batch of prompts (no
KV cache: the forward of an offline scoring or prefill job) and returns each prompt's
last-token logits. The activations [batch, tokens, d_model] cross from GPU 0 to GPU 1 once.

- Baseline: naive model parallelism, as `device_map="auto"` in Hugging Face Accelerate runs
  it: the whole batch through stage 0, copied to GPU 1, then through stage 1. One micro-batch
  is in flight, so at any moment one GPU works and the other waits.
- Optimized: the batch split into `micro_batches`; GPU 0 starts micro-batch i+1 while GPU 1
  runs micro-batch i (a forward-only GPipe schedule), and each hand-off is a peer copy on
  side streams of both GPUs, ordered by events, so neither GPU's compute stream waits for a
  copy it does not read. Steady state: max(stage time) per micro-batch instead of the sum.
  Four micro-batches: the schedule takes (4 + 1) stage-steps of a quarter batch instead of
  2 full-batch steps, 1.6x at best with balanced stages; more micro-batches shrink the bubble
  but give each matmul fewer rows (32 prompts x 512 tokens = 16384 rows per micro-batch here).

Batch: one Python thread issues both GPUs' kernels, so a micro-batch's stage must take the
GPU longer than the host takes to issue *both* stages' kernels, or the host sets the pace.
On 2xH200 the host took ~10 ms to issue the 8 layers (~5 ms per stage, at any batch), and
at 32 prompts (4096 rows per micro-batch) a stage took the GPU ~4 ms: the optimized side
was host-bound at 0.76x. At 128 prompts a micro-batch's stage is ~17 ms of GPU work.

Regime: pipeline parallelism is how a model that does *not* fit on one GPU is served. This
decoder (8 layers of `SMALL`, ~0.5 B parameters) fits on one GPU many times over: on one GPU,
unpipelined, it would be faster per GPU than either side here (no bubble, no copy), and two
data-parallel replicas would beat the pipeline on two. The pair measures what the schedule
buys when the split is forced; the README says so.

Both sides run the same weights (stage 1's are copied from one model, bit for bit). The
micro-batches' matmuls have fewer rows than the whole batch's, and cuBLAS may choose other
kernels for them, so bf16 rounding can differ slightly: the tolerance allows it.
"""
from __future__ import annotations

import copy
from dataclasses import dataclass, replace

import torch

from ch15.decoder import SMALL, TINY, Decoder, DecoderConfig
from core.benchmark import BenchContext, Benchmark, Requirements, Tolerance, Workload


@dataclass(frozen=True)
class PipelineSizes:
    cfg: DecoderConfig
    batch: int  # prompts per run()
    prompt_len: int
    micro_batches: int  # the optimized side's split


GPU_SIZES = PipelineSizes(cfg=replace(SMALL, n_layers=8, max_seq=1024), batch=128, prompt_len=512,
                          micro_batches=4)
CPU_SIZES = PipelineSizes(cfg=TINY, batch=4, prompt_len=16, micro_batches=2)


class Stage:
    """Layers [first, last) of `model` (on its device); stage 0 embeds, the last stage ends
    with the norm and the LM head (last-token logits, fp32)."""

    def __init__(self, model: Decoder, first: int, last: int):
        self.model, self.first, self.last = model, first, last
        self.device = model.device

    @torch.no_grad()
    def __call__(self, x: torch.Tensor) -> torch.Tensor:
        m = self.model
        if self.first == 0:
            x = m.embed[x]  # x: token ids [B, T]
        b, t = x.shape[:2]
        p = m._pass(torch.arange(t, device=self.device).expand(b, t))  # RoPE angles, no cache
        for layer in range(self.first, self.last):
            x = m.blocks[layer](x, p, layer)
        if self.last == m.cfg.n_layers:
            return torch.nn.functional.linear(m.norm(x[:, -1]), m.lm_head).float()
        return x


class PipelineBench(Benchmark):
    requires = Requirements(gpus=2, one_process=True)
    supports_cpu = False  # two GPUs; the tests drive both sides on a CPU "split" directly
    # fp32 logits of a bf16 model; see the module doc for why they may differ by rounding
    tolerance = Tolerance(rtol=2e-2, atol=2e-2)

    @property
    def sizes(self) -> PipelineSizes:
        return GPU_SIZES if self.ctx.is_cuda else CPU_SIZES

    @property
    def devices(self) -> list[torch.device]:
        names = ["cuda:0", "cuda:1"] if self.ctx.is_cuda else ["cpu", "cpu"]
        return [torch.device(n) for n in names]

    def setup(self, ctx: BenchContext) -> None:
        first = Decoder(self.sizes.cfg, seed=ctx.seed, device=self.devices[0])
        second = copy.deepcopy(first).to(self.devices[1])  # the same weights, bit for bit
        half = self.sizes.cfg.n_layers // 2
        # (each GPU holds a whole copy for simplicity; each stage uses only its half)
        self.stages = [Stage(first, 0, half), Stage(second, half, self.sizes.cfg.n_layers)]
        self.whole = Stage(first, 0, self.sizes.cfg.n_layers)  # reference(): unsplit, on GPU 0

    def joined(self, logits: torch.Tensor) -> torch.Tensor:
        """Make the caller's stream on GPU 0 wait (on the GPU, not the host) for GPU 1's last
        stage, so that whoever times run() with events on GPU 0 covers the whole pipeline."""
        if self.ctx.is_cuda:
            torch.cuda.current_stream(self.devices[0]).wait_stream(torch.cuda.current_stream(self.devices[1]))
        return logits

    def make_inputs(self, seed: int) -> torch.Tensor:
        s = self.sizes
        return torch.randint(0, s.cfg.vocab, (s.batch, s.prompt_len), generator=self.generator(seed),
                             device=self.devices[0])

    @torch.no_grad()
    def reference(self, tokens: torch.Tensor) -> torch.Tensor:
        """The unsplit model on one device, one forward: the answer the pipeline must give."""
        return self.whole(tokens).to(self.devices[1])

    def workload(self) -> Workload:
        s = self.sizes
        tokens = s.batch * s.prompt_len
        activation_bytes = tokens * s.cfg.d_model * torch.empty(0, dtype=s.cfg.dtype).element_size()
        return Workload(flops=2 * tokens * (s.cfg.params() - 2 * s.cfg.vocab * s.cfg.d_model),
                        flops_dtype="bf16" if s.cfg.dtype == torch.bfloat16 else "fp32",
                        units=tokens, unit_name="tokens",
                        link_bytes=activation_bytes, link="p2p_oneway")
