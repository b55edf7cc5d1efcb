"""Chapter 05's pieces on a CPU: the fixture directory, the codecs and parsers the pairs share,
and the parts of GPU-only pairs that run without a GPU (the gds_read baseline's reads).

The CPU-capable pairs themselves run through the harness in tests/test_real_pairs.py.
"""
from __future__ import annotations

import multiprocessing
import os
import struct
import subprocess
import sys

import numpy as np
import pytest
import torch

from ch05 import _files
from core.benchmark import BenchContext


# --- the fixture directory -----------------------------------------------------------------
def test_fixture_is_shared_by_the_sides_and_deleted_by_the_last(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.DATA_DIR_ENV, str(tmp_path))
    builds = []

    def build(directory):
        builds.append(directory)
        (directory / "data.bin").write_bytes(b"x")

    first = _files.acquire("unit", build)
    second = _files.acquire("unit", build)
    assert first == second and len(builds) == 1 and first.parent == tmp_path
    _files.release("unit")
    assert (first / "data.bin").exists()  # the other side still reads it
    _files.release("unit")
    assert not first.exists()


def test_directories_of_dead_processes_are_removed(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.DATA_DIR_ENV, str(tmp_path))
    done = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    gone = int(done.stdout)  # a process that has exited
    orphan = tmp_path / f"{_files.PREFIX}{gone}_stale_abc"
    orphan.mkdir()
    mine = tmp_path / f"{_files.PREFIX}{os.getpid()}_other_abc"
    mine.mkdir()
    _files.acquire("fresh", lambda directory: None)
    assert not orphan.exists() and mine.exists()
    _files.release("fresh")


def test_a_failed_build_leaves_nothing(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.DATA_DIR_ENV, str(tmp_path))

    def build(directory):
        raise RuntimeError("disk full")

    with pytest.raises(RuntimeError):
        _files.acquire("broken", build)
    assert list(tmp_path.iterdir()) == []


# --- vectorized_parse -----------------------------------------------------------------------
def test_record_layout_matches_struct():
    from ch05._vectorized_parse_common import RECORD, RECORD_FORMAT, ParseRecords

    raw = ParseRecords().make_inputs(7).numpy()
    records = np.frombuffer(raw, dtype=RECORD)
    first = RECORD_FORMAT.unpack_from(raw, 0)
    last = RECORD_FORMAT.unpack_from(raw, (len(records) - 1) * RECORD.itemsize)
    assert first == (records[0]["label"], *records[0]["dense"], *records[0]["sparse"])
    assert last == (records[-1]["label"], *records[-1]["dense"], *records[-1]["sparse"])
    assert struct.calcsize("<B13i26I") == RECORD.itemsize  # packed: no padding


# --- dataloader -----------------------------------------------------------------------------
def test_image_codec_round_trips():
    from ch05._dataloader_common import decode, encode

    image = np.random.default_rng(0).integers(0, 256, (40, 40, 3), dtype=np.uint8)
    assert np.array_equal(decode(encode(image), 40), image)


def test_worker_processes_end_with_teardown(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.DATA_DIR_ENV, str(tmp_path))
    from ch05.optimized_dataloader import WorkerLoader

    bench = WorkerLoader()
    bench.ctx = BenchContext(seed=0, device="cpu")
    bench.setup(bench.ctx)
    try:
        assert multiprocessing.active_children(), "persistent workers start in setup()"
        logits, losses = bench.run(bench.make_inputs(1))
        assert logits.shape == (bench.cfg.per_run, bench.cfg.classes)
    finally:
        bench.teardown()
    assert multiprocessing.active_children() == []
    assert list(tmp_path.iterdir()) == []


# --- token_pipeline -------------------------------------------------------------------------
def test_tokenizer_matches_split_and_lookup(tmp_path):
    from ch05._token_pipeline_common import CPU_CONFIG, EOS, UNK, Tokenizer, write_corpus

    write_corpus(tmp_path, CPU_CONFIG, seed=3)
    vocabulary = np.load(tmp_path / "vocabulary.npy")
    lookup = {bytes(word[word != 0]): i + 3 for i, word in enumerate(vocabulary)}
    text = (tmp_path / "corpus.txt").read_bytes()[:5000]
    text = text[:text.rindex(b"\n") + 1] + b"zzzzzzzzz unknownword\n"  # too long, unknown
    expected = []
    for line in text.split(b"\n")[:-1]:
        expected += [lookup.get(word, UNK) for word in line.split(b" ") if word] + [EOS]
    ids = Tokenizer(vocabulary).encode(np.frombuffer(text, dtype=np.uint8))
    assert ids.tolist() == expected and expected[-3:] == [UNK, UNK, EOS]


def test_pack_truncates_and_pads():
    from ch05._token_pipeline_common import PAD, pack

    rows = pack(np.arange(1, 8), np.empty((2, 3), dtype=np.int64))
    assert rows.tolist() == [[1, 2, 3], [4, 5, 6]]
    rows = pack(np.arange(1, 5), np.empty((2, 3), dtype=np.int64))
    assert rows.tolist() == [[1, 2, 3], [4, PAD, PAD]]


# --- gds_read (GPU only; its baseline's file reads run here) --------------------------------
def test_gds_baseline_reads_the_requested_chunks(tmp_path, monkeypatch):
    monkeypatch.setenv(_files.DATA_DIR_ENV, str(tmp_path))
    from ch05.baseline_gds_read import BounceThroughHost

    bench = BounceThroughHost()
    bench.ctx = BenchContext(seed=0, device="cpu")
    bench.setup(bench.ctx)
    try:
        chunks = bench.make_inputs(5)
        out = bench.run(chunks)
        assert torch.equal(out, bench.reference(chunks))
        data = (bench.path).read_bytes()
        size = bench.cfg.chunk
        second = chunks[1].item()
        assert out[1].numpy().tobytes() == data[second * size:(second + 1) * size]
    finally:
        bench.teardown()
    assert list(tmp_path.iterdir()) == []
