"""GPU-only checks (skipped on CPU): the planted cheats of tests/planted are caught on a
real GPU while an honest pair in the same run is measured."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import torch

from core.discovery import select
from core.runner import RunOptions, run_suite

pytestmark = pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")

PLANTED = Path(__file__).parent / "planted"


def test_planted_side_stream_and_hang_are_caught(tmp_path):
    chapter = tmp_path / "ch97"
    chapter.mkdir()
    (chapter / "__init__.py").write_text("")
    for file in PLANTED.glob("*.py"):
        shutil.copy(file, chapter / file.name)
    # an honest pair in the same run: the planted side-stream baseline against itself
    shutil.copy(PLANTED / "baseline_planted_sidestream.py", chapter / "baseline_honest.py")
    shutil.copy(PLANTED / "baseline_planted_sidestream.py", chapter / "optimized_honest.py")
    result = run_suite(select(["ch97"], root=tmp_path), RunOptions(output_dir=tmp_path / "runs"))
    rows = {ex["name"]: ex for ex in result.rows}
    assert rows["planted_sidestream"]["status"] == "failed"
    assert "escaped the timed stream" in rows["planted_sidestream"]["reason"]
    assert rows["planted_hang"]["status"] == "failed"
    assert "timed out after 20 s" in rows["planted_hang"]["reason"]
    assert rows["honest"]["status"] == "ok"
    assert 0.8 < rows["honest"]["speedup"] < 1.25
