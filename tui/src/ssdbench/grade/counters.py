"""What grading reads from a drive: ``smartctl -j -x`` (smartmontools 7.x), ATA, NVMe or
SAS/SCSI (its log pages: grade/scsi.py), parsed into one frozen dataclass (docs/grading.md).

Every value is untrusted: a counter that is not a JSON integer is unknown (None), never 0;
one that is a number no drive reports (negative, wider than smartctl's 128 bits, infinite)
is a ParseError, and so the drive is "not gradable". ATA attributes are read by their ID,
their raw value decoded in the format smartctl printed it in (devices/smart.py: hex48,
the 16-bit fields of raw16, raw16(raw16), ..; 188's count in its low 16 bits), except the
wear attributes, read by the name smartctl's drive database gives them (an
``Unknown_Attribute`` is not guessed at); NVMe values from smartctl's
``nvme_smart_health_information_log`` or, given instead, ``nvme smart-log -o json``'s keys.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ssdbench.devices.model import ParseError
from ssdbench.devices.nvme import load_json_object
from ssdbench.devices.smart import attribute_count, counter, dig
from ssdbench.grade.scsi import ScsiHealth, is_scsi, parse_scsi_health

# ATA attribute IDs (raw values): Backblaze's five failure predictors and the cable's CRC
REALLOCATED, REPORTED_UNCORRECTABLE, COMMAND_TIMEOUT = 5, 187, 188
PENDING, OFFLINE_UNCORRECTABLE, CRC_ERRORS = 197, 198, 199
# wear attributes whose NORMALIZED value is the life left in percent, by the name smartctl's
# drive database gives them (Samsung, Intel, Crucial/Micron, SanDisk/WD, Kingston, ...)
LIFE_LEFT_NAMES = ("Wear_Leveling_Count", "Media_Wearout_Indicator", "SSD_Life_Left",
                   "Percent_Lifetime_Remain", "Remaining_Lifetime_Perc",
                   "Percent_Life_Remaining", "Drive_Life_Remaining%")
# names smartctl's drive database (drivedb.h, 7.5) gives these IDs on drives where they count
# something else: read as what they are named, they would grade a drive scrap for the GiB it
# has read ("-v 198,raw48,Host_Reads_GiB"); such an attribute is not read, and said so
OTHER_MEANINGS = {
    197: frozenset({"Not_In_Use"}),
    198: frozenset({"Host_Reads_GiB", "Read_Sectors_Tot_Ct", "Not_In_Use"}),
    199: frozenset({"Host_Writes_GiB", "Write_Sectors_Tot_Ct"}),
}
# smartctl's exit status bit 3: "SMART status check returned DISK FAILING" (smartctl(8))
SMARTCTL_DISK_FAILING = 0x08
# ATA self-test status (the upper nibble): 0 passed, 1 aborted by the host, 2 interrupted,
# 15 in progress; 3..8 a failure the drive found
SELF_TEST_FAILED = range(3, 9)


@dataclass(frozen=True)
class SelfTest:
    """The drive's latest self-test in its log."""

    kind: str  # "short" | "extended" | "conveyance" | "other"
    passed: bool | None  # None: aborted, interrupted or still running
    status: str  # the drive's words, as smartctl gives them
    power_on_hours: int | None = None


@dataclass(frozen=True)
class GradeInputs:
    """A drive's own health counters (None: the drive does not report it)."""

    available: bool
    reason: str = ""  # why not available
    transport: str = ""  # "ata" | "nvme" | "scsi" | ""
    smart_passed: bool | None = None
    power_on_hours: int | None = None
    power_cycles: int | None = None
    host_writes_bytes: int | None = None
    # ATA
    reallocated: int | None = None
    pending: int | None = None
    offline_uncorrectable: int | None = None
    reported_uncorrectable: int | None = None
    command_timeouts: int | None = None
    crc_errors: int | None = None
    life_left_percent: int | None = None  # from a wear attribute's normalized value
    life_attribute: str = ""
    failing_now: tuple[str, ...] = ()  # prefailure attributes at or below threshold now
    failed_before: tuple[str, ...] = ()  # ... that were, earlier in the drive's life
    # NVMe
    critical_warning: int | None = None
    available_spare: int | None = None
    spare_threshold: int | None = None
    percentage_used: int | None = None  # NVMe, or ATA's device statistic
    media_errors: int | None = None
    error_log_entries: int | None = None
    unsafe_shutdowns: int | None = None
    self_test: SelfTest | None = None
    # identity: the capacity the drive reports (ATA IDENTIFY / SCSI READ CAPACITY as smartctl
    # reads it) and an NVMe namespace's size, capacity and utilization (NSZE, NCAP, NUSE)
    reported_bytes: int | None = None
    namespace_bytes: tuple[int | None, int | None, int | None] = (None, None, None)
    warnings: tuple[str, ...] = ()  # what smartctl said went wrong while reading
    # SAS/SCSI: the log pages smartctl read (grade/scsi.py); percentage_used and self_test
    # above hold its endurance indicator and latest self-test
    scsi: ScsiHealth | None = None

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


def whole(value: Any) -> int | None:
    """A non-negative JSON integer, else None (a bool, a string, a float: unknown)."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return None
    return value


def _attributes(obj: dict[str, Any]) -> dict[int, dict[str, Any]]:
    out: dict[int, dict[str, Any]] = {}
    table = dig(obj, "ata_smart_attributes", "table")
    for attr in table if isinstance(table, list) else []:
        if isinstance(attr, dict) and type(attr.get("id")) is int:
            out[attr["id"]] = attr
    return out


def _raw(attrs: dict[int, dict[str, Any]], ident: int) -> int | None:
    """An attribute's count as smartctl decodes its raw value (devices/smart.py): the count
    the printed format holds ("0x0000000001f4" is 500, raw16 "0 0 5" is 5, raw16(raw16)
    "8 (1 0)" is 8), 188 its low 16 bits; a raw value smartctl would not print that way is a
    ParseError."""
    attr = attrs.get(ident)
    if attr is None or attr.get("name") in OTHER_MEANINGS.get(ident, ()):
        return None
    return attribute_count(attr)


def _device_statistic(obj: dict[str, Any], name: str) -> int | None:
    pages = dig(obj, "ata_device_statistics", "pages")
    for page in pages if isinstance(pages, list) else []:
        table = page.get("table") if isinstance(page, dict) else None
        for row in table if isinstance(table, list) else []:
            if isinstance(row, dict) and row.get("name") == name and \
                    dig(row, "flags", "valid") is not False:
                return counter(row.get("value"), f"device statistic {name!r}")
    return None


def _ata_self_test(obj: dict[str, Any]) -> SelfTest | None:
    for log in ("extended", "standard"):
        table = dig(obj, "ata_smart_self_test_log", log, "table")
        if isinstance(table, list) and table and isinstance(table[0], dict):
            entry = table[0]  # the most recent first
            kind = str(dig(entry, "type", "string") or "").lower()
            value = whole(dig(entry, "status", "value"))
            passed = dig(entry, "status", "passed")
            nibble = None if value is None else value >> 4
            if not isinstance(passed, bool):
                passed = False if nibble in SELF_TEST_FAILED else (
                    True if nibble == 0 else None)
            elif nibble in (1, 2, 15):
                passed = None
            return SelfTest("short" if "short" in kind else "extended" if (
                "extended" in kind or "long" in kind) else "conveyance" if "conveyance" in kind
                else "other", passed, str(dig(entry, "status", "string") or ""),
                whole(entry.get("lifetime_hours")))
    return None


def _nvme_self_test(obj: dict[str, Any]) -> SelfTest | None:
    table = dig(obj, "nvme_self_test_log", "table")
    if not (isinstance(table, list) and table and isinstance(table[0], dict)):
        return None
    entry = table[0]
    code = whole(dig(entry, "self_test_result", "value"))
    kind = whole(dig(entry, "self_test_code", "value"))
    # result 0: completed without error; 1-4: aborted or interrupted; 5-7: failed
    passed = True if code == 0 else False if code in (5, 6, 7) else None
    return SelfTest({1: "short", 2: "extended"}.get(kind or 0, "other"), passed,
                    str(dig(entry, "self_test_result", "string") or ""),
                    whole(entry.get("power_on_hours")))


def _scsi_inputs(obj: dict[str, Any], common: dict[str, Any], said: str) -> GradeInputs:
    """A SAS/SCSI drive's log pages as grading inputs (grade/scsi.py); "not gradable" when
    smartctl read none of them."""
    health = parse_scsi_health(obj)
    if not health.has_health_data:
        return GradeInputs(False, "a SAS/SCSI drive that gave smartctl no health data (no "
                                  "health status, error counter log, grown defect list, "
                                  "endurance indicator or self-test log)"
                           + (f": {said}" if said else ""), transport="scsi")
    latest = health.self_tests[0] if health.self_tests else None
    return GradeInputs(
        True, transport="scsi", **common, percentage_used=health.percentage_used,
        self_test=None if latest is None else SelfTest(
            latest.kind, latest.passed, latest.status, latest.power_on_hours),
        scsi=health)


def parse_smartctl_grade(text: str) -> GradeInputs:
    """``smartctl -j -x DEV``'s JSON as grading inputs; a drive smartctl could not read
    (its exit status's bits 0-2, no SMART, a USB bridge without SAT) is not available,
    with smartctl's own words. Text that is not smartctl's JSON is a ParseError."""
    obj = load_json_object(text, "smartctl")
    status = whole(dig(obj, "smartctl", "exit_status"))
    messages = dig(obj, "smartctl", "messages")
    said = "; ".join(str(m.get("string", "")) for m in messages
                     if isinstance(m, dict)) if isinstance(messages, list) else ""
    if status is None and not isinstance(dig(obj, "smartctl"), dict):
        raise ParseError("smartctl: no smartctl member: not smartctl's JSON")
    # bits 0-1: the command line or the device open failed; bit 2 (a SMART or ATA command
    # failed, a checksum error) comes with whatever smartctl could read: QEMU's ATA disk
    # fails some of -x's logs and gives its attributes (the data decides below)
    if (status or 0) & 0x03:
        return GradeInputs(False, f"smartctl could not read the drive: "
                                  f"{said or f'exit status {status}'}")
    warnings = (f"smartctl exit status {status}: a SMART or ATA command failed or a log's "
                "checksum was bad; graded on what it read",) if (status or 0) & 0x04 else ()
    if dig(obj, "smart_support", "available") is False:
        return GradeInputs(False, "the drive has no SMART")
    # on SCSI, "enabled" is the informational exceptions mode page's DEXCPT bit: its log
    # pages are read all the same (grade/scsi.py notes it)
    if dig(obj, "smart_support", "enabled") is False and not is_scsi(obj):
        return GradeInputs(False, "SMART is disabled on the drive (smartctl -s on enables it)")
    nvme = dig(obj, "nvme_smart_health_information_log")
    attrs = _attributes(obj)
    passed = dig(obj, "smart_status", "passed")
    if not isinstance(passed, bool):  # smartctl's verdict, where the JSON has no member
        passed = False if (status or 0) & SMARTCTL_DISK_FAILING else None
    common: dict[str, Any] = {
        "smart_passed": passed,
        "power_on_hours": counter(dig(obj, "power_on_time", "hours"), "power_on_time.hours"),
        "power_cycles": counter(obj.get("power_cycle_count"), "power_cycle_count"),
        "warnings": warnings,
        "reported_bytes": whole(dig(obj, "user_capacity", "bytes")),
    }
    if isinstance(nvme, dict):
        spaces = obj.get("nvme_namespaces")
        ns = spaces[0] if isinstance(spaces, list) and spaces and isinstance(
            spaces[0], dict) else {}
        common["namespace_bytes"] = tuple(whole(dig(ns, k, "bytes"))
                                          for k in ("size", "capacity", "utilization"))
        def log(key: str) -> int | None:
            return counter(nvme.get(key), key)

        units = log("data_units_written")
        return GradeInputs(
            True, transport="nvme", **common,
            host_writes_bytes=None if units is None else units * 512_000,
            critical_warning=log("critical_warning"),
            available_spare=log("available_spare"),
            spare_threshold=log("available_spare_threshold"),
            percentage_used=log("percentage_used"),
            media_errors=log("media_errors"),
            error_log_entries=log("num_err_log_entries"),
            unsafe_shutdowns=log("unsafe_shutdowns"),
            self_test=_nvme_self_test(obj))
    if not attrs and is_scsi(obj):
        return _scsi_inputs(obj, common, said)
    if not attrs:
        return GradeInputs(False, "smartctl gave no SMART attributes and no NVMe health log "
                                  + (f"({said})" if said else "(a USB bridge without "
                                     "ATA pass-through?)"))
    life = next(((str(a.get("name")), whole(a.get("value"))) for a in attrs.values()
                 if a.get("name") in LIFE_LEFT_NAMES), ("", None))
    sectors = _device_statistic(obj, "Logical Sectors Written")
    common["warnings"] += tuple(
        f"attribute {i} is {attrs[i].get('name')} on this drive (smartctl's drive database): "
        "not read as the counter its ID usually holds"
        for i, names in OTHER_MEANINGS.items() if i in attrs and attrs[i].get("name") in names)
    block = counter(obj.get("logical_block_size"), "logical_block_size", 2**32) or 512
    return GradeInputs(
        True, transport="ata", **common,
        host_writes_bytes=None if sectors is None else sectors * block,
        reallocated=_raw(attrs, REALLOCATED), pending=_raw(attrs, PENDING),
        offline_uncorrectable=_raw(attrs, OFFLINE_UNCORRECTABLE),
        reported_uncorrectable=_raw(attrs, REPORTED_UNCORRECTABLE),
        command_timeouts=_raw(attrs, COMMAND_TIMEOUT), crc_errors=_raw(attrs, CRC_ERRORS),
        life_left_percent=life[1], life_attribute=life[0],
        # a pre-failure attribute at its threshold predicts failure; an old-age one (a
        # drive that ran hot: Seagate's 190) is a note
        failing_now=tuple(str(a.get("name")) for a in attrs.values()
                          if a.get("when_failed") == "now"
                          and dig(a, "flags", "prefailure") is not False),
        failed_before=tuple(str(a.get("name")) for a in attrs.values()
                            if a.get("when_failed") == "past" or (
                                a.get("when_failed") == "now"
                                and dig(a, "flags", "prefailure") is False)),
        percentage_used=_device_statistic(obj, "Percentage Used Endurance Indicator"),
        self_test=_ata_self_test(obj))
