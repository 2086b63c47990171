"""SAS/SCSI grading on real smartctl captures (#44): before, every SAS drive was "not
gradable (not graded yet)". The captures in tests/data/fixtures/smart (their headers name
the repository, path and commit) are graded as they are; the failing shapes smartctl's
JSON can take that no public capture shows (a FAILED health status, a failed self-test, a
worn SSD, pending defects) are the real SAS SSD's capture with that one member changed, as
scsiprint.cpp writes it. smartctl's own verdict (smart_status.passed) is checked beside each
grade: where ssdbench disagrees, the test says why."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.devices.smart import parse_smartctl_json
from ssdbench.grade.counters import parse_smartctl_grade
from ssdbench.grade.rules import NOT_GRADABLE, NOTE, REUSE, SCRAP, Thresholds, grade_drive
from ssdbench.grade.scsi import parse_scsi_health
from tests.unit.devices.fixtures import fixture_text

SSD = "smart/smartctl-a-j_7.3_SAMSUNG-MZILT960HBHQ_sas-ssd_healthy.json"
FAILING = ("smart/smartctl-json-scsi_7.4_SEAGATE-ST373453LC_hdd_failing-260-grown-defects-"
           "uncorrected.json")
OLD = "smart/smartctl-json-scsi_7.4_SEAGATE-ST373453LC_hdd_no-defects_91691h.json"
GROWN56 = ("smart/smartctl-a-j_scsi_SEAGATE-ST4000NM0043_sas-hdd_56-grown-defects_"
           "no-smartctl-member.json")
HEALTHY = (
    SSD,
    "smart/smartctl-json-scsi_7.3_HITACHI-H109060SESUN600G_sas-hdd_healthy.json",
    "smart/smartctl-json-scsi_7.4_TOSHIBA-AL15SEB24EQY_sas-hdd_megaraid_healthy.json",
    "smart/smartctl-json-scsi_7.4_HP-MAS3735NC_sas-hdd_no-power-on-time.json",
    "smart/smartctl-a-j_6.7_SEAGATE-ST1200MM0088_sas-hdd_healthy.json",
)


def doc(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fixture_text(rel))
    return data


def graded(obj: dict[str, Any], limits: Thresholds | None = None) -> tuple[str, list[str]]:
    g = grade_drive(parse_smartctl_grade(json.dumps(obj)), limits)
    return g.grade, [r.text for r in g.reasons]


@pytest.mark.parametrize("rel", HEALTHY)
def test_the_real_healthy_sas_drives_are_reuse_as_smartctl_says(rel: str) -> None:
    obj = doc(rel)
    assert obj["smart_status"]["passed"] is True  # smartctl's own verdict: the anchor
    inputs = parse_smartctl_grade(fixture_text(rel))
    assert inputs.available and inputs.transport == "scsi" and inputs.scsi is not None
    assert inputs.scsi.grown_defects == 0 and inputs.scsi.uncorrected == 0
    assert graded(obj) == (REUSE, [])


def test_the_sas_ssds_endurance_and_self_test_are_read() -> None:
    inputs = parse_smartctl_grade(fixture_text(SSD))
    scsi = inputs.scsi
    assert scsi is not None
    assert (inputs.percentage_used, inputs.power_on_hours, scsi.pending_defects,
            scsi.temperature_c, scsi.drive_trip_c, scsi.start_stop_cycles) == (
        0, 3862, 0, 35, 74, 5)
    assert [(c.page, c.uncorrected, c.gigabytes_processed) for c in scsi.error_counters] == [
        ("read", 0, "12.699"), ("write", 0, "6082.745"), ("verify", 0, "0.001")]
    assert inputs.self_test is not None
    assert (inputs.self_test.kind, inputs.self_test.passed, inputs.self_test.status,
            inputs.self_test.power_on_hours) == ("short", True, "Completed", 5)
    snapshot, identity = parse_smartctl_json(fixture_text(SSD))  # the health snapshot too
    assert snapshot.percentage_used == 0 and identity.model == "SAMSUNG MZILT960HBHQ/007"
    failing, _ = parse_smartctl_json(fixture_text(FAILING))
    assert failing.reallocated_sectors == 260  # its grown defect list


def test_the_failing_seagate_is_scrap_where_smartctl_says_passed() -> None:
    obj = doc(FAILING)
    # smartctl's verdict is the informational exceptions page alone: PASSED. The drive's own
    # error counters say 536 blocks could not be recovered and 260 were reallocated.
    assert obj["smart_status"]["passed"] is True
    assert graded(obj) == (SCRAP, [
        "536 uncorrected errors (read 1, write 535): blocks the drive could not recover",
        "260 defects in the grown defect list (blocks reallocated since it left the factory)",
        "102,880 power-on hours (11.7 years)"])
    grade = grade_drive(parse_smartctl_grade(json.dumps(obj)))
    assert [(r.counter, r.value, r.threshold) for r in grade.reasons[:2]] == [
        ("uncorrected_errors", 536, 0), ("grown_defects", 260, 100)]


def test_an_old_sas_disk_with_exceptions_disabled_is_graded_with_notes() -> None:
    obj = doc(OLD)
    assert obj["smart_support"] == {"available": True, "enabled": False}
    assert obj["smart_status"]["passed"] is True
    assert graded(obj) == (NOTE, [
        "the drive's failure-prediction reporting is disabled (informational exceptions, "
        "DEXCPT set; smartctl -s on enables it): its health status may not warn",
        "91,691 power-on hours (10.5 years)"])


def test_a_few_grown_defects_are_a_note_and_many_are_scrap() -> None:
    obj = doc(GROWN56)  # scrutiny cut the smartctl member: not smartctl's JSON as it is
    with pytest.raises(ParseError, match="no smartctl member"):
        parse_smartctl_grade(json.dumps(obj))
    assert parse_scsi_health(obj).grown_defects == 56
    whole = {"smartctl": {"exit_status": 0}} | obj  # the member it lost, exit status 0
    assert graded(whole) == (NOTE, [
        "56 defects in the grown defect list (blocks reallocated since it left the factory)"])
    assert graded(whole, Thresholds(reallocated_scrap=50))[0] == SCRAP


def _ssd(**change: Any) -> dict[str, Any]:
    return doc(SSD) | change


def test_a_failed_health_status_is_scrap_with_the_drives_words() -> None:
    failed = _ssd(smart_status={"passed": False, "scsi": {
        "asc": 0x5D, "ascq": 0x10, "ie_string": "Hardware impending failure general hard "
                                                 "drive failure"}})
    assert graded(failed) == (SCRAP, [
        "the drive's own health status (SCSI informational exceptions) says FAILED: Hardware "
        "impending failure general hard drive failure (asc 0x5d, ascq 0x10)"])
    # a warning smartctl also calls FAILED: a temperature limit is a note, bad media scrap
    hot = _ssd(smart_status={"passed": False, "scsi": {
        "asc": 0x0B, "ascq": 0x01, "ie_string": "Warning - specified temperature exceeded"}})
    assert graded(hot)[0] == NOTE
    scan = _ssd(smart_status={"passed": False, "scsi": {
        "asc": 0x0B, "ascq": 0x05,
        "ie_string": "Warning - background medium scan detected medium error"}})
    assert graded(scan)[0] == SCRAP
    test_trigger = _ssd(smart_status={"passed": False, "scsi": {
        "asc": 0x5D, "ascq": 0xFF, "ie_string": "Failure prediction threshold exceeded (false)"}})
    assert graded(test_trigger)[0] == NOTE
    # no smart_status member but smartctl's exit status bit 3 (DISK FAILING): its verdict
    bare = {k: v for k, v in doc(SSD).items() if k != "smart_status"}
    bare["smartctl"] = bare["smartctl"] | {"exit_status": 8}
    assert graded(bare)[0] == SCRAP


def test_a_missing_health_status_is_said() -> None:
    bare = {k: v for k, v in doc(SSD).items() if k != "smart_status"}
    assert graded(bare) == (NOTE, [
        "the drive reported no health status (SCSI informational exceptions): graded on its "
        "counters alone"])


@pytest.mark.parametrize(("used", "grade"), [(79, REUSE), (80, NOTE), (100, SCRAP),
                                             (255, SCRAP)])
def test_the_endurance_indicator_grades_as_nvme_percentage_used(used: int, grade: str) -> None:
    assert graded(_ssd(scsi_percentage_used_endurance_indicator=used))[0] == grade
    # smartctl 7.5's other name for it
    newer = {k: v for k, v in doc(SSD).items()
             if k != "scsi_percentage_used_endurance_indicator"}
    assert graded(newer | {"endurance_used": {"current_percent": used}})[0] == grade


def test_a_failed_self_test_is_scrap_and_an_aborted_one_no_verdict() -> None:
    failed = _ssd(scsi_self_test_0={
        "code": {"value": 2, "string": "Background long"},
        "result": {"value": 7, "string": "Failed in segment"},
        "failed_segment": {"value": 3, "aka": "self_test_number"},
        "power_on_time": {"hours": 3860, "aka": "accumulated_power_on_hours"}},
        scsi_self_test_1=doc(SSD)["scsi_self_test_0"])
    assert graded(failed) == (SCRAP, [
        "its last self-test (extended) failed: Failed in segment"])
    aborted = _ssd(scsi_self_test_0={"code": {"value": 1, "string": "Background short"},
                                     "result": {"value": 1,
                                                "string": "Aborted (by user command)"}})
    assert graded(aborted) == (REUSE, [])


def test_pending_defects_are_scrap() -> None:
    assert graded(_ssd(scsi_pending_defects={"count": 3})) == (SCRAP, [
        "3 pending defects: blocks the drive could not read, waiting to be reallocated"])


def test_a_sas_drive_without_health_data_is_not_gradable_with_why() -> None:
    health = ("smart_status", "scsi_grown_defect_list", "scsi_error_counter_log",
              "scsi_percentage_used_endurance_indicator", "scsi_pending_defects",
              "scsi_self_test_0")
    bare = {k: v for k, v in doc(SSD).items() if k not in health}
    assert graded(bare) == (NOT_GRADABLE, [
        "a SAS/SCSI drive that gave smartctl no health data (no health status, error counter "
        "log, grown defect list, endurance indicator or self-test log)"])


@pytest.mark.parametrize(("change", "says"), [
    ({"scsi_grown_defect_list": -1}, "scsi_grown_defect_list is -1"),
    ({"scsi_grown_defect_list": 2**32}, "scsi_grown_defect_list is 4294967296: out of range"),
    ({"scsi_percentage_used_endurance_indicator": 256}, "out of range"),
    ({"scsi_error_counter_log": {"read": {"total_uncorrected_errors": 2**64}}},
     "read.total_uncorrected_errors"),
    ({"scsi_error_counter_log": [1, 2]}, "scsi_error_counter_log is a list"),
    ({"scsi_error_counter_log": {"write": "none"}}, "write is not an object"),
    ({"scsi_self_test_0": {"result": {"value": 16}}}, "scsi_self_test_0.result.value"),
    ({"scsi_self_test_0": {"code": {"value": 1}}}, "has no result value"),
    ({"smart_status": {"passed": False, "scsi": {"asc": 93, "ascq": 0,
                                                 "ie_string": "x" * 5000}}}, "5000 characters"),
    ({"smart_status": {"passed": False, "scsi": {"asc": 300}}}, "smart_status.scsi.asc"),
    ({"scsi_pending_defects": 4}, "scsi_pending_defects is a int"),
    ({"temperature": {"current": 300}}, "temperature.current is 300"),
    ({"temperature": {"current": 10**400}}, "temperature.current is huge"),
])
def test_nonsense_in_the_scsi_members_is_a_parse_error(change: dict[str, Any],
                                                       says: str) -> None:
    with pytest.raises(ParseError, match=says.replace("(", r"\(").replace(")", r"\)")):
        parse_smartctl_grade(json.dumps(_ssd(**change)))


def test_an_infinite_or_unknown_scsi_counter_is_never_zero() -> None:
    text = json.dumps(_ssd()).replace('"scsi_grown_defect_list": 0', '"scsi_grown_defect_list": '
                                      "1e400")
    with pytest.raises(ParseError, match="scsi_grown_defect_list is inf"):
        parse_smartctl_grade(text)
    unknown = parse_smartctl_grade(json.dumps(_ssd(scsi_grown_defect_list="56")))
    assert unknown.scsi is not None and unknown.scsi.grown_defects is None
    cold = parse_smartctl_grade(json.dumps(_ssd(temperature={"current": -5})))
    assert cold.scsi is not None and cold.scsi.temperature_c == -5


def test_the_grade_stage_grades_a_sas_drive_and_records_its_log_pages(tmp_path: Any) -> None:
    """The grade stage on the failing Seagate, through smartctl's runner: scrap with its
    reasons, and run.json's grade inputs keep the SCSI log pages it was graded on."""
    from ssdbench.results.layout import RunRecord
    from ssdbench.stages.base import RunContext, Target
    from ssdbench.stages.grade import grade_now
    from ssdbench.stages.params import RunParams
    from ssdbench.system import Host
    from tests.unit.erase.replay import FakeFS, ScriptedRunner

    obj = doc(FAILING)
    runner = ScriptedRunner()
    runner.add(["smartctl", "-j", "-x", "/dev/sdb"], fixture_text(FAILING))
    record = RunRecord.create(tmp_path, run="grade", kind="grade", drive={"name": "sdb"},
                              target={}, params={}, tools={})
    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=tmp_path, drive_name="sdb",
                     run_name="grade", target=Target("/dev/sdb", "block", "sdb",
                                                     obj["user_capacity"]["bytes"]),
                     params=RunParams(), record=record)
    graded = grade_now(ctx)
    assert graded["grade"] == SCRAP
    assert graded["summary"].startswith("scrap: 536 uncorrected errors (read 1, write 535)")
    scsi = json.loads(json.dumps(graded))["inputs"]["scsi"]
    assert (scsi["grown_defects"], scsi["health_passed"]) == (260, True)
    assert [c["uncorrected"] for c in scsi["error_counters"]] == [1, 535]
