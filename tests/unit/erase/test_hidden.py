"""HPA / DCO and NVMe hidden capacity, parsed from public captures (tests/data/erase/hidden,
each file's header names its source)."""

from __future__ import annotations

from typing import Any

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.erase.hidden import (
    ata_hidden_areas,
    nvme_hidden_capacity,
    parse_dco_identify,
    parse_hdparm_n,
)
from ssdbench.system import Host

from .replay import DATA, FakeFS, ScriptedRunner


def capture(name: str) -> str:
    """A capture without its '# Source' header."""
    text = (DATA / "hidden" / name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


def test_hdparm_n_enabled_and_disabled() -> None:
    on = parse_hdparm_n(capture("hdparm-N_hpa-enabled_forensicswiki.txt"))
    assert (on.current_sectors, on.native_sectors, on.enabled) == (586070255, 586072368, True)
    assert on.hidden_sectors == 2113
    off = parse_hdparm_n(capture("hdparm-N_hpa-disabled_forensicswiki.txt"))
    assert (off.enabled, off.hidden_sectors) == (False, 0)
    with pytest.raises(ParseError, match="max sectors"):
        parse_hdparm_n("/dev/sdb:\nSG_IO: bad/missing sense data\n")


def test_dco_identify_with_and_without_checksum_line() -> None:
    dco = parse_dco_identify(capture("hdparm-dco-identify_seagate-3T_ubuntuforums-2016.txt"))
    assert (dco.real_max_sectors, dco.revision, dco.checksum_ok) == (5860533168, "0x0002", True)
    old = parse_dco_identify(capture("hdparm-dco-identify_no-checksum-line_forensicswiki.txt"))
    assert (old.real_max_sectors, old.checksum_ok) == (1465149168, False)


def _ata(n_out: str, dco_out: str, seen: int) -> dict[str, object]:
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], n_out)
    runner.add(["hdparm", "--dco-identify", "/dev/sda"], dco_out)
    return ata_hidden_areas(Host(runner, FakeFS()), "/dev/sda", seen)


def test_hpa_enabled_warns_that_the_erase_may_not_cover_the_native_max() -> None:
    out = _ata(capture("hdparm-N_hpa-enabled_forensicswiki.txt"), "", 586070255)
    warnings = out["warnings"]
    assert isinstance(warnings, list) and len(warnings) == 1
    assert "HPA enabled" in warnings[0] and "586072368" in warnings[0]


def test_dco_hiding_more_than_the_native_max_warns() -> None:
    hpa = " max sectors   = 5860531055/5860531055, HPA is disabled\n"  # one cylinder short
    out = _ata(hpa, capture("hdparm-dco-identify_seagate-3T_ubuntuforums-2016.txt"), 5860531055)
    assert any("DCO" in w and "2113 more" in w for w in out["warnings"])  # type: ignore[attr-defined]


def test_no_hpa_answer_is_a_warning_not_silence() -> None:
    out = _ata("/dev/sda:\n", "", 100)
    assert out["hpa"] is None
    assert any("HPA state unknown" in w for w in out["warnings"])  # type: ignore[attr-defined]


NVME: dict[str, Any] = {"nsid": 1, "tnvmcap": 7681501126656, "unvmcap": 1084431360000,
        "namespaces": [{"nsid": 1, "name": "nvme0n1", "size_bytes": 6597069766656},
                       {"nsid": 2, "name": "nvme0n2", "size_bytes": None}]}


def test_nvme_other_namespaces_and_unallocated_capacity() -> None:
    out = nvme_hidden_capacity(NVME, 1)
    assert [ns["nsid"] for ns in out["other_namespaces"]] == [2]
    assert any("nvme0n2" in w for w in out["warnings"])
    assert any("1084431360000 bytes" in w and "unvmcap" in w for w in out["warnings"])
    covered = nvme_hidden_capacity(NVME, 1, sanitize=True)
    assert covered["warnings"] == [] and len(covered["notes"]) == 2
    assert nvme_hidden_capacity({**NVME, "unvmcap": 0, "namespaces": NVME["namespaces"][:1]},
                                1)["warnings"] == []
