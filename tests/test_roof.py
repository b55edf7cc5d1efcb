"""'How close to the roof': each chapter's stored optimized variants against their ceiling,
and the root README's per-chapter summary of the memory-bound ones (core.roof)."""
from __future__ import annotations

import json

from core.front_page import END, regenerated, write_all
from core.roof import BEGIN, SUMMARY, shares, summary_table


def _entry(pct, ceiling="copy_gbps", **extra):
    return {"speedup": 2.0, "optimized_rates": {"ceiling": ceiling, "pct_of_ceiling": pct}, **extra}


def _chapter(root, name, h100, h200=None):
    folder = root / name
    folder.mkdir()
    (folder / "README.md").write_text(f"# {name}\n\nProse.\n\n## Measured\n\nrows\n")
    (folder / "expectations_h100.json").write_text(json.dumps({"examples": h100}))
    if h200 is not None:
        (folder / "expectations_h200.json").write_text(json.dumps({"examples": h200}))
    return folder


def test_shares_per_gpu_with_tags_and_only_speed_results(tmp_path):
    chapter = _chapter(tmp_path, "ch07", {
        "copy": _entry(99.2), "naive": _entry(40.0, declarations={"teaching": True}),
        "gemm": _entry(81.9, "matmul_bf16_tflops"), "memory": _entry(50.0, goal="memory"),
        "units": {"speedup": 1.5, "optimized_rates": {"bound": "units"}}},
        {"copy": _entry(97.6)})
    found = {s.variant: s for s in shares(chapter)}
    assert set(found) == {"copy", "naive", "gemm"}  # no ceiling, or a memory goal: not here
    assert found["copy"].pct == {"h100": 99.2, "h200": 97.6} and found["copy"].memory_bound_on("h200")
    assert found["naive"].tags == "teaching" and found["gemm"].ceiling == "matmul_bf16"
    text = regenerated(tmp_path)[chapter / "README.md"][1]
    assert text.index(BEGIN) < text.index("## Measured")
    assert "| copy | copy | 99% | 98% |  |" in text and "| gemm | matmul_bf16 | 82% | – |  |" in text


def test_a_variant_bound_by_other_ceilings_on_the_two_gpus_says_so(tmp_path):
    chapter = _chapter(tmp_path, "ch06", {"divergence": _entry(86.0)},
                       {"divergence": _entry(84.0, "matmul_fp32_tflops")})
    found, = shares(chapter)
    assert found.ceiling == "copy (H100), matmul_fp32 (H200)"
    assert "| [ch06](ch06/README.md#how-close-to-the-roof) | 86% · 86% (divergence) of 1 | – |" \
        in summary_table(tmp_path)  # only where copy bounds it


def test_the_summary_takes_untagged_memory_bound_variants_only(tmp_path):
    _chapter(tmp_path, "ch07", {"a": _entry(99.0), "b": _entry(79.0), "c": _entry(90.0),
                                "naive": _entry(10.0, declarations={"teaching": True}),
                                "slow": _entry(5.0, declarations={"negative_result": "why"}),
                                "gemm": _entry(20.0, "matmul_bf16_tflops")},
             {"a": _entry(97.0)})
    _chapter(tmp_path, "ch01", {"gemm": _entry(17.0, "matmul_fp32_tflops")})  # no memory-bound row
    text = summary_table(tmp_path)
    assert "| [ch07](ch07/README.md#how-close-to-the-roof) | 90% · 79% (b) of 3 | 97% · 97% (a) of 1 |" in text
    assert "ch01" not in text


def test_the_root_summary_goes_between_its_markers_and_rewrites_idempotently(tmp_path):
    _chapter(tmp_path, "ch07", {"a": _entry(99.0)})
    readme = tmp_path / "README.md"
    readme.write_text(f"# aisp\n\n{SUMMARY}\nold\n{END}\n\n## More\n")
    assert readme in write_all(tmp_path)
    assert "old" not in readme.read_text() and "99% · 99% (a) of 1" in readme.read_text()
    assert write_all(tmp_path) == []
    readme.write_text("# no markers\n")
    assert regenerated(tmp_path)[readme] == ("# no markers\n",) * 2  # placed where markers are
