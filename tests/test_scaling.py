"""Each chapter README's scaling table: generated from the committed expectations by GPU
count, with weak or strong scaling efficiency as the pair declares it (core.scaling)."""
from __future__ import annotations

import json

import pytest

from core import REPO_ROOT
from core.benchmark import Requirements
from core.front_page import stale, write_all
from core.scaling import BEGIN, efficiency, series, table


def _chapter(root, name, files):
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text if isinstance(text, str) else json.dumps(text))
    return folder


def _entry(base, opt):
    return {"baseline_ms": base, "optimized_ms": opt, "speedup": base / opt}


@pytest.fixture
def chapter(tmp_path):
    return _chapter(tmp_path, "ch90", {
        "_tp_common.py": 'class TP:\n    requires = Requirements(gpus=2, scales="strong")\n',
        "_ddp_common.py": 'class DDP:\n    requires = Requirements(gpus=2, scales="weak")\n',
        "_p2p_common.py": 'class P2P:\n    requires = Requirements(gpus=2)\n',
        "baseline_tp.py": "from ch90._tp_common import TP\n",
        "optimized_tp.py": "from ch90._tp_common import TP\n",
        "baseline_ddp.py": "from ch90._ddp_common import DDP\n",
        "optimized_ddp.py": "from ch90._ddp_common import DDP\n",
        "optimized_ddp_bucket100.py": "from ch90.optimized_ddp import DDP\n",  # two imports deep
        "baseline_p2p.py": "from ch90._p2p_common import P2P\n",
        "optimized_p2p.py": "from ch90._p2p_common import P2P\n",
        "README.md": "# ch90\n\nProse.\n\n## Measured\n\nrows\n",
        "expectations_2x_h100.json": {"examples": {"tp": _entry(4.0, 2.0), "ddp": _entry(10.0, 8.0),
                                                   "ddp_bucket100": _entry(10.0, 7.5),
                                                   "p2p": _entry(1.0, 0.5)}},
        "expectations_4x_h100.json": {"examples": {"tp": _entry(4.4, 1.25), "ddp": _entry(12.5, 8.0)}},
        "expectations_h100.json": {"examples": {"other": _entry(1.0, 0.5)}}})


def test_efficiency_is_weak_or_strong_as_declared():
    assert efficiency("weak", 2, 8.0, 4, 10.0) == pytest.approx(0.8)  # same work per GPU: t0/t
    assert efficiency("strong", 2, 2.0, 4, 1.25) == pytest.approx(0.8)  # 2·2.0 / (4·1.25)
    assert efficiency("strong", 2, 2.0, 4, 1.0) == pytest.approx(1.0)  # halved time on twice the GPUs


def test_the_table_shows_each_scaling_pair_by_gpu_count_and_leaves_fixed_pairs_out(chapter):
    found = series(chapter, chapter.parent)
    assert [(s.pair, s.side, s.scaling) for s in found] == [
        ("ddp", "baseline", "weak"), ("ddp", "ddp", "weak"), ("ddp", "ddp_bucket100", "weak"),
        ("tp", "baseline", "strong"), ("tp", "tp", "strong")]
    text = table(found)
    assert "| pair | side | scaling | GPU | 2 GPUs ms | 4 GPUs ms | efficiency 2→4 |" in text
    assert "| tp | tp | strong | H100 | 2 | 1.25 | 80% |" in text
    assert "| tp | baseline | strong | H100 | 4 | 4.4 | 45% |" in text
    assert "| ddp | ddp | weak | H100 | 8 | 8 | 100% |" in text
    assert "| ddp | baseline | weak | H100 | 10 | 12.5 | 80% |" in text
    assert "| ddp | ddp_bucket100 | weak | H100 | 7.5 | – | – |" in text  # not yet stored at 4
    assert "p2p" not in text and "other" not in text


def test_the_block_goes_before_measured_then_is_replaced_in_place(chapter):
    assert write_all(chapter.parent) == [chapter / "README.md"]
    text = (chapter / "README.md").read_text()
    assert text.index(BEGIN) < text.index("## Measured") < text.index("rows")
    assert text.startswith("# ch90\n\nProse.\n\n" + BEGIN)
    assert write_all(chapter.parent) == []  # idempotent
    (chapter / "expectations_4x_h100.json").unlink()
    write_all(chapter.parent)
    assert "4 GPUs" not in (chapter / "README.md").read_text()
    assert (chapter / "README.md").read_text().count(BEGIN) == 1


def test_a_block_without_its_end_marker_is_an_error_naming_the_fix(chapter):
    (chapter / "README.md").write_text(f"# ch90\n{BEGIN}\nold\n")
    with pytest.raises(ValueError, match="markers: add them"):
        write_all(chapter.parent)


def test_scales_must_say_weak_or_strong():
    assert Requirements(gpus=2, scales="weak").scales and not Requirements(gpus=2).scales
    with pytest.raises(ValueError, match='scales="weak"'):
        Requirements(gpus=2, scales=True)


def test_the_committed_generated_tables_match_the_committed_expectations():
    """Every README's generated blocks (front page, roof summary, scaling and roof tables)."""
    assert not stale(REPO_ROOT), ("stale generated tables: run `python -m cli.aisp bench "
                                  "front-page` and commit the READMEs")
