"""Counters read as smartctl prints them (#42 item 6): an ATA attribute's raw value decoded
in the raw format smartctl printed it in (hex48, the 16-bit fields of raw16, raw16(raw16),
raw24(raw8), ..), 188's count from its low 16-bit field however printed, and numbers out of
any drive's range a ParseError: "not gradable", never an exception that stops an erase."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.grade.counters import parse_smartctl_grade
from ssdbench.grade.rules import NOT_GRADABLE, NOTE, REUSE, SCRAP, grade_drive
from tests.unit.devices.fixtures import fixture_text

SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
HGST = "smart/smartctl-A-H-j_7.3_HGST-HUS726060ALA640_hdd_failing-pending-realloc.json"
SEAGATE_TEXT = "smart/smartctl-A-text_seagate-hdd_188-packed-printed-raw48.txt"


def doc(rel: str = SATA) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fixture_text(rel))
    return data


def with_raw(ident: int, value: Any, string: Any, name: str = "") -> dict[str, Any]:
    """The 860 EVO's real capture with attribute ``ident``'s raw value set (added with
    ``name`` where the drive does not list it)."""
    obj = doc()
    table = obj["ata_smart_attributes"]["table"]
    found = next((a for a in table if a["id"] == ident), None)
    if found is None:
        found = {"id": ident, "name": name, "value": 100, "worst": 100, "thresh": 0,
                 "when_failed": "", "flags": {"prefailure": False}}
        table.append(found)
    found["raw"] = {"value": value, "string": string}
    return obj


def grade_of(obj: dict[str, Any]) -> tuple[str, list[str]]:
    g = grade_drive(parse_smartctl_grade(json.dumps(obj)))
    return g.grade, [r.text for r in g.reasons]


def test_hex48_reallocated_sectors_are_counted_not_read_as_zero() -> None:
    """'0x0000000001f4' was read as its leading 0: a failing drive graded reuse."""
    obj = with_raw(5, 500, "0x0000000001f4")
    assert parse_smartctl_grade(json.dumps(obj)).reallocated == 500
    assert grade_of(obj) == (SCRAP, ["500 sectors or blocks reallocated"])


def test_command_timeouts_printed_as_raw16_fields_count_the_last_one() -> None:
    """smartctl prints raw16 most significant field first: '0 0 5' is 5 timeouts."""
    obj = with_raw(188, 5, "0 0 5", "Command_Timeout")
    assert parse_smartctl_grade(json.dumps(obj)).command_timeouts == 5
    assert grade_of(obj) == (NOTE, ["5 command timeouts"])


def test_command_timeouts_printed_as_one_48_bit_number_count_the_low_field() -> None:
    """0x000C000C000C printed by the DEFAULT raw48 is the fields 12 12 12: 12 timeouts,
    not 51,540,393,996."""
    obj = with_raw(188, 51_540_393_996, "51540393996", "Command_Timeout")
    assert parse_smartctl_grade(json.dumps(obj)).command_timeouts == 12
    assert grade_of(obj) == (NOTE, ["12 command timeouts"])


def test_the_real_seagate_capture_of_a_packed_188() -> None:
    """A real smartctl -A of a Seagate desktop drive: 188 printed 4295032853 (1 1 21)."""
    rows = {int(line.split()[0]): line.split()[9:] for line in
            fixture_text(SEAGATE_TEXT).splitlines() if line[:3].strip().isdigit()}
    printed = rows[188][0]
    assert printed == "4295032853"
    obj = with_raw(188, int(printed), printed, "Command_Timeout")
    assert parse_smartctl_grade(json.dumps(obj)).command_timeouts == 21


def test_a_real_failing_drive_is_scrap_with_its_own_counts() -> None:
    """libblockdev's HGST HUS726060ALA640: PASSED by its own assessment, failing by its
    counters."""
    inputs = parse_smartctl_grade(fixture_text(HGST))
    assert (inputs.reallocated, inputs.pending, inputs.offline_uncorrectable,
            inputs.power_on_hours, inputs.smart_passed) == (1040, 878, 1272, 43177, True)
    grade = grade_drive(inputs)
    assert grade.grade == SCRAP
    assert [r.counter for r in grade.reasons if r.grade == SCRAP] == [
        "pending_sectors", "offline_uncorrectable", "reallocated"]


def test_reallocated_printed_raw16_raw16_counts_its_low_field() -> None:
    """smartctl's DEFAULT for 5 is raw16(raw16): '8 (1 0)' is 8 reallocated, the fields in
    the brackets are a vendor's (raw value 0x0000_0001_0008)."""
    obj = with_raw(5, (1 << 32) | 8, "8 (1 0)")
    assert parse_smartctl_grade(json.dumps(obj)).reallocated == 8


@pytest.mark.parametrize(("where", "value"), [
    ("power_on_time", {"hours": 10**400}),
    ("power_on_time", {"hours": -1}),
    ("power_on_time", {"hours": float("inf")}),
    ("power_cycle_count", 2**129),
])
def test_top_level_counters_out_of_range_are_parse_errors(where: str, value: Any) -> None:
    """10^400 power-on hours raised OverflowError in the rules (hours / 8760)."""
    obj = doc() | {where: value}
    with pytest.raises(ParseError, match=r"out of range|not a number"):
        parse_smartctl_grade(json.dumps(obj))


@pytest.mark.parametrize(("value", "string"), [
    (5, "5" * 5000),  # was ValueError: int() of more than 4300 digits
    (2**64, str(2**64)),  # wider than smartctl's raw value
    (-1, "-1"),
    ("12", "twelve"),  # not a number
    (500, "0x1f4"),  # hex48 prints 12 digits
    (500, "499"),  # not the value
    (500, "0 0 500 1"),  # no format prints four fields
], ids=["5000-digits", "2^64", "negative", "a-string", "short-hex", "not-the-value",
        "four-fields"])
def test_raw_values_smartctl_never_prints_are_parse_errors(value: Any, string: str) -> None:
    with pytest.raises(ParseError):
        parse_smartctl_grade(json.dumps(with_raw(5, value, string)))


def test_a_counted_attribute_in_a_format_that_holds_no_count_is_a_parse_error() -> None:
    """A count printed as a temperature or a time is not guessed at."""
    with pytest.raises(ParseError, match="holds no count"):
        parse_smartctl_grade(json.dumps(with_raw(197, 10830, "3h+00m+30s")))
    with pytest.raises(ParseError, match="holds no count"):
        parse_smartctl_grade(json.dumps(with_raw(5, (3 << 32) | 36, "36 (0 3 0 0 0)")))


def test_smartctls_exit_status_bit_3_is_its_failing_verdict() -> None:
    """smartctl's own verdict as the anchor: exit status bit 3 (SMART status DISK FAILING)
    where the JSON has no smart_status."""
    obj = doc()
    obj.pop("smart_status")
    obj["smartctl"]["exit_status"] = 0x08
    inputs = parse_smartctl_grade(json.dumps(obj))
    assert inputs.smart_passed is False
    assert grade_of(obj)[0] == SCRAP
    obj["smartctl"]["exit_status"] = 0
    assert parse_smartctl_grade(json.dumps(obj)).smart_passed is None
    assert grade_of(obj)[0] == REUSE


def test_grade_now_makes_a_bad_counter_not_gradable(tmp_path: Any) -> None:
    """The grade stage: a ParseError from the counters is "not gradable" with the reason."""
    from ssdbench.results.layout import RunRecord
    from ssdbench.stages.base import RunContext, Target
    from ssdbench.stages.grade import grade_now
    from ssdbench.stages.params import RunParams
    from ssdbench.system import Host
    from tests.unit.erase.replay import FakeFS, ScriptedRunner

    runner = ScriptedRunner()
    runner.add(["smartctl", "-j", "-x", "/dev/sda"],
               json.dumps(doc() | {"power_on_time": {"hours": 10**400}}))
    record = RunRecord.create(tmp_path, run="grade", kind="grade", drive={"name": "sda"},
                              target={}, params={}, tools={})
    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=tmp_path, drive_name="sda",
                     run_name="grade", target=Target("/dev/sda", "block", "sda", 1 << 30),
                     params=RunParams(), record=record)
    graded = grade_now(ctx)
    assert graded["grade"] == NOT_GRADABLE
    assert "power_on_time.hours" in graded["summary"]
    assert "out of range" in graded["summary"]


def test_an_id_smartctls_database_names_otherwise_is_not_read_as_the_usual_counter() -> None:
    """drivedb.h names 198 Host_Reads_GiB on some SSDs: 5000 GiB read is not 5000 sectors
    uncorrectable (that graded a healthy drive scrap)."""
    obj = with_raw(198, 5000, "5000", "Host_Reads_GiB")
    inputs = parse_smartctl_grade(json.dumps(obj))
    assert inputs.offline_uncorrectable is None
    assert any("attribute 198 is Host_Reads_GiB" in w for w in inputs.warnings)
    assert grade_of(obj)[0] == REUSE
    obj = with_raw(198, 5000, "5000", "Offline_Uncorrectable")
    assert grade_of(obj)[0] == SCRAP
