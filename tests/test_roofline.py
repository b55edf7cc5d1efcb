"""`tools roofline`: each side of a finished run placed under that run's roofs."""
from __future__ import annotations

import json

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core.benchmark import Workload
from core.roofline import roofline
from tests.test_reports import CEILINGS, make_example, make_record

# CEILINGS: copy 3000 GB/s, fp32 51 TFLOP/s (ridge 17 FLOP/byte), bf16 790 TFLOP/s


def _example(name, base_ms, opt_ms, **workload):
    ex = make_example(name, base_ms, opt_ms)
    w = Workload(**workload)
    ex.baseline.workload = ex.timing.workload = w
    return ex


def test_memory_and_compute_bound_sides_get_the_roof_at_their_intensity(tmp_path):
    low = _example("axpy", 2.0, 1.0, bytes=3e9, flops=1e9, flops_dtype="fp32")  # 0.33 FLOP/byte
    high = _example("gemm", 10.0, 5.0, bytes=1e9, flops=2e11, flops_dtype="fp32")  # 200 FLOP/byte
    found = roofline(make_record([low, high], tmp_path))
    by_key = {(p.example, p.side): p for p in found.points}
    axpy = by_key[("ch07:axpy", "optimized")]
    assert axpy.bound == "memory" and axpy.roof == "copy_gbps"
    assert axpy.attainable == pytest.approx(1e9 / 3e9 * 3000 / 1e3)  # 1 TFLOP/s at this intensity
    assert axpy.achieved == pytest.approx(1e9 / 1e-3 / 1e12, rel=0.02)  # 1 TFLOP/s: at its roof
    assert axpy.pct_of_roof == pytest.approx(100, rel=0.02)
    gemm_base = by_key[("ch07:gemm", "baseline")]
    assert gemm_base.bound == "compute" and gemm_base.roof == "matmul_fp32_tflops"
    assert gemm_base.attainable == pytest.approx(51.0)
    assert gemm_base.pct_of_roof == pytest.approx(100 * 20 / 51, rel=0.02)  # 2e11 in 10 ms
    assert not found.unplaced


def test_bytes_only_and_unit_only_workloads(tmp_path):
    copy = _example("copy", 1.0, 0.5, bytes=1.5e9)
    tokens = _example("serve", 4.0, 2.0, units=1000, unit_name="tokens")
    flops_only = _example("flex", 4.0, 2.0, flops=1e12, flops_dtype="bf16")
    found = roofline(make_record([copy, tokens, flops_only], tmp_path))
    opt = next(p for p in found.points if p.side == "optimized")
    assert (opt.example, opt.unit, opt.intensity) == ("ch07:copy", "GB/s", None)
    assert opt.pct_of_roof == pytest.approx(100.0, rel=0.02)  # 1.5 GB in 0.5 ms = 3000 GB/s
    why = dict(found.unplaced)
    assert set(why) == {"ch07:serve", "ch07:flex"}
    assert "no FLOPs or bytes" in why["ch07:serve"] and "no intensity" in why["ch07:flex"]


def test_failed_examples_and_missing_ceilings_place_nothing(tmp_path):
    failed = make_example("broken", 0, 0, status="failed")
    bf16 = _example("attn", 2.0, 1.0, bytes=1e9, flops=1e12, flops_dtype="tf32")  # no tf32 roof
    found = roofline(make_record([failed, bf16], tmp_path))
    assert found.points == []
    assert found.unplaced == [("ch07:attn", "this run measured no matmul ceiling for tf32")]


def test_cli_prints_the_table_and_writes_the_chart(tmp_path):
    gemm = _example("gemm", 10.0, 5.0, bytes=1e9, flops=2e11, flops_dtype="fp32")
    record = make_record([gemm], tmp_path)
    (tmp_path / "results.json").write_text(json.dumps(record.to_dict()))
    result = CliRunner().invoke(app, ["tools", "roofline", str(tmp_path)])
    assert result.exit_code == 0, result.output
    assert "ch07:gemm" in result.output and "matmul_fp32_tflops" in result.output
    assert (tmp_path / "roofline.png").read_bytes()[:4] == b"\x89PNG"
    as_json = CliRunner().invoke(app, ["tools", "roofline", str(tmp_path), "--format", "json"])
    points = json.loads(as_json.stdout)["points"]
    assert [(p["side"], p["bound"]) for p in points] == [("baseline", "compute"), ("optimized", "compute")]


def test_cli_names_a_directory_that_is_not_a_run(tmp_path):
    result = CliRunner().invoke(app, ["tools", "roofline", str(tmp_path)])
    assert result.exit_code == 2
    assert f"{tmp_path}: no results.json" in result.output
