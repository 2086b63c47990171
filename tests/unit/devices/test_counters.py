"""The drive's own counters (issue #20 item 5) parsed from real captures: QEMU's NVMe SMART
log through nvme-cli 2.3 and smartctl 7.3, QEMU's AHCI disk through smartctl."""

from __future__ import annotations

import pytest

from ssdbench.devices.counters import (
    NVME_DATA_UNIT,
    DriveCounters,
    health_record,
    nvme_temperature_c,
    parse_nvme_smart_log,
    parse_smartctl_counters,
)
from ssdbench.devices.model import ParseError

from .fixtures import BUNDLES, fixture_text

QEMU_BUNDLE = BUNDLES / "qemu-nvme-ahci-usb" / "cmd"


def test_nvme_cli_2_3_smart_log_of_qemu() -> None:
    c = parse_nvme_smart_log(
        fixture_text("nvme/nvme-smart-log-json_v2.3_qemu-nvme_after-8MiB.json"))
    assert c.tool == "nvme smart-log"
    assert c.temperature_c == 50  # 323 K
    assert c.host_writes_bytes == 17 * NVME_DATA_UNIT  # "17": a string in nvme-cli 2.3
    assert c.host_reads_bytes == 1 * NVME_DATA_UNIT
    assert c.nand_writes_bytes is None
    assert (c.power_on_hours, c.power_cycles, c.unsafe_shutdowns, c.media_errors) == (0, 0, 0, 0)
    assert (c.warning_temp_minutes, c.critical_temp_minutes, c.thermal_throttle_events) == (
        0, 0, 0)


def test_smartctl_nvme_log_of_qemu_reads_celsius_from_smartctl() -> None:
    c = parse_smartctl_counters((QEMU_BUNDLE / "smartctl_-j_-x_dev_nvme0n1.out").read_text())
    assert c.temperature_c == 50  # smartctl already gives degrees C
    assert c.host_writes_bytes == 0 and c.host_reads_bytes == 3 * NVME_DATA_UNIT
    assert c.percentage_used == 0 and c.available_spare == 0


def test_smartctl_ata_disk_of_qemu_has_no_write_counter() -> None:
    c = parse_smartctl_counters((QEMU_BUNDLE / "smartctl_-j_-x_dev_sda.out").read_text())
    assert c.temperature_c == 31 and c.power_on_hours == 1 and c.power_cycles == 0
    # no Total_LBAs_Written, no device statistics: unknown, not 0
    assert c.host_writes_bytes is None and c.nand_writes_bytes is None


@pytest.mark.parametrize(("value", "celsius"), [
    (323, 50), ("323", 50), ("309 K", 36), ("36 C", 36), ("36°C (309 K)", 36), (0, None),
    (None, None), ("n/a", None),
])
def test_nvme_temperature_in_any_shape(value: object, celsius: int | None) -> None:
    assert nvme_temperature_c(value) == celsius


def test_not_a_smart_log_is_a_clear_error() -> None:
    with pytest.raises(ParseError, match="nvme smart-log"):
        parse_nvme_smart_log('{"nn": 1}')
    with pytest.raises(ParseError, match="not JSON"):
        parse_nvme_smart_log("Usage: nvme smart-log <device>")


def test_health_record_deltas_and_write_amplification() -> None:
    before = DriveCounters("smartctl", temperature_c=30, host_writes_bytes=1000,
                           nand_writes_bytes=3000, thermal_throttle_events=1)
    after = DriveCounters("smartctl", temperature_c=60, host_writes_bytes=5000,
                          nand_writes_bytes=12000, thermal_throttle_events=4)
    rec = health_record(before, after)
    assert rec["tool"] == "smartctl"
    assert rec["before"]["temperature_c"] == 30 and rec["after"]["temperature_c"] == 60
    d = rec["delta"]
    assert d["host_writes_bytes"] == 4000 and d["nand_writes_bytes"] == 9000
    assert d["write_amplification"] == 2.25 and d["thermal_throttle_events"] == 3
    assert d["media_errors"] is None  # not reported: unknown, never 0
    empty = health_record(None, None)
    assert empty["tool"] is None and empty["delta"]["write_amplification"] is None


def test_ata_temperature_from_the_attributes_when_smartctl_gives_no_summary() -> None:
    """QEMU's AHCI disk: attribute 190's raw value 522125343 (0x1F1F001F) holds 31 deg C in
    its low byte, as temperature.current says."""
    import json
    obj = json.loads((QEMU_BUNDLE / "smartctl_-j_-x_dev_sda.out").read_text())
    del obj["temperature"]
    assert parse_smartctl_counters(json.dumps(obj)).temperature_c == 31


SMART = "smart/"


@pytest.mark.parametrize(("name", "temp", "written_units", "thermal"), [
    # nvme-cli 2.11, real drive: critical_warning an object, counters numbers
    ("nvme-smart-log-json_v2.11_netdata-testdata_30pct-used_critwarn-object.json", 51,
     1928683480, 3),
    # numbers-only shape (1.x / 2.4+)
    ("nvme-smart-log-json_v2.x-early-or-1.x_netdata-testdata_numbers.json", 37, 136157684, 0),
    # the 2.13-2.16 shape from nvme-cli's source (values made up: see its header)
    ("nvme-smart-log-json_v2.13-v2.16_SYNTHESIZED-from-source_default-output.json", 38,
     91540266, 2),
])
def test_nvme_cli_smart_log_shapes(name: str, temp: int, written_units: int,
                                   thermal: int) -> None:
    c = parse_nvme_smart_log(fixture_text(SMART + name))
    assert c.temperature_c == temp
    assert c.host_writes_bytes == written_units * NVME_DATA_UNIT
    assert c.thermal_throttle_events == thermal
    assert c.power_on_hours and c.percentage_used is not None


def test_nvme_cli_2_1_and_2_3_string_counters_and_2_7_capitals() -> None:
    """Shapes from nvme-cli's source history (docs/results-format.md): 2.1 printed counters
    as "4445011.000000", 2.3 with the locale's separators, 2.7 spelled "Temperature"."""
    text = ('{"critical_warning":0,"Temperature":310,"percent_used":2,'
            '"data_units_written":"4445011.000000","data_units_read":"2,752,848"}')
    c = parse_nvme_smart_log(text)
    assert c.temperature_c == 37
    assert c.host_writes_bytes == 4445011 * NVME_DATA_UNIT
    assert c.host_reads_bytes == 2752848 * NVME_DATA_UNIT


def test_smartctl_sata_ssd_host_writes_from_device_statistics() -> None:
    c = parse_smartctl_counters(fixture_text(
        SMART + "smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"))
    assert c.temperature_c == 36 and c.power_on_hours == 14551
    assert c.host_writes_bytes == 64777770148 * 512  # Logical Sectors Written = attr 241


def test_smartctl_drive_not_in_the_database_gets_no_guessed_units() -> None:
    """WD Red SA500 unknown to smartctl 7.3's database: attribute 241 is named
    Total_LBAs_Written but counts GiB; no host writes rather than 89 MB for 8244 hours."""
    c = parse_smartctl_counters(fixture_text(
        SMART + "smartctl-a-j_7.3_wd-red-SA500-4TB_sata-ssd_attr241-not-in-drivedb.json"))
    assert c.temperature_c == 27 and c.power_on_hours == 8244
    assert c.host_writes_bytes is None


def test_smartctl_nvme_samsung_970() -> None:
    c = parse_smartctl_counters(fixture_text(
        SMART + "smartctl-x-j_7.0_samsung-970-EVO-500GB_nvme.json"))
    assert c.host_writes_bytes == 65602088 * NVME_DATA_UNIT
    assert c.media_errors == 7 and c.temperature_c == 35 and c.available_spare == 99
