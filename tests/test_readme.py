"""`bench readme`: measured tables in chapter READMEs come from runs, one block per GPU model."""
from __future__ import annotations

import json
from pathlib import Path

from typer.testing import CliRunner

from cli.aisp import app
from core import REPO_ROOT
from core.readme import END, begin, place, write_tables
from core.record import RunRecord
from tests.test_honest_headlines import pair_result, side

PROSE = "# ch90\n\n## Pairs\n\nHand-written text.\n\n## Measured\n\n### Reading the numbers\n\nKept.\n"


def record(run_id: str, key: str, commit: str, speedup_ms: float, name: str = "x") -> RunRecord:
    result = pair_result(side(2.0), side(speedup_ms), (1.9, 2.1), name=name)
    fp = {"device": f"GPU {key}", "hardware_key": key, "git_commit": commit, "sm_count": 132}
    return RunRecord(Path("/runs") / run_id, fp, {"copy_gbps": 3000.0}, [result],
                     options={"update_expectations": True})


def test_blocks_are_added_then_replaced_and_prose_is_kept(tmp_path):
    (tmp_path / "ch90").mkdir()
    readme = tmp_path / "ch90" / "README.md"
    readme.write_text(PROSE)
    write_tables([record("20261123-010000", "h100", "aaa1111", 1.0)], tmp_path)
    first = readme.read_text()
    assert begin("h100") in first and END in first and "Hand-written text." in first
    assert first.index(begin("h100")) > first.index("## Measured")
    assert "at commit aaa1111" in first and "on 2026-11-23" in first and "2.00x" in first
    # a later full run and a re-run of one pair on the same GPU: the re-run's row wins
    write_tables([record("20261124-010000", "h100", "bbb2222", 1.0, "x"),
                  record("20261124-020000", "h100", "ccc3333", 0.5, "x")], tmp_path)
    second = readme.read_text()
    assert second.count(begin("h100")) == 1 and "aaa1111" not in second
    assert "4.00x" in second and "2.00x" not in second
    assert "ccc3333" in second and "bbb2222" not in second  # contributes no row any more
    assert "Kept." in second and "Hand-written text." in second


def test_a_readme_without_a_measured_section_gets_one():
    text = place("# ch90\n\nIntro.\n", "h200", f"{begin('h200')}\ntable\n{END}")
    assert text.startswith("# ch90\n\nIntro.") and "## Measured" in text and "table" in text


def test_cli_readme_names_a_bad_run_and_exits_2(tmp_path):
    result = CliRunner().invoke(app, ["bench", "readme", str(tmp_path / "nope")])
    assert result.exit_code == 2 and "no results.json" in result.output


def test_cli_readme_writes_from_a_results_file(tmp_path, monkeypatch):
    (tmp_path / "ch90").mkdir()
    (tmp_path / "ch90" / "README.md").write_text(PROSE)
    run = tmp_path / "run"
    run.mkdir()
    (run / "results.json").write_text(json.dumps(record("20261123-010000", "h200", "ddd4444", 1.0).to_dict()))
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))
    result = CliRunner().invoke(app, ["bench", "readme", str(run)])
    assert result.exit_code == 0, result.output
    assert begin("h200") in (tmp_path / "ch90" / "README.md").read_text()


def test_only_the_chapters_asked_for_are_rewritten(tmp_path):
    for chapter in ("ch90", "ch91"):
        (tmp_path / chapter).mkdir()
        (tmp_path / chapter / "README.md").write_text(PROSE.replace("ch90", chapter))
    run = record("20261123-010000", "h100", "aaa1111", 1.0)
    other = record("20261123-010000", "h100", "aaa1111", 1.0, name="y").pairs[0]
    other.pair, other.examples[0].id = "ch91:y", "ch91:y"
    run.pairs.append(other)
    assert write_tables([run], tmp_path, {"ch90"}) == [tmp_path / "ch90" / "README.md"]
    assert begin("h100") in (tmp_path / "ch90" / "README.md").read_text()
    assert begin("h100") not in (tmp_path / "ch91" / "README.md").read_text()
    assert len(write_tables([run], tmp_path)) == 2  # without a filter: every chapter covered


def test_cpu_and_smoke_runs_are_not_written_into_readmes(tmp_path, monkeypatch):
    (tmp_path / "ch90").mkdir()
    (tmp_path / "ch90" / "README.md").write_text(PROSE)
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))
    cpu = record("20261123-010000", "cpu_intel_xeon", "eee5555", 1.0)
    cpu.fingerprint.update(device="cpu", sm_count=None)
    smoke = record("20261123-020000", "h100", "fff6666", 1.0)
    smoke.options["mode"] = "smoke"
    paths = []
    for name, run in (("cpu", cpu), ("smoke", smoke)):
        (tmp_path / name).mkdir()
        (tmp_path / name / "results.json").write_text(json.dumps(run.to_dict()))
        paths.append(str(tmp_path / name))
    result = CliRunner().invoke(app, ["bench", "readme", *paths])
    assert result.exit_code == 2, result.output
    assert "a CPU run" in result.output and "a smoke run" in result.output
    assert (tmp_path / "ch90" / "README.md").read_text() == PROSE  # no "(? SMs, driver ?" block


def test_keep_others_replaces_only_the_re_measured_pairs_rows(tmp_path):
    (tmp_path / "ch90").mkdir()
    readme = tmp_path / "ch90" / "README.md"
    readme.write_text(PROSE)
    full = record("20261123-010000", "h100", "aaa1111", 1.0, "x")
    full.pairs.append(pair_result(side(3.0), side(1.0), (2.9, 3.1), name="y"))
    full.pairs[-1].examples[0].teaching = False
    write_tables([full], tmp_path)
    assert "3.00x" in readme.read_text()
    # one pair re-measured: without --keep-others the block would shrink to it
    write_tables([record("20261128-010000", "h100", "bbb2222", 0.5, "x")], tmp_path, keep_others=True)
    text = readme.read_text()
    assert "4.00x" in text and "2.00x" not in text and "3.00x" in text  # y kept, x replaced
    assert "1 row from `bench run --update-expectations` on 2026-11-28 at commit bbb2222" in text
    assert "earlier rows from `bench run --update-expectations` on 2026-11-23 at commit aaa1111" in text
    assert text.index("ch90:x") < text.index("ch90:y")  # one table, sorted by pair
    assert text.count(begin("h100")) == 1 and "Kept." in text


def test_forget_drops_a_changed_pairs_rows_from_blocks_without_a_run(tmp_path, monkeypatch):
    (tmp_path / "ch90").mkdir()
    readme = tmp_path / "ch90" / "README.md"
    readme.write_text(PROSE)
    both = record("20261123-010000", "h200", "aaa1111", 1.0, "x")
    both.pairs.append(pair_result(side(3.0), side(1.0), (2.9, 3.1), name="y"))
    write_tables([both], tmp_path)
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))
    result = CliRunner().invoke(app, ["bench", "readme", "--forget", "ch90:x"])
    assert result.exit_code == 0, result.output
    text = readme.read_text()
    assert "ch90:x" not in text and "ch90:y" in text and "3.00x" in text
    assert "earlier rows from" in text and "2 rows from" not in text  # the count no longer holds
    bad = CliRunner().invoke(app, ["bench", "readme", "--forget", "triton_norm"])
    assert bad.exit_code == 2 and "ch14:triton_norm" in bad.output
    assert CliRunner().invoke(app, ["bench", "readme"]).exit_code == 2


def test_forget_with_a_block_key_drops_the_rows_of_that_block_only(tmp_path, monkeypatch):
    """A variant that no longer runs at one GPU count (ch04 symmetric_memory's one-shot side
    needs 4 GPUs since 2026-11-28) loses its rows in that count's block, not in the others."""
    (tmp_path / "ch90").mkdir()
    readme = tmp_path / "ch90" / "README.md"
    readme.write_text(PROSE)
    write_tables([record("20261123-010000", "h200", "aaa1111", 1.0, "x"),
                  record("20261123-020000", "h100", "aaa1111", 0.5, "x")], tmp_path)
    assert readme.read_text().count("ch90:x") == 2
    monkeypatch.setenv("AISP_ROOT", str(tmp_path))
    result = CliRunner().invoke(app, ["bench", "readme", "--forget", "ch90:x@h200"])
    assert result.exit_code == 0, result.output
    text = readme.read_text()
    h200 = text[text.index(begin("h200")):]
    h100 = text[text.index(begin("h100")):]
    assert "ch90:x" not in h200[:h200.index("<!-- aisp:end -->")]
    assert "ch90:x" in h100[:h100.index("<!-- aisp:end -->")] and "4.00x" in text
    bad = CliRunner().invoke(app, ["bench", "readme", "--forget", "ch90:x@"])
    assert bad.exit_code == 2 and "@2x_h200" in bad.output


def test_no_chapter_table_shows_the_old_relative_error_format():
    """`ok (3e+11 rel)` (the largest relative error, blown up by outputs near zero) read as a
    failure; the kept rows were rewritten to `ok (exact)` or `ok` on 2026-11-28."""
    committed = "".join(p.read_text() for p in REPO_ROOT.glob("ch*/README.md"))
    assert " rel) |" not in committed


def test_every_committed_table_is_what_bench_readme_writes():
    """Each measured block of every chapter README, parsed and rendered again the way `bench
    readme` renders blocks, comes out byte for byte as committed: no hand edit, no stale
    format, no paragraph glued into a table."""
    import re

    from core.readme import read_block, render

    for readme in sorted(REPO_ROOT.glob("ch*/README.md")):
        text = readme.read_text()
        for key in re.findall(r"<!-- aisp:measured (\S+) -->", text):
            body = text.split(begin(key), 1)[1].split(END, 1)[0]
            block = read_block(text, key)
            provenance = [line for line in body.strip().splitlines()
                          if re.match(r"^(\d+ rows? from|earlier rows from|Rows not re-measured)", line)]
            again = render(key, block.device, provenance, block.header, block.rows, block.notes)
            assert begin(key) + body + END == again, f"{readme} block {key} is not as bench readme writes it"
