"""`tools new-pair`: a candidate is scaffolded as a variant of an existing pair and judged by
the real harness (child processes, verification, timed-output checks)."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core.new_pair import ScaffoldError, scaffold
from tests.conftest import cpu_only, vec_chapter_files

HONEST = '''\
import torch


def candidate(inputs):
    x, y = inputs
    return torch.add(x, y)  # the same sum, written another way
'''

# Cheats an assistant might write without meaning to: right on the calls it was checked on,
# then a remembered answer; or right for the first input only.
REMEMBERS_ANSWER = '''\
_seen = []


def candidate(inputs):
    x, y = inputs
    if len(_seen) < 3:  # honest while the verification calls run
        _seen.append(x + y)
    return _seen[-1]
'''

WRONG = '''\
def candidate(inputs):
    x, y = inputs
    return x + y + 1e-2  # off by more than the tolerance
'''


def judge(fake_root, tmp_path, source: str, name: str, suffix: str = ".py", *extra: str):
    file = tmp_path / f"cand_{name}{suffix}"
    file.write_text(source)
    result = CliRunner().invoke(app, [
        "tools", "new-pair", str(file), "--baseline", str(fake_root / "ch93" / "baseline_vec.py"),
        "--name", name, "--iterations", "3", "--output-dir", str(tmp_path / "runs"), *extra])
    return result


@pytest.fixture
def chapter(make_chapter, monkeypatch, fake_root):
    monkeypatch.setenv("AISP_ROOT", str(fake_root))
    return make_chapter("ch93", vec_chapter_files())


@cpu_only
def test_an_honest_candidate_is_accepted_with_the_evidence(chapter, fake_root, tmp_path):
    result = judge(fake_root, tmp_path, HONEST, "mine")
    assert result.exit_code == 0, result.output
    assert "ACCEPTED ch93:vec_mine" in result.stdout
    assert "timed outputs re-checked" in result.stdout and "speedup" in result.stdout
    optimized = (chapter / "optimized_vec_mine.py").read_text()
    assert "class Candidate(Baseline)" in optimized and "def run(self, inputs)" in optimized
    assert (chapter / "_vec_mine_candidate.py").read_text() == HONEST


@cpu_only
@pytest.mark.parametrize("source, name, reason", [
    (REMEMBERS_ANSWER, "cached", "timed output differs from the baseline"),
    (WRONG, "wrong", "verification failed"),
])
def test_a_cheating_or_wrong_candidate_is_rejected_with_the_reason(chapter, fake_root, tmp_path,
                                                                   source, name, reason):
    result = judge(fake_root, tmp_path, source, name)
    assert result.exit_code == 1, result.output
    assert f"REJECTED ch93:vec_{name}" in result.stdout
    assert reason in result.stdout


@cpu_only
def test_a_cuda_candidate_is_not_judged_on_a_machine_without_a_gpu(chapter, fake_root, tmp_path):
    kernel = '#include "aisp.cuh"\nextern "C" AISP_API int candidate(const float* x, const float* y,' \
             ' float* out, int64_t n, cudaStream_t stream) { return 0; }\n'
    result = judge(fake_root, tmp_path, kernel, "cu", ".cu")
    assert result.exit_code == 1
    assert "NOT JUDGED ch93:vec_cu" in result.stdout and "needs a CUDA GPU" in result.stdout
    source = (chapter / "optimized_vec_cu.py").read_text()
    assert "self.kernel.candidate(*tensors, self.out, self.out.numel())" in source
    compile(source, "optimized_vec_cu.py", "exec")  # the generated file is valid Python


def test_scaffold_refuses_what_it_cannot_do_safely(chapter, fake_root, tmp_path):
    good = tmp_path / "c.py"
    good.write_text(HONEST)
    baseline = fake_root / "ch93" / "baseline_vec.py"
    scaffold(good, baseline, "once")
    with pytest.raises(ScaffoldError, match="_vec_once_candidate.py exists"):
        scaffold(good, baseline, "once")  # never overwrites without --force
    scaffold(good, baseline, "once", force=True)
    with pytest.raises(ScaffoldError, match="not a baseline file"):
        scaffold(good, fake_root / "ch93" / "optimized_vec_once.py", "x")
    with pytest.raises(ScaffoldError, match="--name 'Bad-Name'"):
        scaffold(good, baseline, "Bad-Name")
    text = tmp_path / "c.txt"
    text.write_text("")
    with pytest.raises(ScaffoldError, match="a candidate is a .py file"):
        scaffold(text, baseline, "y")
    result = CliRunner().invoke(app, ["tools", "new-pair", str(tmp_path / "missing.py"),
                                      "--baseline", str(baseline), "--name", "z"])
    assert result.exit_code == 2 and "missing.py: no such file" in result.output
