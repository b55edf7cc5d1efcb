"""Shared by the `vllm_v1_integration` pair: vLLM's V1 engine, eager vs compiled + CUDA graphs.

Requires the `vllm` module (`requires.modules`): where vLLM is not installed (everywhere this
repo is tested so far) both sides SKIP with that reason, and nothing here has run yet.

What it measures where vLLM exists: offline `LLM.generate` of a fixed batch (16 prompts of
128 token ids, 64 greedy new tokens each, EOS ignored) on a model with the ch15 SMALL
decoder's architecture (a Llama config: 4 layers, d_model 2048, 16/4 heads of 128, SwiGLU
5632, vocab 32000), once with `enforce_eager=True` (the baseline: every decode step launched
op by op from Python) and once with V1's default compilation (torch.compile of the model
plus CUDA graphs for decode batch sizes). The gain is decode-step launch overhead, the
lesson of ch16 `piece_graphs`, inside a production engine.

Honest limits, stated because nothing may be downloaded: the model directory is written in
setup() (config.json only) and vLLM fills the weights with `load_format="dummy"` (uniform
values in +-1e-3, seeded by vLLM); prompts are token ids (`skip_tokenizer_init=True`), so no
tokenizer is needed. With such weights greedy tokens are arithmetic, not language, and their
top two logits can be close: if the eager and graphed engines round differently, a token
can flip, and verification (exact token ids) fails. That would be a finding about vLLM's
numerics across modes, to be reported as such, not hidden by a looser check.

Both sides live in one child process (the harness interleaves them), so each engine takes
30% of the GPU's memory, and the engine core runs in-process
(VLLM_ENABLE_V1_MULTIPROCESSING=0): the harness's CUDA events then see the model's kernels,
and run() returns only after the tokens reach the host, so each sample covers the whole
generate() call.
"""
from __future__ import annotations

import json
import os
import tempfile
from pathlib import Path

import torch

from ch15.decoder import SMALL
from core.benchmark import BenchContext, Benchmark, Requirements, Workload

PROMPTS, PROMPT_LEN, NEW_TOKENS = 16, 128, 64


def llama_config(cfg=SMALL) -> dict:
    """A Hugging Face Llama config with the shared decoder's shapes (RoPE as ch15's)."""
    return {"architectures": ["LlamaForCausalLM"], "model_type": "llama",
            "hidden_size": cfg.d_model, "intermediate_size": cfg.ffn,
            "num_hidden_layers": cfg.n_layers, "num_attention_heads": cfg.n_heads,
            "num_key_value_heads": cfg.n_kv_heads, "head_dim": cfg.head_dim,
            "vocab_size": cfg.vocab, "max_position_embeddings": cfg.max_seq,
            "rope_theta": cfg.rope_theta, "rms_norm_eps": 1e-5, "hidden_act": "silu",
            "tie_word_embeddings": False, "torch_dtype": "bfloat16"}


class VllmGenerateBench(Benchmark):
    requires = Requirements(modules=("vllm",))
    enforce_eager = True  # the side's engine mode

    def setup(self, ctx: BenchContext) -> None:
        os.environ["VLLM_ENABLE_V1_MULTIPROCESSING"] = "0"  # model runs in this process (docstring)
        from vllm import LLM, SamplingParams

        self.model_dir = tempfile.TemporaryDirectory(prefix="aisp-ch18-vllm-")
        (Path(self.model_dir.name) / "config.json").write_text(json.dumps(llama_config()))
        self.llm = LLM(model=self.model_dir.name, load_format="dummy", skip_tokenizer_init=True,
                       dtype="bfloat16", seed=ctx.seed, enforce_eager=self.enforce_eager,
                       max_model_len=PROMPT_LEN + NEW_TOKENS, gpu_memory_utilization=0.3)
        self.sampling = SamplingParams(temperature=0.0, max_tokens=NEW_TOKENS, ignore_eos=True,
                                       detokenize=False)

    def make_inputs(self, seed: int) -> torch.Tensor:
        gen = torch.Generator().manual_seed(seed)  # token ids live on the host: vLLM takes lists
        return torch.randint(0, SMALL.vocab, (PROMPTS, PROMPT_LEN), generator=gen)

    def run(self, prompts: torch.Tensor) -> torch.Tensor:
        outs = self.llm.generate([{"prompt_token_ids": p} for p in prompts.tolist()], self.sampling,
                                 use_tqdm=False)
        return torch.tensor([list(o.outputs[0].token_ids) for o in outs])

    def workload(self) -> Workload:
        return Workload(units=PROMPTS * NEW_TOKENS, unit_name="tokens")

    def teardown(self) -> None:
        self.model_dir.cleanup()
