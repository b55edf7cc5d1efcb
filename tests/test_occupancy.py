"""`tools occupancy-tuning`: presets, their nvcc flags, the table, and the CPU refusal."""
from __future__ import annotations

import os
from pathlib import Path

import pytest
from typer.testing import CliRunner

from cli.aisp import app
from core import REPO_ROOT
from core.occupancy import (DEFAULT_PRESETS, Preset, PresetError, PresetResult, parse_presets,
                            table_rows)
from tests.conftest import cpu_only


def test_presets_parse_into_block_size_launch_bounds_and_register_cap():
    presets = parse_presets("256, 256x3,512r64")
    assert presets == [Preset(256), Preset(256, 3), Preset(512, 1, 64)]
    assert [p.name for p in presets] == ["256", "256x3", "512r64"]
    assert presets[1].flags() == ["-DAISP_TUNE_BLOCK=256", "-DAISP_TUNE_MIN_BLOCKS=3"]
    assert presets[2].flags()[-1] == "-maxrregcount=64"
    assert len(parse_presets(DEFAULT_PRESETS)) >= 5


@pytest.mark.parametrize("text, why", [
    ("256,abc", "not THREADS"), ("100", "multiple of 32"), ("2048", "multiple of 32"),
    ("256r8", "register cap"), ("256,256", "named twice"), (" , ", "at least one"),
])
def test_bad_presets_say_what_is_wrong(text, why):
    with pytest.raises(PresetError, match=why):
        parse_presets(text)


def test_table_gives_occupancy_and_speedup_over_the_first_preset():
    rows = table_rows([
        PresetResult("512", 512, 80, 0, 1, 2.0, "ok"),
        PresetResult("256x3", 256, 79, 0, 3, 1.6, "ok"),
        PresetResult("256r64", 256, 64, 200, 4, 2.5, "ok"),
        PresetResult("1024", error="CudaLaunchError: too many resources requested"),
    ])
    assert rows[0][5] == "16 (25%)" and rows[0][7] == "1.00x"
    assert rows[1][5] == "24 (38%)" and rows[1][7] == "1.25x"
    assert rows[2][3] == "200 B" and rows[2][7] == "0.80x"
    assert rows[3][-1].startswith("failed: CudaLaunchError")


@pytest.mark.skipif(not any(Path(p, "nvcc").exists() for p in os.environ["PATH"].split(":")),
                    reason="nvcc not installed")
def test_every_preset_of_the_ch08_scan_builds_its_own_library(tmp_path, monkeypatch):
    from core.cuda import build

    monkeypatch.setenv("AISP_BUILD_DIR", str(tmp_path))
    source = REPO_ROOT / "ch08" / "ssm_scan.cu"
    built = {p.name: build(source, (9, 0), extra_flags=p.flags()) for p in parse_presets("512,256x3")}
    assert len(set(built.values())) == 2 and all(path.exists() for path in built.values())


@cpu_only
def test_the_command_refuses_a_machine_without_a_gpu_and_bad_presets():
    result = CliRunner().invoke(app, ["tools", "occupancy-tuning", "ch08:occupancy_tuning"])
    assert result.exit_code == 1 and "needs a CUDA GPU" in result.output
    bad = CliRunner().invoke(app, ["tools", "occupancy-tuning", "ch08:occupancy_tuning",
                                   "--presets", "99"])
    assert bad.exit_code == 2 and "multiple of 32" in bad.output
