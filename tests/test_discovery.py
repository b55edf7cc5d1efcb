"""Discovery: pairing rules, orphans, target parsing and its error messages."""
from __future__ import annotations

import pytest

from core.discovery import TargetError, _chapter_name, chapters_root, discover, discover_chapter, select

STUB = "def get_benchmark():\n    return None\n"  # discovery never imports pair files


@pytest.fixture
def copy_root(make_chapter, fake_root):
    """ch95: stems `copy` and `copy_vectorized` share a prefix; plus orphans and helpers.
    ch96: one pair `scale`. ch97: an empty chapter (README only)."""
    make_chapter("ch95", {name: STUB for name in (
        "baseline_copy.py", "optimized_copy.py", "optimized_copy_fast.py",
        "baseline_copy_vectorized.py", "optimized_copy_vectorized.py",
        "optimized_copy_vectorized_wide.py",
        "optimized_copyx.py",            # no baseline `copyx`: `copy` must not claim it
        "optimized_lonely.py",           # no baseline at all
        "baseline_alone.py",             # no optimized file
        "_copy_common.py", "compare.py",  # helpers, not pair files
    )})
    make_chapter("ch96", {"baseline_scale.py": STUB, "optimized_scale.py": STUB})
    make_chapter("ch97", {"README.md": "# planned\n"})
    return fake_root


def _examples(chapter):
    return {p.stem: [(e.name, e.variant, e.optimized.name) for e in p.examples] for p in chapter.pairs}


def test_pairs_variants_and_longest_stem_rule(copy_root):
    chapter = discover_chapter(copy_root / "ch95")
    assert _examples(chapter) == {
        "copy": [("copy", "", "optimized_copy.py"), ("copy_fast", "fast", "optimized_copy_fast.py")],
        "copy_vectorized": [
            ("copy_vectorized", "", "optimized_copy_vectorized.py"),
            ("copy_vectorized_wide", "wide", "optimized_copy_vectorized_wide.py"),
        ],
    }
    pair = next(p for p in chapter.pairs if p.stem == "copy_vectorized")
    assert pair.baseline.name == "baseline_copy_vectorized.py"
    assert pair.id == "ch95:copy_vectorized"
    assert [e.id for e in pair.examples] == ["ch95:copy_vectorized", "ch95:copy_vectorized_wide"]
    assert all(e.baseline == pair.baseline for e in pair.examples)


def test_orphans_are_reported_not_paired(copy_root):
    chapter = discover_chapter(copy_root / "ch95")
    assert sorted(p.name for p in chapter.orphans) == [
        "baseline_alone.py", "optimized_copyx.py", "optimized_lonely.py"]
    assert "alone" not in {p.stem for p in chapter.pairs}


def test_discover_lists_only_chapter_folders_in_order(copy_root):
    (copy_root / "notes").mkdir()
    (copy_root / "ch9").mkdir()
    chapters = discover(copy_root)
    assert [c.name for c in chapters] == ["ch95", "ch96", "ch97"]
    assert chapters[0].number == 95
    assert chapters[2].pairs == []


def test_chapters_root_follows_aisp_root(copy_root, monkeypatch):
    monkeypatch.setenv("AISP_ROOT", str(copy_root))
    assert chapters_root() == copy_root
    assert [c.name for c in discover()] == ["ch95", "ch96", "ch97"]
    assert select(["ch96"])[0][0].id == "ch96:scale"


@pytest.mark.parametrize("token, expected", [
    ("ch07", "ch07"), ("7", "ch07"), ("07", "ch07"), ("CH7", "ch07"), (" ch12 ", "ch12"),
    ("ch95", "ch95"), ("copy", None), ("ch", None), ("ch123", None),
])
def test_chapter_name_forms(token, expected):
    assert _chapter_name(token) == expected


def _ids(selection):
    return [(pair.id, [e.name for e in examples]) for pair, examples in selection]


@pytest.mark.parametrize("token", ["ch95", "95", "095", "CH95"])
def test_whole_chapter_targets(copy_root, token):
    assert _ids(select([token], copy_root)) == [
        ("ch95:copy", ["copy", "copy_fast"]),
        ("ch95:copy_vectorized", ["copy_vectorized", "copy_vectorized_wide"]),
    ]


def test_stem_target_selects_all_its_variants(copy_root):
    assert _ids(select(["ch95:copy"], copy_root)) == [("ch95:copy", ["copy", "copy_fast"])]
    assert _ids(select(["ch95:copy_vectorized"], copy_root)) == [
        ("ch95:copy_vectorized", ["copy_vectorized", "copy_vectorized_wide"])]


def test_variant_target_selects_one_example(copy_root):
    assert _ids(select(["ch95:copy_fast"], copy_root)) == [("ch95:copy", ["copy_fast"])]
    assert _ids(select(["95:copy_vectorized_wide"], copy_root)) == [
        ("ch95:copy_vectorized", ["copy_vectorized_wide"])]


def test_all_comma_lists_order_and_dedup(copy_root):
    everything = _ids(select(["all"], copy_root))
    assert [pid for pid, _ in everything] == ["ch95:copy", "ch95:copy_vectorized", "ch96:scale"]
    # comma lists and repeated targets: chapter order, each pair once, examples merged
    chosen = select(["ch96,ch95:copy_fast", "ch95:copy_fast", " ch95:copy "], copy_root)
    assert [pair.id for pair, _ in chosen] == ["ch95:copy", "ch96:scale"]
    assert sorted(e.name for e in chosen[0][1]) == ["copy", "copy_fast"]
    assert _ids(select(["ch96", "all"], copy_root)) == everything


def test_unknown_chapter_names_token_with_close_matches(copy_root):
    with pytest.raises(TargetError) as err:
        select(["ch99"], copy_root)
    message = str(err.value)
    assert "'ch99'" in message
    assert "did you mean" in message and "ch96" in message


def test_unknown_example_lists_close_matches(copy_root):
    with pytest.raises(TargetError) as err:
        select(["ch95:copy_vectorised"], copy_root)
    message = str(err.value)
    assert "ch95:copy_vectorised" in message
    assert "ch95:copy_vectorized" in message


def test_unknown_target_without_close_match(copy_root):
    with pytest.raises(TargetError) as err:
        select(["zzzzzzzz"], copy_root)
    assert "'zzzzzzzz'" in str(err.value)
    assert "did you mean" not in str(err.value)


def test_bad_token_in_comma_list_is_an_error(copy_root):
    with pytest.raises(TargetError, match="ch95:nope"):
        select(["ch96,ch95:nope"], copy_root)


def test_empty_chapter_points_at_readme(copy_root):
    with pytest.raises(TargetError) as err:
        select(["ch97"], copy_root)
    assert "ch97" in str(err.value) and "README" in str(err.value)


def test_no_targets_is_an_error(copy_root):
    with pytest.raises(TargetError):
        select([], copy_root)


# --- the multi-gpu target -----------------------------------------------------------------

def test_multi_gpu_target_selects_pairs_whose_baseline_needs_several_gpus(make_chapter, fake_root):
    """Declared in the baseline itself or in a chapter module it imports; a pair needing one
    GPU (or declaring none) is left out; the source is read, never imported."""
    two = "from core.benchmark import Requirements\nrequires = Requirements(\n    gpus=2, scales='weak')\n"
    make_chapter("ch94", {
        "_ring_common.py": two,
        "baseline_ring.py": "from ch94._ring_common import Ring\n", "optimized_ring.py": STUB,
        "optimized_ring_fast.py": STUB,
        "baseline_p2p.py": "requires = Requirements(cuda=True, gpus=2)\n", "optimized_p2p.py": STUB,
        "baseline_one.py": "requires = Requirements(gpus=1)\n", "optimized_one.py": STUB,
        "baseline_plain.py": STUB, "optimized_plain.py": STUB,
    })
    chosen = {p.id: [e.name for e in ex] for p, ex in select(["multi-gpu"], root=fake_root)}
    assert chosen == {"ch94:p2p": ["p2p"], "ch94:ring": ["ring", "ring_fast"]}
    assert [p.id for p, _ in select(["MULTIGPU", "ch94:one"], root=fake_root)] == [
        "ch94:one", "ch94:p2p", "ch94:ring"]


def test_multi_gpu_target_with_no_such_pair_is_an_error(copy_root):
    with pytest.raises(TargetError, match="no pair here needs more than one GPU"):
        select(["multi-gpu"], root=copy_root)


def test_multi_gpu_target_agrees_with_every_repo_pairs_imported_declaration():
    """The source reading `multi-gpu` uses against what each baseline declares when imported
    (cli.targets, in a child with no GPU): a pair spelling its GPU count some other way would
    silently drop out of the multi-GPU gate."""
    from cli.targets import describe_files
    from core import REPO_ROOT
    from core.discovery import gpus_needed

    pairs = [p for c in discover(REPO_ROOT) for p in c.pairs]
    declared = describe_files([p.baseline for p in pairs], REPO_ROOT)
    imported = {p.id: declared[p.baseline].get("requires", {}).get("gpus") for p in pairs}
    assert None not in imported.values(), [k for k, v in imported.items() if v is None]
    assert {p.id: gpus_needed(p, REPO_ROOT) for p in pairs} == imported
    assert sum(n > 1 for n in imported.values()) >= 21  # the multi-GPU pairs of 2026-11-28
