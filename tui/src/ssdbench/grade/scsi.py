"""A SAS/SCSI drive's health as ``smartctl -j -x`` (or ``-a -j``) reads it, parsed into
frozen dataclasses for grading (docs/grading.md "SAS and SCSI drives").

smartctl reads SCSI log pages, not ATA attributes (smartmontools ``src/scsiprint.cpp``): the
informational exceptions (the drive's own health verdict, ``smart_status`` with ``scsi.asc``,
``ascq`` and ``ie_string`` when it predicts a failure), the read / write / verify error
counter pages (``scsi_error_counter_log.{read,write,verify}.total_uncorrected_errors``, ...),
READ DEFECT DATA's grown defect list (``scsi_grown_defect_list``), the pending defects page
(``scsi_pending_defects.count``), the solid state media page's percentage used endurance
indicator (``scsi_percentage_used_endurance_indicator``; smartctl 7.5 also writes it as
``endurance_used.current_percent``), the self-test results page (``scsi_self_test_0`` ..
``scsi_self_test_19``, the most recent first), temperature and the start-stop cycle counter.

Every value is untrusted: a number no drive reports (negative, wider than the field smartctl
read it from, infinite) or a member of the wrong shape is a ParseError; one that is not a
JSON integer at all is unknown (None), never 0.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.errors import ParseError
from ssdbench.devices.smart import counter, dig

# the widths smartctl reads these into (scsiprint.cpp, scsicmds.h): the error counters are
# uint64_t, the grown defect list a uint32 byte length over its element size, the pending
# defects count a uint32, the endurance indicator one byte (it may exceed 100: SBC-4
# "Percentage Used Endurance Indicator", a drive past its rated life), the self-test
# result a nibble, its power-on hours 16 bits
U64, U32, U16, U8 = 2**64 - 1, 2**32 - 1, 2**16 - 1, 2**8 - 1
ERROR_PAGES = ("read", "write", "verify")
# SPC self-test results (smartctl's self_test_result[]): 0 completed; 1, 2 aborted; 3..7 a
# failure (3 "Unknown error, incomplete", 4 "Completed, segment failed", 5..7 failed in a
# segment: smartctl sets FAILLOG for each of 3..7); 15 in progress; 8..14 reserved
SELF_TEST_FAILED = range(3, 8)
SELF_TEST_NO_VERDICT = frozenset({1, 2, 15})
# SPC self-test codes: 1 background short, 2 background long, 5 foreground short, 6
# foreground long
_KINDS = {1: "short", 2: "extended", 5: "short", 6: "extended"}
IE_STRING_MAX = 120  # smartctl's informational-exception words are at most about 80 characters


@dataclass(frozen=True)
class ErrorCounters:
    """One error counter log page (read, write or verify) as smartctl gives it."""

    page: str
    uncorrected: int | None  # total uncorrected errors: blocks the drive could not recover
    corrected: int | None  # total errors corrected (by ECC, rereads, rewrites)
    gigabytes_processed: str  # smartctl's own words ("11523.849"); shown, not graded


@dataclass(frozen=True)
class ScsiSelfTest:
    """One entry of the drive's self-test results log."""

    number: int  # its place in the log: 0 is the most recent
    kind: str  # "short" | "extended" | "other"
    result: int  # the SPC result code
    passed: bool | None  # None: aborted, in progress, reserved
    status: str  # smartctl's words
    power_on_hours: int | None


@dataclass(frozen=True)
class ScsiHealth:
    """What a SAS/SCSI drive reports about its health (None: it does not report it)."""

    health_passed: bool | None  # smart_status.passed: the informational exceptions
    ie_asc: int | None = None  # the additional sense code of a predicted failure (5Dh)
    ie_ascq: int | None = None
    ie_string: str = ""  # smartctl's words for it ("FAILURE PREDICTION THRESHOLD EXCEEDED")
    grown_defects: int | None = None
    pending_defects: int | None = None
    error_counters: tuple[ErrorCounters, ...] = ()
    percentage_used: int | None = None
    temperature_c: int | None = None
    drive_trip_c: int | None = None
    start_stop_cycles: int | None = None
    load_unload_cycles: int | None = None
    self_tests: tuple[ScsiSelfTest, ...] = ()
    # smart_support.enabled: the informational exceptions control mode page's DEXCPT bit
    # clear (False: the drive is told not to report a predicted failure)
    exceptions_enabled: bool | None = None

    @property
    def uncorrected(self) -> int | None:
        """Uncorrected errors over the pages the drive reports (None: no page counts them)."""
        counts = [c.uncorrected for c in self.error_counters if c.uncorrected is not None]
        return sum(counts) if counts else None

    @property
    def has_health_data(self) -> bool:
        """Whether smartctl read anything to grade: a verdict, a counter, a log."""
        return (self.health_passed is not None or self.grown_defects is not None
                or self.pending_defects is not None or self.uncorrected is not None
                or self.percentage_used is not None or bool(self.self_tests))


def is_scsi(obj: dict[str, Any]) -> bool:
    """smartctl read the drive as SCSI: any ``scsi_*`` member (``scsi_version``,
    ``scsi_vendor``, ``scsi_grown_defect_list``, ...). A SAT drive is read as ATA and has none;
    an ATA disk behind a SCSI target that smartctl could not query has none either."""
    return any(isinstance(k, str) and k.startswith("scsi_") for k in obj)


def _object(obj: dict[str, Any], key: str) -> dict[str, Any] | None:
    value = obj.get(key)
    if value is None:
        return None
    if not isinstance(value, dict):
        raise ParseError(f"smartctl: {key} is a {type(value).__name__}, not an object")
    return value


def _words(value: Any, what: str) -> str:
    if value is None:
        return ""
    if not isinstance(value, str):
        raise ParseError(f"smartctl: {what} is a {type(value).__name__}, not words")
    text = "".join(ch for ch in value if ch.isprintable()).strip()
    if len(text) > IE_STRING_MAX:
        raise ParseError(f"smartctl: {what} is {len(text)} characters: not smartctl's words")
    return text


def _error_counters(obj: dict[str, Any]) -> tuple[ErrorCounters, ...]:
    log = _object(obj, "scsi_error_counter_log")
    if log is None:
        return ()
    out = []
    for page in ERROR_PAGES:
        entry = log.get(page)
        if entry is None:
            continue
        if not isinstance(entry, dict):
            raise ParseError(f"smartctl: scsi_error_counter_log.{page} is not an object")
        where = f"scsi_error_counter_log.{page}"
        processed = entry.get("gigabytes_processed")
        out.append(ErrorCounters(
            page,
            counter(entry.get("total_uncorrected_errors"), f"{where}.total_uncorrected_errors",
                    U64),
            counter(entry.get("total_errors_corrected"), f"{where}.total_errors_corrected",
                    U64),
            _words(processed, f"{where}.gigabytes_processed") if isinstance(
                processed, str) else ""))
    return tuple(out)


def scsi_self_tests(obj: dict[str, Any]) -> tuple[ScsiSelfTest, ...]:
    """``scsi_self_test_0`` .. ``scsi_self_test_19`` of smartctl's JSON (``obj``), the most
    recent first (the self-test stage's ``smartctl -j -l selftest`` and the health read)."""
    out = []
    for number in range(20):  # the self-test results page holds twenty entries
        key = f"scsi_self_test_{number}"
        entry = _object(obj, key)
        if entry is None:
            break
        result = counter(dig(entry, "result", "value"), f"{key}.result.value", 15)
        code = counter(dig(entry, "code", "value"), f"{key}.code.value", 7)
        if result is None:
            raise ParseError(f"smartctl: {key} has no result value")
        passed = (True if result == 0 else False if result in SELF_TEST_FAILED else None)
        out.append(ScsiSelfTest(
            number, _KINDS.get(code if code is not None else -1, "other"), result, passed,
            _words(dig(entry, "result", "string"), f"{key}.result.string"),
            counter(dig(entry, "power_on_time", "hours"), f"{key}.power_on_time.hours", U16)))
    return tuple(out)


def _celsius(value: Any, what: str) -> int | None:
    """A temperature: smartctl reads a byte (scsiprint.cpp) but newer pages are signed, so
    -128..255 °C; beyond that, or infinite, a ParseError; not an integer, unknown."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(f"smartctl: {what} is {value}: not a temperature")
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if not -128 <= value <= U8:
        raise ParseError(f"smartctl: {what} is {value if abs(value) < 10**9 else 'huge'}: "
                         "out of range (-128 to 255)")
    return value


def parse_scsi_health(obj: dict[str, Any]) -> ScsiHealth:
    """The SCSI health members of smartctl's JSON (``obj``, already a JSON object)."""
    status = _object(obj, "smart_status")
    passed = status.get("passed") if status is not None else None
    scsi_ie = _object(status, "scsi") if status is not None else None
    used = obj.get("scsi_percentage_used_endurance_indicator")
    if used is None:  # smartctl 7.5's name for it, where the old one is absent
        used = dig(obj, "endurance_used", "current_percent")
    temp = _object(obj, "temperature") or {}
    cycles = _object(obj, "scsi_start_stop_cycle_counter") or {}
    pending = _object(obj, "scsi_pending_defects")
    return ScsiHealth(
        health_passed=passed if isinstance(passed, bool) else None,
        ie_asc=counter((scsi_ie or {}).get("asc"), "smart_status.scsi.asc", U8),
        ie_ascq=counter((scsi_ie or {}).get("ascq"), "smart_status.scsi.ascq", U8),
        ie_string=_words((scsi_ie or {}).get("ie_string"), "smart_status.scsi.ie_string"),
        grown_defects=counter(obj.get("scsi_grown_defect_list"), "scsi_grown_defect_list",
                              U32),
        pending_defects=None if pending is None else counter(
            pending.get("count"), "scsi_pending_defects.count", U32),
        error_counters=_error_counters(obj),
        percentage_used=counter(used, "scsi_percentage_used_endurance_indicator", U8),
        temperature_c=_celsius(temp.get("current"), "temperature.current"),
        drive_trip_c=_celsius(temp.get("drive_trip"), "temperature.drive_trip"),
        start_stop_cycles=counter(cycles.get("accumulated_start_stop_cycles"),
                                  "accumulated_start_stop_cycles", U32),
        load_unload_cycles=counter(cycles.get("accumulated_load_unload_cycles"),
                                   "accumulated_load_unload_cycles", U32),
        self_tests=scsi_self_tests(obj),
        exceptions_enabled=enabled if isinstance(
            enabled := dig(obj, "smart_support", "enabled"), bool) else None)
