"""Shared by `token_pipeline`: read documents, tokenize them, pack them into rows, train on
them, one step after another.

setup() writes a text corpus (8192 documents of 64 to 1024 words, ~27 MB; the words of a
fixed 8189-word vocabulary drawn with Zipf's law), an index of where each document starts,
and the vocabulary. make_inputs(seed) is this call's plan: for each of 16 steps, the 24
documents (drawn at random, without repeats within the call) that feed it. A step's host
work is what an online tokenizing pipeline does:

    read     os.pread of each document from the corpus file
    tokenize split on spaces and newlines, look each word up in the vocabulary, an EOS token
             after each document (vectorized NumPy, which releases the GIL in its loops)
    pack     concatenate, cut the first 8 × 1025 tokens into 8 rows (the last 1024 tokens of
             a row are the targets of the first 1024), drop the rest, pad if short

and the GPU step is the forward pass of a small decoder (4 layers, d_model 512, 8 heads,
bf16 autocast) over the 8 × 1024 tokens, with each token's next-token loss. run() returns
every token's loss and a checksum of each packed row ([16, 8] int64, exact), so the sides
must have fed the same tokens to the same step in the same order. reference() tokenizes
with plain Python (`bytes.split` and a dict) to check the shared vectorized tokenizer.

The sides share all of this; they differ in how the steps are scheduled (see their files).
The corpus was just written, so it is in the page cache: the reads cost system calls and
copies, not the drive's latency.
"""
from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import torch
import torch.nn.functional as F
from torch import nn

from ch05 import _files
from core.benchmark import BenchContext, Benchmark, Workload

PAD, EOS, UNK = 0, 1, 2  # special tokens; words are 3 .. vocab - 1
SPACE, NEWLINE = ord(" "), ord("\n")
KEY_BYTES = 8  # a word of up to 8 bytes, zero-padded, is its own 64-bit key


@dataclass(frozen=True)
class Config:
    vocab: int  # tokens, special ones included
    documents: int
    words_per_document: tuple[int, int]  # drawn uniformly in [low, high]
    steps: int  # per run()
    docs_per_step: int
    batch: int  # rows per step
    seq: int  # tokens per row the model sees (each row holds seq + 1)
    d_model: int
    heads: int
    layers: int

    @property
    def tokens_per_run(self) -> int:
        return self.steps * self.batch * self.seq


CUDA_CONFIG = Config(vocab=8192, documents=8192, words_per_document=(64, 1024), steps=16,
                     docs_per_step=24, batch=8, seq=1024, d_model=512, heads=8, layers=4)
CPU_CONFIG = Config(vocab=8192, documents=512, words_per_document=(16, 64), steps=4,
                    docs_per_step=8, batch=2, seq=64, d_model=32, heads=2, layers=1)  # CI


# --- the corpus ------------------------------------------------------------------------------
def make_vocabulary(words: int, rng: np.random.Generator) -> np.ndarray:
    """`words` distinct lowercase words of 2 to 8 letters, as [words, 8] zero-padded bytes."""
    candidates = rng.integers(ord("a"), ord("z") + 1, size=(4 * words, KEY_BYTES), dtype=np.uint8)
    lengths = rng.integers(2, KEY_BYTES + 1, size=4 * words)
    candidates[np.arange(KEY_BYTES) >= lengths[:, None]] = 0
    unique = np.unique(candidates.view("<u8").ravel())
    return rng.permutation(unique)[:words].view(np.uint8).reshape(words, KEY_BYTES)


def write_corpus(root: Path, cfg: Config, seed: int) -> None:
    """corpus.txt (documents of space-separated words, each ending in a newline), index.npy
    ([documents, 2]: byte offset and length) and vocabulary.npy (word bytes in id order)."""
    rng = np.random.default_rng(seed)
    vocabulary = make_vocabulary(cfg.vocab - 3, rng)
    lengths = np.count_nonzero(vocabulary, axis=1)
    low, high = cfg.words_per_document
    words_per_doc = rng.integers(low, high + 1, size=cfg.documents)
    zipf = 1.0 / np.arange(1, len(vocabulary) + 1)  # the r-th commonest word has weight 1/r
    ranks = rng.choice(len(vocabulary), size=words_per_doc.sum(), p=zipf / zipf.sum())
    word = rng.permutation(len(vocabulary))[ranks]  # which word is common is random
    # Lay the words out with a trailing space each: one gather from a table of "word " strings.
    table = np.frombuffer(b"".join(v[:n].tobytes() + b" " for v, n in zip(vocabulary, lengths)),
                          dtype=np.uint8)
    table_start = np.concatenate(([0], np.cumsum(lengths + 1)[:-1]))
    size = lengths[word] + 1
    start = np.concatenate(([0], np.cumsum(size)[:-1]))
    corpus = table[np.repeat(table_start[word] - start, size) + np.arange(size.sum())]
    last_word = np.cumsum(words_per_doc) - 1
    corpus[start[last_word] + size[last_word] - 1] = NEWLINE  # a document ends with a newline
    doc_start = np.concatenate(([0], start[last_word[:-1]] + size[last_word[:-1]]))
    doc_end = start[last_word] + size[last_word]
    (root / "corpus.txt").write_bytes(corpus.tobytes())
    np.save(root / "index.npy", np.stack([doc_start, doc_end - doc_start], axis=1))
    np.save(root / "vocabulary.npy", vocabulary)


class Tokenizer:
    """Word-level: a word is looked up by its bytes zero-padded to 8, read as one uint64
    (binary search in the sorted keys); unknown or longer words become UNK."""

    def __init__(self, vocabulary: np.ndarray):
        keys = vocabulary.view("<u8").ravel()
        order = np.argsort(keys)
        self.keys, self.ids = keys[order], order.astype(np.int64) + 3

    def encode(self, text: np.ndarray) -> np.ndarray:
        """uint8 text → int64 token ids, with EOS after each newline-terminated document."""
        separator = (text == SPACE) | (text == NEWLINE)
        edges = np.flatnonzero(np.diff(np.concatenate(([True], separator, [True])).view(np.int8)))
        starts, ends = edges[0::2], edges[1::2]  # each word is text[start:end]
        lengths = ends - starts
        columns = np.arange(KEY_BYTES)
        at = np.minimum(starts[:, None] + columns, len(text) - 1)
        padded = np.where(columns < lengths[:, None], text[at], 0).astype(np.uint8)
        keys = padded.view("<u8").ravel()
        where = np.minimum(np.searchsorted(self.keys, keys), len(self.keys) - 1)
        known = (self.keys[where] == keys) & (lengths <= KEY_BYTES)
        ids = np.where(known, self.ids[where], UNK)
        ends_document = np.flatnonzero(text[np.minimum(ends, len(text) - 1)] == NEWLINE)
        return np.insert(ids, ends_document + 1, EOS)


def pack(ids: np.ndarray, out: np.ndarray) -> np.ndarray:
    """The first out.size tokens, row by row into `out` ([rows, seq + 1]); PAD if short."""
    flat = out.reshape(-1)
    n = min(len(ids), flat.size)
    flat[:n] = ids[:n]
    flat[n:] = PAD
    return out


# --- the model -------------------------------------------------------------------------------
class Block(nn.Module):
    """Pre-norm decoder block: causal self-attention, then a 4× GELU MLP."""

    def __init__(self, d_model: int, heads: int):
        super().__init__()
        self.heads = heads
        self.ln1, self.ln2 = nn.LayerNorm(d_model), nn.LayerNorm(d_model)
        self.qkv, self.proj = nn.Linear(d_model, 3 * d_model), nn.Linear(d_model, d_model)
        self.fc, self.out = nn.Linear(d_model, 4 * d_model), nn.Linear(4 * d_model, d_model)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        b, t, d = x.shape
        qkv = self.qkv(self.ln1(x)).view(b, t, 3, self.heads, d // self.heads)
        q, k, v = qkv.permute(2, 0, 3, 1, 4)  # each (batch, heads, seq, head_dim)
        attention = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.proj(attention.transpose(1, 2).reshape(b, t, d))
        return x + self.out(F.gelu(self.fc(self.ln2(x))))


class TinyLM(nn.Module):
    def __init__(self, cfg: Config):
        super().__init__()
        self.tok = nn.Embedding(cfg.vocab, cfg.d_model)
        self.pos = nn.Embedding(cfg.seq, cfg.d_model)
        self.blocks = nn.ModuleList(Block(cfg.d_model, cfg.heads) for _ in range(cfg.layers))
        self.ln = nn.LayerNorm(cfg.d_model)
        self.head = nn.Linear(cfg.d_model, cfg.vocab, bias=False)
        self.head.weight = self.tok.weight  # tied embeddings

    def forward(self, tokens: torch.Tensor) -> torch.Tensor:
        x = self.tok(tokens) + self.pos(torch.arange(tokens.shape[1], device=tokens.device))
        for block in self.blocks:
            x = block(x)
        return self.head(self.ln(x))


# --- the pair --------------------------------------------------------------------------------
class TokenPipeline(Benchmark):
    supports_cpu = True
    cpu_bound = "reading, tokenizing and packing run on the host"
    report_gpu_busy = True  # the share of the time the GPU runs kernels (core.busy)
    time_cap_s = 12.0  # host-bound steps with a spread: 4 s left a ±5% interval (H100)

    @property
    def cfg(self) -> Config:
        return CUDA_CONFIG if self.ctx.is_cuda else CPU_CONFIG

    def setup(self, ctx: BenchContext) -> None:
        cfg = self.cfg
        self.fixture = f"tokens_{cfg.documents}docs_seed{ctx.seed}"
        root = _files.acquire(self.fixture, lambda path: write_corpus(path, cfg, ctx.seed))
        self.index = np.load(root / "index.npy")
        self.vocabulary = np.load(root / "vocabulary.npy")
        self.tokenizer = Tokenizer(self.vocabulary)
        self.fd = os.open(root / "corpus.txt", os.O_RDONLY)
        torch.manual_seed(ctx.seed)  # the same weights on every side
        self.model = TinyLM(cfg).to(ctx.device).eval()

    def make_inputs(self, seed: int) -> torch.Tensor:
        """The plan: [steps, docs_per_step] int64 document ids, on the host."""
        cfg = self.cfg
        gen = torch.Generator().manual_seed(seed)
        ids = torch.randperm(cfg.documents, generator=gen)[:cfg.steps * cfg.docs_per_step]
        return ids.view(cfg.steps, cfg.docs_per_step)

    def load_step(self, documents: list[int], out: np.ndarray | None = None) -> np.ndarray:
        """Read, tokenize and pack one step's documents: [batch, seq + 1] int64."""
        text = b"".join(os.pread(self.fd, int(length), int(offset))
                        for offset, length in self.index[documents])
        ids = self.tokenizer.encode(np.frombuffer(text, dtype=np.uint8))
        if out is None:
            out = np.empty((self.cfg.batch, self.cfg.seq + 1), dtype=np.int64)
        return pack(ids, out)

    @torch.no_grad()
    def step(self, rows: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The GPU's work on one step: every token's next-token loss ([batch, seq] fp32, 0
        where the target is PAD) and each row's checksum ([batch] int64)."""
        inputs, targets = rows[:, :-1], rows[:, 1:]
        with torch.autocast(torch.device(self.device).type, dtype=torch.bfloat16,
                            enabled=self.ctx.is_cuda):
            logits = self.model(inputs)
        losses = F.cross_entropy(logits.flatten(0, 1).float(), targets.flatten(),
                                 ignore_index=PAD, reduction="none")
        return losses.view(targets.shape), rows.sum(dim=1)

    def reference(self, plan: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        """The same steps with a plain-Python tokenizer (`bytes.split` and a dict), so a bug
        in the shared vectorized one cannot pass verification on both sides."""
        ids = {bytes(word[word != 0]): i + 3 for i, word in enumerate(self.vocabulary)}
        losses, checksums = [], []
        for documents in plan.tolist():
            tokens = []
            for offset, length in self.index[documents]:
                text = os.pread(self.fd, int(length), int(offset))
                tokens += [ids.get(word, UNK) for word in text.split()] + [EOS]
            rows = pack(np.array(tokens, dtype=np.int64),
                        np.empty((self.cfg.batch, self.cfg.seq + 1), dtype=np.int64))
            step_losses, checksum = self.step(torch.from_numpy(rows).to(self.device))
            losses.append(step_losses)
            checksums.append(checksum)
        return torch.stack(losses), torch.stack(checksums)

    def teardown(self) -> None:
        _files.close(self)

    def workload(self) -> Workload:
        return Workload(units=self.cfg.tokens_per_run, unit_name="tokens")
