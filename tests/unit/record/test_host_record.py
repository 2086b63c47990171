"""The host on the erase record and the certificate (issue #45): the machine's DMI identity
and the drive's controller, from run.json ``host``; its strings are the firmware's
(untrusted): the certificate shows them escaped, through the one display rule."""

from __future__ import annotations

from typing import Any

from ssdbench.devices.host import NOT_READABLE
from ssdbench.record import build_record, render
from tests.hostile import HOSTILE_SERIAL
from tests.unit.record.test_record import nvme_drive, qemu_erase

HOST: dict[str, Any] = {
    "machine": {"sys_vendor": "<b>Evil</b> Corp", "product_name": "Standard PC (Q35 + ICH9, 2009)",
                "product_serial": HOSTILE_SERIAL, "product_uuid": NOT_READABLE,
                "bios_version": "1.16.3", "bios_date": "04/01/2014",
                "board_vendor": "To be filled by O.E.M.", "board_name": None},
    "notes": {"product_uuid": "not readable (root only)", "board_vendor": "placeholder",
              "board_name": "absent"},
    "dmi": "read",
    "controller": {"bus": "pci", "pci_address": "0000:00:05.0", "pci_id": "1b36:0010",
                   "subsystem_id": "1af4:1100", "driver": "nvme"},
}


def _record(host: dict[str, Any] | None) -> dict[str, Any]:
    return build_record(
        drive=nvme_drive(), erase=qemu_erase(), error=None, hidden={},
        tools={"ssdbench": "0.1.0"}, people={}, health_before=None, health_after=None,
        started="2026-11-28T12:00:00Z", finished="2026-11-28T12:01:00Z", duration_s=60,
        record_id="00000000-0000-4000-8000-000000000045", host=host)


def test_record_carries_the_host() -> None:
    r = _record(HOST)
    assert r["host"]["controller"]["pci_id"] == "1b36:0010"
    assert r["host"]["machine"]["sys_vendor"] == "<b>Evil</b> Corp"  # raw in the record
    assert "host" not in _record(None)


def test_certificate_has_a_host_section_escaped() -> None:
    page = render.certificate_html(_record(HOST), record_sha256="0" * 64)
    assert "<h2>Host</h2>" in page
    assert "&lt;b&gt;Evil&lt;/b&gt; Corp Standard PC (Q35 + ICH9, 2009)" in page
    assert "<b>Evil</b>" not in page and "\u202e" not in page
    assert "To be filled by O.E.M. (placeholder)" in page
    assert f"UUID {NOT_READABLE}" in page
    assert "PCI 0000:00:05.0 1b36:0010 (subsystem 1af4:1100), driver nvme" in page


def test_certificate_of_an_older_record_has_no_host_section() -> None:
    assert "<h2>Host</h2>" not in render.certificate_html(_record(None),
                                                          record_sha256="0" * 64)
