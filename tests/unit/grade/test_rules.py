"""Grading on the real smartctl captures in tests/data (#32 item 2): the healthy drives get
reuse, the 970 EVO's media errors a note; the worn and failing shapes are the same real
captures with one counter changed, as a failing drive reports it."""

from __future__ import annotations

import json
from typing import Any

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.grade.counters import parse_smartctl_grade
from ssdbench.grade.rules import NOT_GRADABLE, NOTE, REUSE, SCRAP, Thresholds, grade_drive
from tests.unit.devices.fixtures import BUNDLES, fixture_text

SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
NVME = "smart/smartctl-x-j_7.0_samsung-970-EVO-500GB_nvme.json"
WD = "smart/smartctl-a-j_7.3_wd-red-SA500-4TB_sata-ssd_attr241-not-in-drivedb.json"
QEMU = BUNDLES / "qemu-nvme-ahci-usb" / "cmd"


def doc(rel: str) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(fixture_text(rel))
    return data


def graded(obj: dict[str, Any], limits: Thresholds | None = None) -> tuple[str, list[str]]:
    g = grade_drive(parse_smartctl_grade(json.dumps(obj)), limits)
    return g.grade, [r.text for r in g.reasons]


def attr(obj: dict[str, Any], ident: int) -> dict[str, Any]:
    found: dict[str, Any] = next(a for a in obj["ata_smart_attributes"]["table"]
                                 if a["id"] == ident)
    return found


def test_the_real_healthy_drives_are_reuse() -> None:
    sata = parse_smartctl_grade(fixture_text(SATA))
    assert (sata.transport, sata.reallocated, sata.crc_errors, sata.percentage_used,
            sata.life_left_percent, sata.life_attribute) == (
        "ata", 0, 0, 19, 81, "Wear_Leveling_Count")
    assert sata.self_test is not None and sata.self_test.passed is True
    assert sata.self_test.kind == "short"
    assert grade_drive(sata).grade == REUSE
    assert graded(doc(WD)) == (REUSE, [])  # 233 Media_Wearout_Indicator 100: none used
    nvme_qemu = json.loads((QEMU / "smartctl_-j_-x_dev_nvme0n1.out").read_text())
    assert graded(nvme_qemu) == (REUSE, [])


def test_the_970_evos_media_errors_are_a_note_or_scrap_by_the_threshold() -> None:
    assert graded(doc(NVME)) == (NOTE, ["7 media and data integrity errors (unrecovered)"])
    assert graded(doc(NVME), Thresholds(media_errors_scrap=5))[0] == SCRAP


def test_qemus_ata_disk_has_hours_and_no_power_cycle() -> None:
    ata = json.loads((QEMU / "smartctl_-j_-x_dev_sda.out").read_text())
    inputs = parse_smartctl_grade(json.dumps(ata))  # exit status 4: some -x logs failed
    assert inputs.available and inputs.warnings[0].startswith("smartctl exit status 4")
    assert graded(ata) == (NOTE, ["history may have been reset: 1 power-on hours and 0 "
                                  "power cycles"])


def test_a_drive_smartctl_cannot_read_is_not_gradable_never_a_pass() -> None:
    tcmu = (BUNDLES / "qemu-tcmu-ata-emu" / "cmd" / "smartctl_-j_-x_dev_sda.out").read_text()
    # the target's emulated ATA disk behind a SCSI path: smartctl reads no SMART there
    assert graded(json.loads(tcmu)) == (NOT_GRADABLE, [
        "smartctl gave no SMART attributes and no NVMe health log (a USB bridge without ATA "
        "pass-through?)"])
    unopened = doc(SATA)
    unopened["smartctl"] |= {"exit_status": 2, "messages": [
        {"string": "/dev/sdz: No such device", "severity": "error"}]}
    assert graded(unopened) == (NOT_GRADABLE, [
        "smartctl could not read the drive: /dev/sdz: No such device"])
    no_smart = doc(SATA) | {"smart_support": {"available": False}}
    assert graded(no_smart) == (NOT_GRADABLE, ["the drive has no SMART"])
    bridge = {k: v for k, v in doc(SATA).items()
              if k not in ("ata_smart_attributes", "nvme_smart_health_information_log")}
    assert graded(bridge)[0] == NOT_GRADABLE
    with pytest.raises(ParseError):
        parse_smartctl_grade('{"model_name": "x"}')


@pytest.mark.parametrize(("ident", "raw", "grade", "words"), [
    (197, 8, SCRAP, "8 sectors pending reallocation"),
    (198, 1, SCRAP, "1 sectors uncorrectable in the offline scan"),
    (5, 12, NOTE, "12 sectors or blocks reallocated"),
    (5, 150, SCRAP, "150 sectors or blocks reallocated"),
    (187, 3, NOTE, "3 uncorrectable errors reported to the host"),
    (199, 41, NOTE, "41 interface CRC errors: a cable or connector fault, not the drive's"),
])
def test_ata_counters(ident: int, raw: int, grade: str, words: str) -> None:
    obj = doc(SATA)
    if ident in (197, 198):  # the 860 EVO does not list them: add them as drives do
        obj["ata_smart_attributes"]["table"].append(
            {"id": ident, "name": "Current_Pending_Sector", "value": 100, "worst": 100,
             "thresh": 0, "when_failed": "", "raw": {"value": raw, "string": str(raw)}})
    else:
        attr(obj, ident)["raw"] = {"value": raw, "string": str(raw)}
    got, reasons = graded(obj)
    assert got == grade and reasons[0].startswith(words), reasons


def test_the_drives_own_verdicts_and_a_failed_self_test_are_scrap() -> None:
    obj = doc(SATA) | {"smart_status": {"passed": False}}
    assert graded(obj)[0] == SCRAP
    obj = doc(SATA)
    attr(obj, 177)["when_failed"] = "now"
    assert graded(obj) == (SCRAP, ["attribute Wear_Leveling_Count is at or below the drive's "
                                   "own failure threshold"])
    obj = doc(SATA)
    entry = obj["ata_smart_self_test_log"]["extended"]["table"][0]
    entry["status"] = {"value": 0x79, "string": "Completed: read failure", "passed": False}
    assert graded(obj) == (SCRAP, ["its last self-test (short) failed: Completed: read "
                                   "failure"])
    entry["status"] = {"value": 0xF5, "string": "Self-test routine in progress"}
    assert graded(obj)[0] == REUSE  # running: no verdict yet


def test_wear_from_the_ata_attribute_when_there_is_no_device_statistic() -> None:
    obj = doc(SATA)
    obj.pop("ata_device_statistics")
    attr(obj, 177)["value"] = 15
    assert graded(obj) == (NOTE, ["85% of its rated life used"])
    attr(obj, 177)["value"] = 0
    assert graded(obj)[0] == SCRAP


@pytest.mark.parametrize(("change", "grade", "words"), [
    ({"critical_warning": 0x04}, SCRAP, "critical warning: NVM subsystem reliability degraded"),
    ({"critical_warning": 0x02}, NOTE, "critical warning: temperature outside"),
    ({"critical_warning": 0x08}, SCRAP, "critical warning: media placed in read-only mode"),
    ({"available_spare": 5}, SCRAP, "available spare 5% is below its threshold 10%"),
    ({"percentage_used": 85}, NOTE, "85% of its rated life used"),
    ({"percentage_used": 112}, SCRAP, "112% of its rated life used"),
])
def test_nvme_counters(change: dict[str, int], grade: str, words: str) -> None:
    obj = doc(NVME)
    obj["nvme_smart_health_information_log"] |= change | {"media_errors": 0}
    got, reasons = graded(obj)
    assert got == grade and reasons[0].startswith(words), reasons


def test_counters_that_contradict_each_other_say_history_may_have_been_reset() -> None:
    obj = doc(NVME)
    obj["nvme_smart_health_information_log"] |= {"power_on_hours": 0, "media_errors": 0}
    obj["power_on_time"] = {"hours": 0}
    got, reasons = graded(obj)
    assert got == NOTE
    assert reasons == ["history may have been reset: 31,281.5 GiB written by hosts in 0 "
                       "power-on hours",
                       "history may have been reset: 3% of its rated life used in 0 "
                       "power-on hours"], reasons


def test_a_counter_of_the_wrong_type_is_not_gradable_never_zero() -> None:
    obj = doc(SATA)
    attr(obj, 5)["raw"] = {"value": "12", "string": "twelve"}  # not smartctl's raw value
    with pytest.raises(ParseError, match="attribute 5"):
        parse_smartctl_grade(json.dumps(obj))
    obj["power_cycle_count"] = "13"  # a top-level counter of the wrong type: unknown
    attr(obj, 5)["raw"] = {"value": 12, "string": "12"}
    assert parse_smartctl_grade(json.dumps(obj)).power_cycles is None
    # a vendor's packed raw value: the count smartctl decoded first (Seagate's 188 "0 0 0")
    attr(obj, 5)["raw"] = {"value": 4295032833, "string": "1 1 1"}
    assert parse_smartctl_grade(json.dumps(obj)).reallocated == 1
    # an old-age attribute at its threshold is a note, a pre-failure one scrap
    attr(obj, 190 if any(a["id"] == 190 for a in obj["ata_smart_attributes"]["table"])
         else 177)["when_failed"] = "now"
    for a in obj["ata_smart_attributes"]["table"]:
        if a.get("when_failed") == "now":
            a["flags"] = {**a.get("flags", {}), "prefailure": False}
    attr(obj, 5)["raw"] = {"value": 0, "string": "0"}
    assert graded(obj)[0] == NOTE
    obj = doc(NVME)
    obj["nvme_smart_health_information_log"]["media_errors"] = -7  # no drive counts below 0
    with pytest.raises(ParseError, match="media_errors is -7: out of range"):
        parse_smartctl_grade(json.dumps(obj))


def test_a_capacity_that_does_not_add_up_is_named() -> None:
    """#32 item 3, identity: what the drive reports (IDENTIFY / READ CAPACITY, the NVMe
    namespace's NSZE, NCAP, NUSE as smartctl reads them) against the kernel's size."""
    nvme = json.loads((QEMU / "smartctl_-j_-x_dev_nvme0n1.out").read_text())
    inputs = parse_smartctl_grade(json.dumps(nvme))
    assert inputs.reported_bytes == 268435456
    assert inputs.namespace_bytes == (268435456, 268435456, 268435456)
    assert grade_drive(inputs, kernel_bytes=268435456).grade == REUSE
    got = grade_drive(inputs, kernel_bytes=250_000_000)
    assert got.grade == NOTE
    assert [r.text for r in got.reasons] == [
        "identity does not add up: the drive reports 268,435,456 bytes, the kernel sees "
        "250,000,000",
        "identity does not add up: the namespace's size is 268,435,456 bytes, the kernel "
        "sees 250,000,000"]
    # the kernel sees 0 bytes: it cannot use the block size (520-byte SAS), no contradiction
    assert grade_drive(inputs, kernel_bytes=0).grade == REUSE
    nvme["nvme_namespaces"][0]["capacity"]["bytes"] = 2 * 268435456
    reasons = [r.text for r in grade_drive(parse_smartctl_grade(json.dumps(nvme)),
                                           kernel_bytes=268435456).reasons]
    assert reasons == ["identity does not add up: namespace capacity 536,870,912 bytes "
                       "exceeds its size 268,435,456 (NCAP > NSZE)"]


WORN = "smart/smartctl-x-j_7.3_simdrive-ata-emu_worn_EMULATED.json"


def test_the_emulated_worn_drive_through_real_smartctl_is_scrap_for_each_of_its_reasons() -> None:
    """smartctl 7.3's own JSON of simdrive's worn ATA SSD (its exit status 152: failing, an
    attribute at threshold, an error in the self-test log; none of bits 0-2)."""
    worn = parse_smartctl_grade(fixture_text(WORN))
    assert worn.available and worn.transport == "ata" and worn.smart_passed is False
    assert (worn.reallocated, worn.pending, worn.offline_uncorrectable,
            worn.reported_uncorrectable, worn.crc_errors, worn.power_on_hours) == (
        1520, 48, 48, 212, 0, 46000)
    assert (worn.life_left_percent, worn.life_attribute) == (3, "Wear_Leveling_Count")
    assert set(worn.failing_now) == {"Reallocated_Sector_Ct", "Wear_Leveling_Count"}
    assert worn.self_test is not None and worn.self_test.passed is False
    assert (worn.self_test.kind, worn.self_test.power_on_hours) == ("short", 46000)
    assert worn.warnings == ()
    grade = grade_drive(worn)
    assert grade.grade == SCRAP
    counters = {r.counter for r in grade.reasons if r.grade == SCRAP}
    assert counters == {"smart_status", "Reallocated_Sector_Ct", "Wear_Leveling_Count",
                        "pending_sectors", "offline_uncorrectable", "reallocated",
                        "reported_uncorrectable", "self_test"}
