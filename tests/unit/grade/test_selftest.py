"""The self-test parsers (grade/selftest.py) on real smartctl captures (the 860 EVO, the WD
Red SA500, QEMU's ATA disk), and a running test as the same captures show it with the
status byte a drive reports while it runs (ATA8-ACS: 0xF0 + tens of percent left)."""

from __future__ import annotations

import json

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.grade.selftest import parse_smartctl_capabilities
from tests.unit.devices.fixtures import BUNDLES, fixture_text

SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
WD = "smart/smartctl-a-j_7.3_wd-red-SA500-4TB_sata-ssd_attr241-not-in-drivedb.json"


def test_the_drives_own_estimates_and_last_outcome() -> None:
    s = parse_smartctl_capabilities(fixture_text(SATA))
    assert (s.running, s.passed, s.short_minutes, s.extended_minutes, s.supported) == (
        False, True, 2, 85, True)
    wd = parse_smartctl_capabilities(fixture_text(WD))
    assert (wd.short_minutes, wd.extended_minutes) == (2, 10)
    qemu = parse_smartctl_capabilities(
        (BUNDLES / "qemu-nvme-ahci-usb" / "cmd" / "smartctl_-j_-x_dev_sda.out").read_text())
    assert (qemu.supported, qemu.short_minutes, qemu.extended_minutes) == (True, 2, 54)


@pytest.mark.parametrize(("value", "words", "left"), [
    (0xF9, "Self-test routine in progress, 90% remaining", 90),
    (0xF3, "", 30),  # no words and no remaining_percent: from the low nibble
])
def test_a_running_self_test_with_what_is_left(value: int, words: str, left: int) -> None:
    obj = json.loads(fixture_text(SATA))
    obj["ata_smart_data"]["self_test"]["status"] = {"value": value, "string": words}
    s = parse_smartctl_capabilities(json.dumps(obj))
    assert (s.running, s.remaining_percent, s.passed) == (True, left, None)


@pytest.mark.parametrize(("value", "passed"), [(0x79, False), (0x10, None), (0x00, True)])
def test_a_finished_self_test_by_its_status_byte(value: int, passed: bool | None) -> None:
    obj = json.loads(fixture_text(SATA))
    obj["ata_smart_data"]["self_test"]["status"] = {"value": value}
    s = parse_smartctl_capabilities(json.dumps(obj))
    assert (s.running, s.passed) == (False, passed)
    assert s.status  # the drive's words, or the standard's


def test_no_status_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_smartctl_capabilities('{"smartctl": {"exit_status": 4}}')
