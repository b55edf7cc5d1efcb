"""The command line (cli.aisp) through typer's CliRunner; fake chapters via AISP_ROOT."""
from __future__ import annotations

import inspect
import json
import re
import shlex
from importlib import metadata
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

import core.runner
from cli.aisp import app, chapter_main
from core import REPO_ROOT
from core.discovery import discover
from core.events import PairFinished, PairStarted, RunStarted
from core.record import ExampleResult, PairResult, RunRecord
from tests.conftest import CPU_KEY, VEC_COMMON, cpu_only, vec_chapter_files, vec_pair_file, write_chapter

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
    positional = invoke("bench", "list-targets", "ch95")  # as `bench run ch95` names it
    assert positional.exit_code == 0 and "ch95:vec" in positional.output
    assert "ch96" not in positional.output
    assert invoke("bench", "list-targets", "95", "ch99").exit_code == 2


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


@cpu_only
def test_another_gpus_malformed_expectations_file_is_a_note_not_a_stop(fake_env, make_chapter,
                                                                      tmp_path):
    """A broken expectations_h100.json stopped a CPU run (exit 2) that never reads it."""
    chapter = make_chapter("ch95", dict(GOOD, **{"expectations_h100.json": "{broken"}))
    result = invoke("bench", "run", "ch95", "--iterations", "2", "--warmup", "1",
                    "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    assert f"{chapter / 'expectations_h100.json'}" in result.output
    assert "not this machine's expectations" in result.output and "the run goes on" in result.output
    assert "ch95:vec" in result.output and (chapter / "expectations_h100.json").read_text() == "{broken"


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
    upper = invoke("bench", "expectations", "--hardware", "H100")  # as the GPU's name is written
    assert upper.exit_code == 0 and "vec_wide" in upper.output
    unknown = invoke("bench", "expectations", "--hardware", "a100")  # matched nothing silently
    assert unknown.exit_code == 2 and "the keys stored are b200, h100" in unknown.output


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
    as_json = invoke("hw", "info", "--format", "json")  # as bench run says it
    assert as_json.exit_code == 0
    info = json.loads(as_json.stdout)
    assert info["device"] == "cpu" and info["hardware_key"] == CPU_KEY
    assert json.loads(invoke("hw", "info", "--json").stdout) == info  # the old spelling still works
    assert "--json" not in invoke("hw", "info", "--help").output  # ...but is no longer offered


def test_chapter_compare_entry_point(fake_env, make_chapter, capsys):
    chapter = make_chapter("ch95", GOOD)
    with pytest.raises(SystemExit) as exit_info:
        chapter_main(str(chapter / "compare.py"), ["--examples", "nope"])
    assert exit_info.value.code == 2
    assert "ch95:nope" in capsys.readouterr().err
    with pytest.raises(SystemExit) as exit_info:
        chapter_main(str(chapter / "compare.py"), ["--examples"])
    assert exit_info.value.code == 2


def test_chapter_compare_help_shows_its_own_options(fake_env, make_chapter, capsys):
    chapter = make_chapter("ch95", dict(GOOD, **{"optimized_vec_wide.py": vec_pair_file()}))
    chapter_main(str(chapter / "compare.py"), ["--help"])
    out = capsys.readouterr().out
    assert "python ch95/compare.py [--examples" in out
    assert "vec, vec_wide" in out  # the names --examples takes
    assert "--iterations" in out and "--resume" in out  # bench run's options apply
    assert "--targets" not in out and "bench run [OPTIONS]" not in out  # compare.py fixes them


# ---------------------------------------------------------------- a stand-in for run_suite
# Tests of the command line itself (targets, output modes, Ctrl-C) replace core.runner.run_suite
# with this: it makes a run directory as the runner does, sends the runner's events and returns
# a record, in milliseconds. `then` says how it ends: "return", "interrupted" (the runner caught
# Ctrl-C in its pairs loop) or "raise" (Ctrl-C outside it); `finished` whether a pair reached
# results.jsonl first.

class FakeSuite:
    def __init__(self, then: str = "return", finished: bool = True):
        self.then, self.finished, self.logs = then, finished, True
        self.calls: list[tuple[list, core.runner.RunOptions]] = []
        self.run_dir = None

    def __call__(self, selection, options, listener=lambda event: None):
        self.calls.append((selection, options))
        run_dir = options.resume or core.runner.make_run_dir(options.output_dir)
        self.run_dir = run_dir
        (run_dir / "run.json").write_text(json.dumps(core.runner.run_choices(selection, options)))
        record = RunRecord(run_dir, {"device": "cpu", "hardware_key": CPU_KEY}, {})
        listener(RunStarted(run_dir, len(selection)))
        for index, (pair, examples) in enumerate(selection, 1):
            listener(PairStarted(index, len(selection), pair.id))
            if self.logs:  # a pair skipped before any child process ran has no log
                (run_dir / "logs" / f"{pair.id.replace(':', '__')}.log").write_text("child output\n")
            result = PairResult(pair=pair.id, stop_reason="fixed sample count", rounds=3,
                                duration_s=0.1, examples=[ExampleResult(e.name, e.id, "") for e in examples])
            if self.finished:
                with open(run_dir / "results.jsonl", "a") as handle:
                    handle.write(json.dumps(result.to_dict()) + "\n")
                record.pairs.append(result)
                listener(PairFinished(index, len(selection), result))
            if self.then == "raise":
                raise KeyboardInterrupt
            if self.then == "interrupted":
                record.interrupted = True
                break
        return record

    def ran(self) -> list[str]:
        """The example ids of the last call's selection."""
        return [e.id for _, examples in self.calls[-1][0] for e in examples]


@pytest.fixture
def fake_suite(monkeypatch):
    def install(then: str = "return", finished: bool = True) -> FakeSuite:
        suite = FakeSuite(then, finished)
        monkeypatch.setattr(core.runner, "run_suite", suite)
        return suite
    return install


# ---------------------------------------------------------------- bench run: positional targets

def test_run_takes_targets_as_arguments(fake_env, make_chapter, fake_suite, tmp_path):
    make_chapter("ch95", dict(GOOD, **{"optimized_vec_wide.py": vec_pair_file()}))
    make_chapter("ch96", GOOD)
    suite = fake_suite()
    out = ["--output-dir", str(tmp_path / "runs")]
    assert invoke("bench", "run", "ch95", *out).exit_code == 0
    assert suite.ran() == ["ch95:vec", "ch95:vec_wide"]
    assert invoke("bench", "run", "ch95:vec_wide", "ch96", *out).exit_code == 0
    assert suite.ran() == ["ch95:vec_wide", "ch96:vec"]
    # --targets / -t still work, and merge with the arguments
    assert invoke("bench", "run", "--targets", "ch95:vec_wide", *out).exit_code == 0
    assert suite.ran() == ["ch95:vec_wide"]
    assert invoke("bench", "run", "ch96", "-t", "ch95:vec_wide", *out).exit_code == 0
    assert suite.ran() == ["ch95:vec_wide", "ch96:vec"]


def test_run_argument_targets_are_checked(fake_env, make_chapter, fake_suite):
    make_chapter("ch95", GOOD)
    suite = fake_suite()
    result = invoke("bench", "run", "ch95:vek")
    assert result.exit_code == 2 and "did you mean: ch95:vec" in result.output
    result = invoke("bench", "run", "ch98", "--targets", "ch95")
    assert result.exit_code == 2 and "unknown target 'ch98'" in result.output
    assert not suite.calls


def test_run_without_targets_is_a_usage_error(fake_env, make_chapter, fake_suite):
    make_chapter("ch95", GOOD)
    suite = fake_suite()
    result = invoke("bench", "run", "--iterations", "3")
    assert result.exit_code == 2
    assert "no targets given" in result.output and "bench run ch07" in result.output
    assert "bench list-targets" in result.output
    assert not suite.calls


# ---------------------------------------------------------------- bench run: -q / -v

def test_run_quiet_and_verbose(fake_env, make_chapter, fake_suite, tmp_path):
    make_chapter("ch95", GOOD)
    suite = fake_suite()
    out = ["--output-dir", str(tmp_path / "runs")]
    default = invoke("bench", "run", "ch95", *out)
    assert default.exit_code == 0
    assert "[1/1] ch95:vec ..." in default.output and "log:" not in default.output
    for flag in ("-q", "--quiet"):
        quiet = invoke("bench", "run", "ch95", flag, *out)
        assert quiet.exit_code == 0
        assert "[1/1]" not in quiet.output and "vec: ok" not in quiet.output
        assert "ch95:vec" in quiet.stdout and "results:" in quiet.stdout  # the table is there
    for flag in ("-v", "--verbose"):
        verbose = invoke("bench", "run", "ch95", flag, *out)
        assert verbose.exit_code == 0
        assert "[1/1] ch95:vec ..." in verbose.output
        log = suite.run_dir / "logs" / "ch95__vec.log"
        assert f"log: {log}; stopped: fixed sample count after 3 rounds" in verbose.output
    suite.logs = False
    no_log = invoke("bench", "run", "ch95", "-v", *out)
    assert "log: none (no child process ran for it)" in no_log.output
    both = invoke("bench", "run", "ch95", "-q", "-v", *out)
    assert both.exit_code == 2 and "--quiet and --verbose" in both.output


@cpu_only
def test_run_verbose_names_the_real_log(fake_env, make_chapter, tmp_path):
    make_chapter("ch95", GOOD)
    result = invoke("bench", "run", "ch95", "-v", "--iterations", "3", "--warmup", "1",
                    "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 0, result.output
    match = re.search(r"log: (\S+\.log); stopped: fixed sample count after \d+ rounds", result.output)
    assert match, result.output
    log = tmp_path.joinpath(match.group(1))
    assert log.is_file() and log.parent.parent.parent == tmp_path / "runs"


# ---------------------------------------------------------------- bench run: Ctrl-C

def _continue_command(output: str) -> list[str]:
    """The words of the command the interruption message says to run next."""
    match = re.search(r"^  (python -m cli\.aisp bench run .*)$", output, re.M)
    assert match, output
    return shlex.split(match.group(1))


@pytest.mark.parametrize("then", ["raise", "interrupted"])
def test_ctrl_c_prints_the_resume_command(fake_env, make_chapter, fake_suite, tmp_path, then):
    make_chapter("ch95", GOOD)
    make_chapter("ch96", GOOD)
    suite = fake_suite(then)
    runs = tmp_path / "runs dir"  # a space: the command must quote it
    result = invoke("bench", "run", "ch96", "-t", "ch95", "--iterations", "3", "--seed", "7",
                    "--timeout", "90", "--strict", "-q", "--output-dir", str(runs))
    assert result.exit_code == 130, result.output
    run_dir = suite.run_dir
    words = _continue_command(result.output)
    assert words[:5] == ["python", "-m", "cli.aisp", "bench", "run"]
    assert words[-2:] == ["--resume", str(run_dir)]
    assert f"kept in {run_dir}" in result.output
    # the command runs as printed: same targets and options, continuing that directory
    first = suite.calls[-1][1]
    suite.then = "return"
    again = invoke(*words[3:])
    assert again.exit_code == 0, again.output
    options = suite.calls[-1][1]
    assert suite.ran() == ["ch95:vec", "ch96:vec"]
    assert options.resume == run_dir
    for name in ("iterations", "warmup", "seed", "timeout_s", "strict", "profile",
                 "update_expectations"):
        assert getattr(options, name) == getattr(first, name), name


def test_resume_alone_continues_the_run_with_its_own_targets(fake_env, make_chapter, fake_suite,
                                                             tmp_path):
    make_chapter("ch95", GOOD)
    make_chapter("ch96", GOOD)
    suite = fake_suite("interrupted")
    first = invoke("bench", "run", "ch96", "ch95", "-q", "--output-dir", str(tmp_path / "runs"))
    assert first.exit_code == 130, first.output
    suite.then = "return"
    again = invoke("bench", "run", "--resume", str(suite.run_dir))  # said "no targets given"
    assert again.exit_code == 0, again.output
    assert suite.ran() == ["ch95:vec", "ch96:vec"] and suite.calls[-1][1].resume == suite.run_dir
    nothing = invoke("bench", "run", "--resume", str(tmp_path / "not-a-run"))
    assert nothing.exit_code == 2 and "no readable run.json" in nothing.output


def test_resume_alone_takes_the_options_of_the_run_it_continues(fake_env, make_chapter, fake_suite,
                                                                tmp_path):
    """`bench run --resume DIR` of a smoke run said "mode: was 'smoke', now 'full'"."""
    make_chapter("ch95", GOOD)
    suite = fake_suite("interrupted")
    first = invoke("bench", "run", "ch95", "--mode", "smoke", "--iterations", "5", "--seed", "7",
                   "--profile", "minimal", "-q", "--output-dir", str(tmp_path / "runs"))
    assert first.exit_code == 130, first.output
    suite.then = "return"
    assert invoke("bench", "run", "--resume", str(suite.run_dir)).exit_code == 0
    selection, options = suite.calls[-1]
    assert (options.mode, options.iterations, options.warmup, options.seed, options.profile) == (
        "smoke", 5, 1, 7, "minimal")
    core.runner.check_resume(suite.run_dir, core.runner.run_choices(selection, options))  # accepted
    recorded = (suite.run_dir / "run.json").read_text()
    assert invoke("bench", "run", "--resume", str(suite.run_dir), "--mode", "full").exit_code == 0
    selection, options = suite.calls[-1]  # an option given now is kept, and the runner refuses it
    assert options.mode == "full" and options.iterations == 5
    (suite.run_dir / "run.json").write_text(recorded)  # FakeSuite rewrote it
    with pytest.raises(core.runner.ResumeError, match="mode: was 'smoke', now 'full'"):
        core.runner.check_resume(suite.run_dir, core.runner.run_choices(selection, options))


def test_ctrl_c_before_any_pair_finished_says_start_again(fake_env, make_chapter, fake_suite, tmp_path):
    make_chapter("ch95", GOOD)
    fake_suite("raise", finished=False)
    result = invoke("bench", "run", "ch95", "--format", "json", "--output-dir", str(tmp_path / "runs"))
    assert result.exit_code == 130
    assert "before any pair finished" in result.output and "--resume" not in result.output
    assert _continue_command(result.output) == ["python", "-m", "cli.aisp", "bench", "run",
                                                "ch95", "--format", "json"]
    assert result.stdout == ""  # the hint goes to stderr: stdout stays a JSON document or nothing


# ---------------------------------------------------------------- --version

def _pyproject_version() -> str:
    return re.search(r'^version\s*=\s*"([^"]+)"', (REPO_ROOT / "pyproject.toml").read_text(),
                     re.M).group(1)


def test_version():
    import torch

    from core.hardware import git_commit

    result = invoke("--version")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    assert lines[0] == f"aisp {metadata.version('aisp')}"
    assert f"torch {torch.__version__}" in lines
    commit = git_commit()
    assert (f"git commit {commit}" in lines) if commit else not any("commit" in x for x in lines)


def test_version_falls_back_to_pyproject(monkeypatch):
    import core.hardware

    real = metadata.version

    def version(name):
        if name == "aisp":
            raise metadata.PackageNotFoundError(name)
        return real(name)
    monkeypatch.setattr(metadata, "version", version)
    monkeypatch.setattr(core.hardware, "git_commit", lambda: None)
    result = invoke("--version")
    assert result.exit_code == 0
    assert result.stdout.splitlines()[0] == f"aisp {_pyproject_version()}"
    assert "commit" not in result.stdout


# ---------------------------------------------------------------- list-targets --format

DECLARING = {
    "_vec_common.py": VEC_COMMON,
    "baseline_vec.py": vec_pair_file(attrs="teaching = True\nrequires = Requirements(modules=('numpy',))"),
    "optimized_vec.py": vec_pair_file(attrs=(
        "supports_cpu = False\ngoal = 'memory'\nnegative_result = 'slower here by design'\n"
        "cpu_bound = 'the host loop'\n"
        "requires = Requirements(gpus=2, min_compute_capability=(9, 0), nvcc=True)")),
    "optimized_vec_broken.py": "raise RuntimeError('boom at import')\n",
    "optimized_vec_loud.py": "print('hello from an import')\n" + vec_pair_file(),
}


def test_list_targets_json(fake_env, make_chapter):
    make_chapter("ch95", DECLARING)
    make_chapter("ch96", {"README.md": "planned\n"})
    result = invoke("bench", "list-targets", "--format", "json")
    assert result.exit_code == 0, result.output
    rows = {row["id"]: row for row in json.loads(result.stdout)}  # the print stayed out of it
    assert list(rows) == ["ch95:vec", "ch95:vec_broken", "ch95:vec_loud"]
    vec = rows["ch95:vec"]
    assert vec["pair"] == "ch95:vec" and vec["chapter"] == "ch95" and vec["stem"] == "vec"
    assert vec["name"] == "vec" and vec["variants"] == ["vec", "vec_broken", "vec_loud"]
    # a variant needs what its baseline and its optimized file need
    assert vec["requires"] == {"cuda": True, "gpus": 2, "min_compute_capability": "9.0",
                               "modules": ["numpy"], "nvcc": True, "numa_nodes": 1}
    assert (vec["goal"], vec["teaching"], vec["negative_result"], vec["cpu_bound"], vec["error"]) \
        == ("memory", True, "slower here by design", "the host loop", None)
    loud = rows["ch95:vec_loud"]
    assert loud["requires"]["cuda"] is False and loud["goal"] == "speed" and loud["error"] is None
    broken = rows["ch95:vec_broken"]
    assert "optimized_vec_broken.py" in broken["error"] and "boom at import" in broken["error"]
    assert broken["teaching"] is True  # the baseline still loaded


def test_list_targets_csv(fake_env, make_chapter):
    import csv
    import io

    make_chapter("ch95", DECLARING)
    result = invoke("bench", "list-targets", "--format", "csv")
    assert result.exit_code == 0, result.output
    rows = list(csv.DictReader(io.StringIO(result.stdout)))
    assert [r["id"] for r in rows] == ["ch95:vec", "ch95:vec_broken", "ch95:vec_loud"]
    vec = rows[0]
    assert vec["variants"] == "vec vec_broken vec_loud" and vec["requires_gpus"] == "2"
    assert vec["requires_cuda"] == "true" and vec["requires_min_compute_capability"] == "9.0"
    assert vec["requires_modules"] == "numpy" and vec["teaching"] == "true" and vec["error"] == ""
    assert "boom at import" in rows[1]["error"]
    bad = invoke("bench", "list-targets", "--format", "xml")
    assert bad.exit_code == 2


# ---------------------------------------------------------------- help, piped

def _commands(command, words: tuple[str, ...] = ()):
    """(words that reach it, command) for the command and every command under it."""
    yield words, command
    for name, sub in getattr(command, "commands", {}).items():
        yield from _commands(sub, (*words, name))


def test_piped_help_is_complete():
    """CliRunner's stdout is not a terminal, as with `--help | less`: every command's help
    holds each option's whole sentence (rich's 80-column panels cut them with "…")."""
    for words, command in _commands(typer.main.get_command(app)):
        result = invoke(*words, "--help")
        assert result.exit_code == 0, (words, result.output)
        assert "…" not in result.output, words
        flat = "".join(result.output.split())  # wrapping may break lines at a hyphen
        for param in command.params:
            if getattr(param, "hidden", False):  # an old spelling kept working, not offered
                continue
            if getattr(param, "help", None):
                assert "".join(param.help.split()) in flat, (words, param.name)
            for opt in param.opts + param.secondary_opts:
                assert not opt.startswith("-") or opt in result.output, (words, opt)
        for name, sub in getattr(command, "commands", {}).items():  # a group: its commands' lines
            first = inspect.cleandoc(sub.help or "").split("\n\n")[0]
            assert "".join(first.split()) in flat, (words, name)


@pytest.mark.parametrize("words", [(), ("bench",), ("hw",), ("tools",)])
def test_group_without_arguments_prints_its_help(words):
    result = invoke(*words)
    assert result.exit_code == 2  # click's usage error, its help on stderr
    assert result.output.startswith("Usage:") and "Commands:" in result.output


def test_sigterm_stops_the_run_like_ctrl_c_and_keeps_what_was_measured(fake_root, tmp_path):
    """What `timeout` or a cancelled CI job sends: the running pair's process is killed, the
    pairs measured so far are written to results.json, exit 143 with how to continue."""
    import os
    import signal
    import subprocess
    import sys
    import time

    from core.process import child_env

    pid_file = tmp_path / "hanging.pid"
    hang = vec_pair_file(f"import os\nopen({str(pid_file)!r}, 'w').write(str(os.getpid()))\n"
                         "time.sleep(3600)")
    write_chapter(fake_root, "ch94", {"_vec_common.py": VEC_COMMON,
                                      "baseline_aa.py": vec_pair_file(), "optimized_aa.py": vec_pair_file(),
                                      "baseline_zz.py": hang, "optimized_zz.py": hang})
    out = tmp_path / "runs"
    proc = subprocess.Popen([sys.executable, "-m", "cli.aisp", "bench", "run", "ch94", "--iterations",
                             "3", "--output-dir", str(out), "--format", "json", "--quiet"],
                            env={**child_env(), "AISP_ROOT": str(fake_root)}, cwd=REPO_ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not pid_file.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)  # polling for the hanging pair to have started, with a deadline
    assert pid_file.exists(), proc.communicate(timeout=30)
    hanging = int(pid_file.read_text())
    proc.send_signal(signal.SIGTERM)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 143, stderr[-2000:]
    assert "terminated (SIGTERM): the pairs finished so far are kept in" in stderr
    results = json.loads(next(out.glob("*/results.json")).read_text())
    assert results["interrupted"] and [p["pair"] for p in results["pairs"]] == ["ch94:aa"]
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:  # the pair's process group was killed: gone, or a zombie
        try:
            state = Path(f"/proc/{hanging}/stat").read_text().split(")")[-1].split()[0]
        except OSError:
            break
        if state == "Z":
            break
        time.sleep(0.1)
    else:
        os.kill(hanging, signal.SIGKILL)
        raise AssertionError("the running pair's process outlived the terminated run")


def test_a_pair_file_run_as_a_script_answers_help_without_running():
    import subprocess
    import sys

    from core.process import child_env

    script = ["ch01/baseline_performance.py"]
    shown = subprocess.run([sys.executable, *script, "--help"], cwd=REPO_ROOT, env=child_env(),
                           capture_output=True, text=True, timeout=120)
    assert shown.returncode == 0 and "bench run ch01:performance" in shown.stdout
    assert " on cpu: median " not in shown.stdout  # its usage: the benchmark did not run
    wrong = subprocess.run([sys.executable, *script, "--iterations", "3"], cwd=REPO_ROOT,
                           env=child_env(), capture_output=True, text=True, timeout=120)
    assert wrong.returncode == 2 and "unknown argument '--iterations'" in wrong.stderr


def test_jobs_help_states_the_default_the_code_uses():
    from core.side_by_side import MOST_JOBS, default_jobs

    words = " ".join(invoke("bench", "run", "--help").output.replace("│", " ").split())
    assert f"at most {MOST_JOBS}, so {default_jobs()} on this host" in words  # it said "4 on a GPU"


def _help_on_a_terminal(columns: int, *words: str) -> str:
    """`python -m cli.aisp WORDS --help` as a terminal of `columns` columns shows it."""
    import os
    import pty
    import sys

    from core.process import child_env

    env = {**child_env(), "COLUMNS": str(columns), "TERM": "xterm"}
    pid, fd = pty.fork()
    if pid == 0:  # the child: a process whose stdout is the pseudo-terminal
        os.chdir(REPO_ROOT)
        os.execvpe(sys.executable, [sys.executable, "-m", "cli.aisp", *words, "--help"], env)
    out = b""
    while True:
        try:
            chunk = os.read(fd, 65536)
        except OSError:  # the child closed the terminal
            break
        if not chunk:
            break
        out += chunk
    os.waitpid(pid, 0)
    os.close(fd)
    return out.decode(errors="replace")


def test_help_on_an_80_column_terminal_is_whole():
    narrow = _help_on_a_terminal(80, "bench", "run")
    assert "--update-expectations" in narrow and "--ncu-clock-control" in narrow
    assert "…" not in narrow and "<bool>" not in narrow  # 8 cut items and a <bool> before
    wide = re.sub(r"\x1b\[[0-9;]*m", "", _help_on_a_terminal(160, "bench", "run"))  # no colours
    assert "…" not in wide and "<bool>" not in wide  # rich's wide panels still tagged flags <bool>


def test_help_is_typers_own_plain_layout_not_a_subclass_of_its_private_click():
    """cli/_help.py subclassed typer's command classes, built on its private `typer._click`;
    typer's public rich_markup_mode=None and short_help do the same."""
    import cli._help

    source = inspect.getsource(cli._help)
    assert "_click" not in source and "TyperCommand" not in source and "TyperGroup" not in source
    assert app.rich_markup_mode is None
    listing = invoke("hw", "--help").output.split("Commands:")[1]  # whole paragraphs, no "..."
    assert "..." not in listing and "OK / CHECK / unknown" in listing
