"""The command line (cli.aisp) through typer's CliRunner; fake chapters via AISP_ROOT."""
from __future__ import annotations

import json
import re

import pytest
from typer.testing import CliRunner

from cli.aisp import app, chapter_main
from core import REPO_ROOT
from core.discovery import discover
from tests.conftest import CPU_KEY, cpu_only, vec_chapter_files, vec_pair_file

runner = CliRunner()


def invoke(*args):
    return runner.invoke(app, list(args), catch_exceptions=False)


@pytest.fixture
def fake_env(fake_root, monkeypatch):
    monkeypatch.setenv("AISP_ROOT", str(fake_root))
    return fake_root


GOOD = vec_chapter_files(default=vec_pair_file("return torch.add(*inputs)"))


# ---------------------------------------------------------------- list-targets

def test_list_targets_real_repo():
    result = invoke("bench", "list-targets")
    assert result.exit_code == 0, result.output
    for chapter in discover(REPO_ROOT):
        assert re.search(rf"^{chapter.name}\b", result.output, re.M), chapter.name
        for pair in chapter.pairs:
            assert pair.id in result.output
            for example in pair.examples:
                assert example.name in result.output


def test_list_targets_fake_root(fake_env, make_chapter):
    files = dict(GOOD, **{"optimized_vec_wide.py": vec_pair_file(),
                          "optimized_lonely.py": vec_pair_file()})
    make_chapter("ch95", files)
    make_chapter("ch96", {"README.md": "planned\n"})
    result = invoke("bench", "list-targets")
    assert result.exit_code == 0, result.output
    assert "ch95:vec" in result.output and "vec, vec_wide" in result.output
    assert "optimized_lonely.py has no partner file" in result.output
    assert "ch96" in result.output and "no pairs yet" in result.output
    only = invoke("bench", "list-targets", "--chapter", "95")
    assert only.exit_code == 0 and "ch95:vec" in only.output and "ch96" not in only.output
    missing = invoke("bench", "list-targets", "--chapter", "ch99")
    assert missing.exit_code == 2 and "ch99" in missing.output


# ---------------------------------------------------------------- bench run: usage errors

def test_run_unknown_chapter_exits_2():
    result = invoke("bench", "run", "--targets", "ch99")
    assert result.exit_code == 2
    assert "unknown target 'ch99'" in result.output


def test_run_unknown_example_lists_close_matches():
    result = invoke("bench", "run", "--targets", "ch07:nope")
    assert result.exit_code == 2
    assert "ch07:nope" in result.output and "did you mean" in result.output and "ch07" in result.output


def test_run_unknown_example_in_fake_chapter(fake_env, make_chapter):
    make_chapter("ch95", GOOD)
    result = invoke("bench", "run", "--targets", "ch95:vek")
    assert result.exit_code == 2 and "did you mean: ch95:vec" in result.output


def test_run_several_targets_and_empty_chapter(fake_env, make_chapter):
    make_chapter("ch95", GOOD)
    make_chapter("ch96", {"README.md": "planned\n"})
    # `--targets ch95 ch98`: the second name arrives as an extra argument and is still a target
    result = invoke("bench", "run", "--targets", "ch95", "ch98")
    assert result.exit_code == 2 and "unknown target 'ch98'" in result.output
    result = invoke("bench", "run", "--targets", "ch96")
    assert result.exit_code == 2 and "ch96/README.md" in result.output


def test_run_output_dir_that_is_a_file_exits_2(fake_env, make_chapter, tmp_path):
    make_chapter("ch95", GOOD)
    blocker = tmp_path / "a_file"
    blocker.write_text("not a directory")
    result = invoke("bench", "run", "--targets", "ch95", "--output-dir", str(blocker / "runs"))
    assert result.exit_code == 2
    assert "cannot write to output dir" in result.output
    assert blocker.read_text() == "not a directory"


def test_run_unknown_option_exits_2(fake_env, make_chapter):
    make_chapter("ch95", GOOD)
    result = invoke("bench", "run", "--targets", "ch95", "--bogus-flag")
    assert result.exit_code == 2


@cpu_only
def test_run_malformed_expectations_exits_2_and_leaves_file(fake_env, make_chapter, tmp_path):
    chapter = make_chapter("ch95", dict(GOOD, **{
        f"expectations_{CPU_KEY}.json": '{"examples": {"vec": {"speedup": "fast"}}}'}))
    path = chapter / f"expectations_{CPU_KEY}.json"
    before = path.read_bytes()
    result = invoke("bench", "run", "--targets", "ch95", "--iterations", "2", "--warmup", "1",
                    "--update-expectations", "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 2, result.output
    assert str(path) in result.output
    assert path.read_bytes() == before
    assert [p.name for p in chapter.glob("expectations*")] == [f"expectations_{CPU_KEY}.json"]
    assert not list((tmp_path / "runs").glob("*/results.jsonl"))  # no pair ran


# ---------------------------------------------------------------- bench run: real runs

@cpu_only
def test_run_all_good_exits_0(fake_env, make_chapter, tmp_path, store_noisy):
    chapter = make_chapter("ch95", GOOD)
    result = invoke("bench", "run", "--targets", "ch95", "--iterations", "3", "--warmup", "1",
                    "--format", "json", "--update-expectations", "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    data = json.loads(result.stdout)
    rows = [ex for pair in data["pairs"] for ex in pair["examples"]]
    assert [(r["id"], r["status"]) for r in rows] == [("ch95:vec", "ok")]
    assert rows[0]["expectation"]["status"] == "new"
    assert data["expectation_updates"] == [f"ch95/expectations_{CPU_KEY}.json"]
    stored = json.loads((chapter / f"expectations_{CPU_KEY}.json").read_text())
    assert set(stored["examples"]) == {"vec"} and stored["hardware_key"] == CPU_KEY
    listed = invoke("bench", "expectations")
    assert listed.exit_code == 0 and "vec" in listed.output and "ch95" in listed.output


@cpu_only
def test_run_verification_failure_exits_1(fake_env, make_chapter, tmp_path):
    make_chapter("ch95", dict(GOOD, **{"optimized_vec_wrong.py": vec_pair_file(
        "x, y = inputs\nout = x + y\nout[0] = out[0] + 1\nreturn out")}))
    result = invoke("bench", "run", "--targets", "ch95", "--iterations", "3", "--warmup", "1",
                    "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 1, result.output
    assert "MISMATCH" in result.output
    assert "ch95:vec_wrong" in result.output and "verification failed" in result.output
    # not a terminal: the progress events as plain lines (core.events.describe)
    assert "[1/1] ch95:vec ..." in result.output and "vec_wrong: failed" in result.output


# ---------------------------------------------------------------- bench expectations

def _expectations(chapter, key, examples):
    (chapter / f"expectations_{key}.json").write_text(json.dumps(
        {"schema": 1, "hardware_key": key, "examples": examples}))


def test_expectations_listing_and_min_speedup(fake_env, make_chapter):
    ch95 = make_chapter("ch95", GOOD)
    ch96 = make_chapter("ch96", {})
    _expectations(ch95, "h100", {"vec": {"speedup": 1.2, "provenance": {"device": "NVIDIA H100"}},
                                 "vec_wide": {"speedup": 3.0}})
    _expectations(ch96, "b200", {"attn": {"speedup": 2.5}})
    listed = invoke("bench", "expectations")
    assert listed.exit_code == 0
    for fragment in ("vec", "vec_wide", "attn", "h100", "b200", "1.20x", "NVIDIA H100"):
        assert fragment in listed.output
    h100 = invoke("bench", "expectations", "--hardware", "h100")
    assert h100.exit_code == 0 and "vec_wide" in h100.output and "attn" not in h100.output
    below = invoke("bench", "expectations", "--min-speedup", "1.5")
    assert below.exit_code == 1
    assert "1.20x" in below.output and "vec_wide" not in below.output and "attn" not in below.output
    fine = invoke("bench", "expectations", "--min-speedup", "1.1")
    assert fine.exit_code == 0 and "every stored speedup" in fine.output


def test_expectations_malformed_exits_2(fake_env, make_chapter):
    chapter = make_chapter("ch95", {"expectations_h100.json": "{not json"})
    result = invoke("bench", "expectations")
    assert result.exit_code == 2
    assert str(chapter / "expectations_h100.json") in result.output


# ---------------------------------------------------------------- hw, compare.py

@cpu_only
def test_hw_info_on_cpu():
    result = invoke("hw", "info")
    assert result.exit_code == 0
    assert re.search(r"^device\s+cpu\s*$", result.output, re.M), result.output
    as_json = invoke("hw", "info", "--json")
    assert as_json.exit_code == 0
    info = json.loads(as_json.stdout)
    assert info["device"] == "cpu" and info["hardware_key"] == CPU_KEY


def test_chapter_compare_entry_point(fake_env, make_chapter, capsys):
    chapter = make_chapter("ch95", GOOD)
    with pytest.raises(SystemExit) as exit_info:
        chapter_main(str(chapter / "compare.py"), ["--examples", "nope"])
    assert exit_info.value.code == 2
    assert "ch95:nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        chapter_main(str(chapter / "compare.py"), ["--examples"])
    assert exit_info.value.code == 2
