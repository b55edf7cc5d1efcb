"""Host<->device link ceilings (core.hardware) and how `hw peak` shows them; no GPU needed."""
from __future__ import annotations

import pytest
import torch
from typer.testing import CliRunner

from cli.aisp import app
from core import hardware
from core.hardware import DATASHEET, HOST_LINK_CEILINGS, host_link_copies
from core.metrics import LINK_CEILINGS


def test_each_link_copy_moves_its_bytes_once_in_its_direction():
    """h2d writes the device buffer from the host buffer, d2h the other way; CPU tensors
    stand in for the three buffers (the copies are plain torch copy_ calls)."""
    n = 1024
    device_buffer, pinned, pageable = torch.empty(n), torch.empty(n), torch.empty(n)
    copies = host_link_copies(device_buffer, pinned, pageable)
    assert tuple(copies) == HOST_LINK_CEILINGS
    for name, copy in copies.items():
        for value, buffer in enumerate((device_buffer, pinned, pageable)):
            buffer.fill_(value)
        source, destination = {
            "h2d_pinned_gbps": (pinned, device_buffer),
            "d2h_pinned_gbps": (device_buffer, pinned),
            "h2d_pageable_gbps": (pageable, device_buffer),
            "d2h_pageable_gbps": (device_buffer, pageable),
        }[name]
        expected = source.clone()
        untouched = next(b for b in (device_buffer, pinned, pageable)
                         if b is not source and b is not destination)
        before = untouched.clone()
        copy()
        assert torch.equal(destination, expected) and torch.equal(source, expected), name
        assert torch.equal(untouched, before), name


def test_the_ceilings_pairs_are_judged_against_are_measured():
    """Workload(link="h2d"/"d2h") is judged against a ceiling measure_ceilings records."""
    assert {LINK_CEILINGS["h2d"], LINK_CEILINGS["d2h"]} <= set(HOST_LINK_CEILINGS)
    for key in ("h100", "h200"):
        assert {name: DATASHEET[key][name] for name in HOST_LINK_CEILINGS} == dict.fromkeys(
            HOST_LINK_CEILINGS, hardware.PCIE_GEN5_X16_GBPS)


FINGERPRINT = {"device": "NVIDIA H100 80GB HBM3", "hardware_key": "h100"}
MEASURED = {"copy_gbps": 3000.0, "h2d_pinned_gbps": 55.0, "d2h_pinned_gbps": 54.0,
            "h2d_pageable_gbps": 20.0, "d2h_pageable_gbps": 18.0, "matmul_bf16_tflops": 700.0}


@pytest.fixture
def fake_gpu(monkeypatch):
    """hw peak on a pretend H100: torch says a GPU is there, the ceilings come from fakes."""
    measured = []
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(hardware, "fingerprint", lambda: dict(FINGERPRINT))
    monkeypatch.setattr(hardware, "store_peaks", lambda info, peaks, *a, **k: "/tmp/peaks.json")

    def measure(full: bool = False) -> dict[str, float]:
        measured.append(full)
        return dict(MEASURED)
    monkeypatch.setattr(hardware, "measure_ceilings", measure)
    return measured


def test_hw_peak_prints_the_link_ceilings_beside_the_pcie_figure(fake_gpu, monkeypatch):
    monkeypatch.setattr(hardware, "cached_peaks", lambda info, gpus=1: {
        "ceilings": MEASURED, "measured": "2026-01-01T00:00:00Z"})
    result = CliRunner().invoke(app, ["hw", "peak"])
    assert result.exit_code == 0, result.output
    rows = {line.split("  ")[0].strip(): line for line in result.output.splitlines()}
    assert "55 GB/s" in rows["h2d pinned"] and "64 GB/s" in rows["h2d pinned"]
    assert "86%" in rows["h2d pinned"]  # 55 of the link's theoretical 64
    assert "20 GB/s" in rows["h2d pageable"] and "matmul bf16" in rows
    assert "theoretical" in result.output and fake_gpu == []  # from the cache


def test_hw_peak_measures_again_when_the_cache_predates_the_link_ceilings(fake_gpu, monkeypatch):
    old = {k: v for k, v in MEASURED.items() if k not in HOST_LINK_CEILINGS}
    monkeypatch.setattr(hardware, "cached_peaks", lambda info, gpus=1: {
        "ceilings": old, "measured": "2025-01-01T00:00:00Z"})
    result = CliRunner().invoke(app, ["hw", "peak"])
    assert result.exit_code == 0, result.output
    assert fake_gpu == [True] and "measured now" in result.output
    assert "d2h pageable" in result.output
