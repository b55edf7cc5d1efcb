"""The root README's results table: generated from the committed expectations, never typed."""
from __future__ import annotations

import json

import pytest

from core import REPO_ROOT
from core.front_page import BEGIN, END, first_sentence, gpu_label, place, rebuilt, rows, table, write_all


def _chapter(root, name, files):
    folder = root / name
    folder.mkdir()
    for file, text in files.items():
        (folder / file).write_text(text if isinstance(text, str) else json.dumps(text))


def test_the_table_holds_every_stored_variant_with_its_ratio_and_ceiling(tmp_path):
    speed = {"speedup": 3.126, "declarations": {},
             "optimized_rates": {"ceiling": "copy_gbps", "pct_of_ceiling": 91.6}}
    _chapter(tmp_path, "ch07", {
        "optimized_copy.py": '"""Optimized: float4 loads. More prose."""\n',
        "expectations_h100.json": {"examples": {"copy": speed}},
        "expectations_h200.json": {"examples": {"copy": {**speed, "speedup": 2.5}}},
        "expectations_cpu_intel_xeon.json": {"examples": {"copy": {"speedup": 9.0}}}})
    _chapter(tmp_path, "ch04", {
        "optimized_pp.py": '"""1F1B: each rank holds one micro-batch."""\n',
        "expectations_2x_h200.json": {"examples": {
            "pp": {"speedup": 0.99, "memory_ratio": 2.79, "goal": "memory"},
            "slow": {"speedup": 0.53, "declarations": {"negative_result": "why"}}}}})
    found = rows(tmp_path)
    assert [(r.chapter, r.variant) for r in found] == [("ch04", "pp"), ("ch04", "slow"), ("ch07", "copy")]
    text = table(found)
    assert "| chapter | variant | what it shows | H100 | H200 | 2×H200 |" in text
    assert "| float4 loads | 3.13x · 92% of copy | 2.50x · 92% of copy | – |" in text
    assert "| 2.79x less memory |" in text and "0.53x (negative) |" in text
    assert "9.00x" not in text  # CPU timings are the host's: not on the front page
    assert "3 stored variants in 2 chapters" in text


def test_a_variant_for_hardware_not_lent_is_a_skip_row_until_it_is_stored(tmp_path):
    """`only_on`, in the variant file or a chapter module it imports from, puts an unstored
    variant on the page as a SKIP row; an unstored variant without it stays off the page."""
    speed = {"speedup": 2.0, "declarations": {}}
    _chapter(tmp_path, "ch08", {
        "_tcgen05_common.py": 'class Bench:\n    only_on = "Blackwell (compute capability 10.0)"\n',
        "optimized_tiling.py": '"""Optimized: smem tiles."""\n',
        "optimized_tiling_tcgen05.py": '"""Optimized: TMEM tiles."""\nfrom ch08._tcgen05_common import Bench\n',
        "optimized_tiling_wip.py": '"""Optimized: not measured yet."""\n',
        "expectations_h100.json": {"examples": {"tiling": speed}},
        "expectations_h200.json": {"examples": {"tiling": speed}}})
    readme = tmp_path / "README.md"
    readme.write_text(f"{BEGIN}\n{END}\n")
    text = rebuilt(readme, tmp_path)[1]
    assert ("| tiling_tcgen05 | TMEM tiles | SKIP: needs Blackwell (compute capability 10.0) | SKIP |"
            in text)
    assert "tiling_wip" not in text and "1 more SKIP on the lent GPUs" in text


def test_the_table_is_placed_between_its_markers_and_rewriting_changes_nothing(tmp_path):
    _chapter(tmp_path, "ch07", {"expectations_h100.json": {"examples": {"copy": {"speedup": 2.0}}}})
    readme = tmp_path / "README.md"
    readme.write_text(f"# aisp\n\nIntro.\n\n{BEGIN}\nold table\n{END}\n\n## More\n")
    assert write_all(tmp_path) == [readme]
    text = readme.read_text()
    assert "old table" not in text and "2.00x" in text and text.endswith(f"{END}\n\n## More\n")
    assert write_all(tmp_path) == []  # idempotent
    with pytest.raises(ValueError, match="markers"):
        place("# no markers\n", "table")


def test_labels_and_sentences():
    assert gpu_label("h100") == "H100" and gpu_label("2x_h200") == "2×H200"
    assert gpu_label("sim_moe_ep_2n8g_nvl450_ib50_gemm600") == "modelled"
    assert gpu_label("4x_h100") == "4×H100"
    assert first_sentence(REPO_ROOT / "nope.py") == ""


def test_the_committed_front_page_matches_the_committed_expectations():
    text, updated = rebuilt(REPO_ROOT / "README.md", REPO_ROOT)
    assert updated == text, (
        "README.md's results table differs from the chNN/expectations_*.json files: run "
        "`python -m cli.aisp bench front-page` and commit README.md")


def test_the_cli_checks_and_rewrites_the_table(tmp_path, monkeypatch):
    from typer.testing import CliRunner

    from cli.aisp import app

    _chapter(tmp_path, "ch07", {"expectations_h100.json": {"examples": {"copy": {"speedup": 2.0}}}})
    (tmp_path / "README.md").write_text(f"# aisp\n\n{BEGIN}\n{END}\n")
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))
    runner = CliRunner()
    stale = runner.invoke(app, ["bench", "front-page", "--check"])
    assert stale.exit_code == 1 and "out of date" in stale.output
    assert runner.invoke(app, ["bench", "front-page"]).exit_code == 0
    assert runner.invoke(app, ["bench", "front-page", "--check"]).exit_code == 0
    assert "2.00x" in (tmp_path / "README.md").read_text()


def test_storing_expectations_refreshes_the_table(make_chapter, fake_root, tmp_path, store_noisy):
    from core.discovery import select
    from core.runner import RunOptions, run_suite
    from tests.conftest import vec_chapter_files, vec_pair_file

    chapter = make_chapter("ch93", vec_chapter_files(default=vec_pair_file()))
    (chapter / "expectations_h100.json").write_text(json.dumps(  # a GPU's, stored earlier
        {"schema": 1, "hardware_key": "h100", "examples": {"vec": {"speedup": 1.5}}}))
    (fake_root / "README.md").write_text(f"# fake\n\n{BEGIN}\n{END}\n")
    record = run_suite(select(["ch93"], root=fake_root),
                       RunOptions(iterations=3, warmup=1, output_dir=tmp_path / "runs",
                                  update_expectations=True))
    assert any(u.startswith("ch93/") for u in record.expectation_updates), record.expectation_skips
    assert "| 1.50x |" in (fake_root / "README.md").read_text()  # the table was rebuilt
    assert "README.md (generated tables)" in record.expectation_updates
