"""hw info's link matrix from NVML answers (a fake pynvml: no GPU needed)."""
from __future__ import annotations

import sys
import types

from core.multigpu import _bus, _link, _ranges


class NVMLError(Exception):
    pass


def fake_pynvml(remote: str, links: int, p2p_ok: bool) -> types.ModuleType:
    nvml = types.ModuleType("pynvml")
    nvml.NVMLError = NVMLError
    nvml.NVML_P2P_CAPS_INDEX_NVLINK, nvml.NVML_P2P_STATUS_OK = 3, 0
    nvml.nvmlDeviceGetPciInfo = lambda h: types.SimpleNamespace(busId=f"00000000:{h}:00.0".encode())

    def state(handle, link):
        if link >= links:
            raise NVMLError("no such link")
        return 1
    nvml.nvmlDeviceGetNvLinkState = state
    nvml.nvmlDeviceGetNvLinkRemotePciInfo = lambda h, link: types.SimpleNamespace(busId=remote)
    nvml.nvmlDeviceGetP2PStatus = lambda a, b, index: 0 if p2p_ok else 2
    nvml.nvmlDeviceGetTopologyCommonAncestor = lambda a, b: 30
    return nvml


def test_links_counted_by_remote_bus_id(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml("0000:19:00.0", 18, True))
    assert _link(["07", "19"], 0, 1) == "NV18"


def test_masked_remote_ids_fall_back_to_nvlink_p2p_and_active_links(monkeypatch):
    # what the lent 2xH200 VM answers: every remote id FFFFFFFF:FF:FF.0, NVLink P2P OK
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml("FFFFFFFF:FF:FF.0", 18, True))
    assert _link(["07", "19"], 0, 1) == "NV18"


def test_no_nvlink_reports_the_pcie_path(monkeypatch):
    monkeypatch.setitem(sys.modules, "pynvml", fake_pynvml("FFFFFFFF:FF:FF.0", 0, False))
    assert _link(["07", "19"], 0, 1) == "PHB"


def test_bus_ids_and_cpu_ranges():
    assert _bus(b"00000000:19:00.0") == _bus("0000:19:00.0") == "19:00.0"
    assert _ranges([0, 1, 2, 3, 8, 9, 12]) == "0-3,8-9,12"
