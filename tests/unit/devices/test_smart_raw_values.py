"""ATA attribute raw values decoded as smartctl prints them (devices/smart.py), checked on
every attribute of the real smartctl captures in tests/data, and numbers out of any drive's
range as the parsers' own ParseError (#42 item 6): the health snapshot, the counters read
around a run, and hdparm -I's sector count."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.counters import parse_nvme_smart_log, parse_smartctl_counters
from ssdbench.devices.hdparm import parse_hdparm_identify
from ssdbench.devices.model import ParseError
from ssdbench.devices.smart import decode_raw, parse_smartctl_json, render_raw
from tests.unit.devices.fixtures import BUNDLES, FIXTURES, fixture_text

SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
MULTI = "smart/smartctl-jA_7.0_sat-hdd_multi-field-raw-values.json"
SEAGATE_TEXT = "smart/smartctl-A-text_seagate-hdd_188-packed-printed-raw48.txt"
WD_RED = "hdparm/hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt"


def _captures() -> list[tuple[str, dict[str, Any]]]:
    """Every real smartctl JSON capture with an attribute table: the fixtures and the
    bundles' recorded answers."""
    found = []
    for path in sorted((FIXTURES / "smart").glob("smartctl-*.json")):
        found.append((path.name, json.loads(fixture_text(f"smart/{path.name}"))))
    for path in sorted(BUNDLES.glob("*/cmd/smartctl_-j_-x_*.out")):
        found.append((str(path.relative_to(BUNDLES)), json.loads(path.read_text())))
    return [(n, o) for n, o in found if (o.get("ata_smart_attributes") or {}).get("table")]


def test_every_attribute_of_every_real_capture_is_printed_as_smartctl_prints_it() -> None:
    """The decoder's port of smartctl's formatter gives back each real raw.string from its
    raw.value, for every attribute of every capture (HGST, Samsung, WD, QEMU, simdrive,
    and multi-field raw values: raw24(raw8), raw16(raw16), raw16(avg16), tempminmax)."""
    formats: set[str] = set()
    captures = _captures()
    assert len(captures) >= 5
    for name, obj in captures:
        for attr in obj["ata_smart_attributes"]["table"]:
            raw = attr["raw"]
            got = decode_raw(attr["id"], attr["name"], raw["value"], raw["string"])
            assert render_raw(got.format, got.value) == raw["string"], (name, attr["id"])
            formats.add(got.format)
    assert {"raw48", "raw24(raw8)", "raw16(raw16)", "raw16(avg16)", "tempminmax"} <= formats


@pytest.mark.parametrize(("ident", "value", "fmt", "count"), [
    (9, 167031278144165, "raw24(raw8)", 2725),  # '2725 (151 234 0)'
    (196, 53416508262463, "raw16(raw16)", 2111),  # '2111 (12437 0)'
    (194, 77309411357, "tempminmax", None),  # '29 (0 18 0 0 0)'
])
def test_the_real_multi_field_values(ident: int, value: int, fmt: str,
                                     count: int | None) -> None:
    obj = json.loads(fixture_text(MULTI))
    attr = next(a for a in obj["ata_smart_attributes"]["table"] if a["id"] == ident)
    got = decode_raw(ident, attr["name"], attr["raw"]["value"], attr["raw"]["string"])
    assert (got.value, got.format, got.count) == (value, fmt, count)


def test_the_real_seagate_text_rows_read_back_to_their_fields() -> None:
    """smartctl's text rows of a real Seagate: the raw value each row's fields make is
    printed back the same, in the format that holds them."""
    rows = {int(line.split()[0]): " ".join(line.split()[9:]) for line in
            fixture_text(SEAGATE_TEXT).splitlines() if line[:3].strip().isdigit()}
    cases = {188: (4295032853, "raw48", 21),  # 1 1 21: 21 timeouts in the low word
             240: (30159 | 92 << 32 | 71 << 40, "raw24(raw8)", 30159),
             194: (36 | 3 << 32, "tempminmax", None),
             190: (36 | 30 << 16 | 48 << 24, "tempminmax", None)}
    for ident, (value, fmt, count) in cases.items():
        got = decode_raw(ident, "", value, rows[ident])
        assert (got.format, got.count) == (fmt, count), (ident, rows[ident])


@pytest.mark.parametrize(("value", "string", "fmt", "count"), [
    (500, "0x0000000001f4", "hex48", 500),
    (5, "0 0 5", "raw16", 5),
    (0x0003_0002_0001, "3 2 1", "raw16", 1),
    (0x0000_0100_0007, "1/7", "raw24/raw24", 1),  # smartctl prints "errors/operations"
    (5 << 32 | 7, "5/7", "raw24/raw32", 5),
    (0x0102_0304_0506, "1 2 3 4 5 6", "raw8", None),
    (7325, "2h+02m+05s", "sec2hour", None),
    (1234 << 32 | 9999, "9999h+00m+01.234s", "msec24hour32", None),
    (365, "36.5", "temp10x", None),
])
def test_each_format_smartctl_prints(value: int, string: str, fmt: str,
                                     count: int | None) -> None:
    got = decode_raw(5, "Reallocated_Sector_Ct", value, string)
    assert (got.format, got.count) == (fmt, count)


def test_188_counts_its_low_16_bits_however_printed() -> None:
    assert decode_raw(188, "Command_Timeout", 51_540_393_996, "51540393996").count == 12
    assert decode_raw(188, "Command_Timeout", 51_540_393_996, "12 12 12").count == 12
    assert decode_raw(187, "Reported_Uncorrect", 51_540_393_996, "51540393996").count == \
        51_540_393_996  # 187's raw48 is one count


def test_the_health_snapshot_reads_attribute_5_as_smartctl_prints_it() -> None:
    obj = json.loads(fixture_text(SATA))
    realloc = next(a for a in obj["ata_smart_attributes"]["table"] if a["id"] == 5)
    realloc["raw"] = {"value": 1 << 32 | 8, "string": "8 (1 0)"}  # raw16(raw16)
    assert parse_smartctl_json(json.dumps(obj))[0].reallocated_sectors == 8  # not 4294967304
    realloc["raw"] = {"value": 500, "string": "0x0000000001f4"}
    assert parse_smartctl_json(json.dumps(obj))[0].reallocated_sectors == 500


@pytest.mark.parametrize("change", [
    {"power_on_time": {"hours": 10**400}},
    {"power_on_time": {"hours": -3}},
    {"nvme_smart_health_information_log": {"media_errors": 2**128}},
], ids=["hours-10^400", "negative-hours", "media-errors-over-128-bits"])
def test_out_of_range_counters_are_the_parsers_errors(change: dict[str, Any]) -> None:
    text = json.dumps(json.loads(fixture_text(SATA)) | change)
    with pytest.raises(ParseError, match="out of range"):
        parse_smartctl_json(text)
    with pytest.raises(ParseError, match="out of range"):
        parse_smartctl_counters(text)


def test_a_5000_digit_counter_string_is_a_parse_error() -> None:
    """nvme-cli 2.2 prints 128-bit counters as strings of digits; 5000 of them raised
    ValueError (int()'s 4300-digit limit)."""
    with pytest.raises(ParseError, match="data_units_written"):
        parse_nvme_smart_log(json.dumps({"data_units_written": "9" * 5000,
                                         "temperature": 310}))
    with pytest.raises(ParseError, match="power_on_hours"):
        parse_nvme_smart_log(json.dumps({"temperature": 310, "power_on_hours": "1" * 60}))


def test_a_counter_attribute_with_a_bad_raw_value_is_a_parse_error() -> None:
    obj = json.loads(fixture_text(SATA))
    lbas = next(a for a in obj["ata_smart_attributes"]["table"] if a["id"] == 241)
    lbas["raw"] = {"value": 64777770148, "string": "6" * 5000}
    with pytest.raises(ParseError, match="241"):
        parse_smartctl_counters(json.dumps(obj))


def test_hdparm_sector_count_of_5000_digits_is_the_parsers_error() -> None:
    text = (FIXTURES / WD_RED).read_text()
    line = next(ln for ln in text.splitlines() if "LBA48  user addressable sectors" in ln)
    huge = text.replace(line, line.split(":")[0] + ":  " + "7" * 5000)
    with pytest.raises(ParseError, match="sectors"):
        parse_hdparm_identify(huge)
    wide = text.replace(line, line.split(":")[0] + ":  " + str(2**48))
    with pytest.raises(ParseError, match="48 bits"):
        parse_hdparm_identify(wide)
    assert parse_hdparm_identify(text).sectors == 7814037168  # the real one still reads


def test_the_health_stage_records_an_out_of_range_counter_as_unavailable(
        tmp_path: Path) -> None:
    from ssdbench.results.layout import RunRecord
    from ssdbench.stages.base import RunContext, StageNotAvailable, Target
    from ssdbench.stages.health import HealthStage
    from ssdbench.stages.params import RunParams
    from ssdbench.system import Host
    from tests.unit.erase.replay import FakeFS, ScriptedRunner

    runner = ScriptedRunner()
    runner.add(["smartctl", "-j", "-x", "/dev/sda"], json.dumps(
        json.loads(fixture_text(SATA)) | {"power_on_time": {"hours": 10**400}}))
    record = RunRecord.create(tmp_path, run="d", kind="diagnose", drive={"name": "sda"},
                              target={}, params={}, tools={})
    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=tmp_path, drive_name="sda",
                     run_name="d", target=Target("/dev/sda", "block", "sda", 1 << 30),
                     params=RunParams(), record=record)
    with pytest.raises(StageNotAvailable):  # "not available", not failed (#45)
        HealthStage("before").execute(ctx)
    snap = record.data["health"]["before"]
    assert snap["available"] is False and "out of range" in snap["reason"]
