"""A drive's health grade, with the reasons that set it (docs/grading.md has each rule and
its source).

Grades, worst first:

* ``scrap``: the drive says it is failing or worn out, or data on it is unreadable now;
* ``not gradable``: its counters cannot be read (a USB bridge, no SMART): never a pass;
* ``reuse, with a note``: usable, with something the next owner should know;
* ``reuse``: nothing found.

Each rule adds a Reason (the grade it sets, what it says, the counter, its value and the
threshold); the grade is the worst any reason sets. Thresholds are plan parameters
(``grade_*``: a plan file, ``--set``, the kiosk config's ``[params]``).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from ssdbench.grade.counters import GradeInputs

REUSE, NOTE, NOT_GRADABLE, SCRAP = "reuse", "reuse, with a note", "not gradable", "scrap"
_ORDER = {REUSE: 0, NOTE: 1, NOT_GRADABLE: 2, SCRAP: 3}
# SCSI informational exception warnings (ASC 0Bh, SPC-6) that mean bad media: ASCQ 3
# background self-test failed, 4 background pre-scan and 5 background medium scan detected
# a medium error
SCSI_WARNINGS_SCRAP = frozenset({3, 4, 5})
# NVMe critical warning bits (NVMe base specification, SMART / Health Information log)
_CRITICAL = {0: ("available spare below its threshold", SCRAP),
             1: ("temperature outside its thresholds", NOTE),
             2: ("NVM subsystem reliability degraded (media or internal errors)", SCRAP),
             3: ("media placed in read-only mode", SCRAP),
             4: ("volatile memory backup device failed", SCRAP),
             5: ("persistent memory region read-only", SCRAP)}


@dataclass(frozen=True)
class Thresholds:
    """When a counter turns a note into scrap (docs/grading.md "Thresholds")."""

    reallocated_scrap: int = 100  # ATA 5, SCSI grown defects: > 0 a note, at or above scrap
    reported_uncorrectable_scrap: int = 10  # ATA 187: > 0 a note
    media_errors_scrap: int = 10  # NVMe media and data integrity errors: > 0 a note
    wear_note_percent: int = 80  # rated life used (NVMe percentage used, ATA wear)
    wear_scrap_percent: int = 100
    power_on_hours_note: int = 43_800  # five years powered on


@dataclass(frozen=True)
class Reason:
    grade: str
    text: str
    counter: str = ""
    value: int | str | None = None
    threshold: int | None = None


@dataclass(frozen=True)
class Grade:
    grade: str
    reasons: tuple[Reason, ...]

    def to_json(self) -> dict[str, Any]:
        return {"grade": self.grade, "reasons": [asdict(r) for r in self.reasons]}

    @property
    def summary(self) -> str:
        """One line: the grade and its reasons' words."""
        worst = [r.text for r in self.reasons if r.grade == self.grade]
        return self.grade + (f": {'; '.join(worst)}" if worst else "")


def grade_drive(inputs: GradeInputs, limits: Thresholds | None = None, *,
                kernel_bytes: int | None = None, self_test_missing: str = "") -> Grade:
    """The grade of a drive from its own counters (and, given the kernel's size of the
    device, whether its identity agrees with it)."""
    t = limits or Thresholds()
    if not inputs.available:
        return Grade(NOT_GRADABLE, (Reason(NOT_GRADABLE, inputs.reason or "no counters"),))
    out: list[Reason] = []

    def add(grade: str, text: str, counter: str = "", value: int | str | None = None,
            threshold: int | None = None) -> None:
        out.append(Reason(grade, text, counter, value, threshold))

    if inputs.smart_passed is False:
        add(*_failed_verdict(inputs), "smart_status", "failed")
    for name in inputs.failing_now:
        add(SCRAP, f"attribute {name} is at or below the drive's own failure threshold",
            name, "now")
    for name in inputs.failed_before:
        add(NOTE, f"attribute {name} is or was at its threshold (an old-age attribute, or "
                  "earlier in the drive's life)", name, "past")
    _ata_counters(inputs, t, add)
    _nvme_counters(inputs, t, add)
    _scsi_counters(inputs, t, add)
    _wear(inputs, t, add)
    if inputs.power_on_hours is not None and inputs.power_on_hours >= t.power_on_hours_note:
        add(NOTE, f"{inputs.power_on_hours:,} power-on hours "
                  f"({inputs.power_on_hours / 8760:.1f} years)", "power_on_hours",
            inputs.power_on_hours, t.power_on_hours_note)
    for text in history_flags(inputs):
        add(NOTE, f"history may have been reset: {text}", "history")
    for text in identity_flags(inputs, kernel_bytes):
        add(NOTE, f"identity does not add up: {text}", "identity")
    if self_test_missing:  # the plan asked for one and it did not run: said, never a pass
        add(NOTE, f"the self-test did not run: {self_test_missing}", "self_test", "not run")
    st = inputs.self_test
    if st is not None and st.passed is False:
        add(SCRAP, f"its last self-test ({st.kind}) failed: {st.status}", "self_test",
            st.status)
    grade = max((r.grade for r in out), key=_ORDER.__getitem__, default=REUSE)
    return Grade(grade, tuple(sorted(out, key=lambda r: -_ORDER[r.grade])))


def _ata_counters(i: GradeInputs, t: Thresholds, add: Any) -> None:
    if i.pending:
        add(SCRAP, f"{i.pending} sectors pending reallocation: data there cannot be read "
                   "now", "pending_sectors", i.pending, 0)
    if i.offline_uncorrectable:
        add(SCRAP, f"{i.offline_uncorrectable} sectors uncorrectable in the offline scan",
            "offline_uncorrectable", i.offline_uncorrectable, 0)
    if i.reallocated:
        scrap = i.reallocated >= t.reallocated_scrap
        add(SCRAP if scrap else NOTE, f"{i.reallocated} sectors or blocks reallocated",
            "reallocated", i.reallocated, t.reallocated_scrap)
    if i.reported_uncorrectable:
        scrap = i.reported_uncorrectable >= t.reported_uncorrectable_scrap
        add(SCRAP if scrap else NOTE, f"{i.reported_uncorrectable} uncorrectable errors "
                                      "reported to the host", "reported_uncorrectable",
            i.reported_uncorrectable, t.reported_uncorrectable_scrap)
    if i.command_timeouts:
        add(NOTE, f"{i.command_timeouts} command timeouts", "command_timeouts",
            i.command_timeouts)
    if i.crc_errors:
        add(NOTE, f"{i.crc_errors} interface CRC errors: a cable or connector fault, not the "
                  "drive's (not counted against it; reseat or replace the cable)",
            "crc_errors", i.crc_errors)


def _failed_verdict(i: GradeInputs) -> tuple[str, str]:
    """The grade and words of a FAILED health status. On SCSI smartctl says FAILED for any
    informational exception it has words for (lib/scsicmds.cpp scsiGetIEString()): a failure
    prediction (ASC 5Dh) is scrap; a warning (ASC 0Bh) is scrap where it found bad media or a
    failed background self-test (ASCQ 3, 4, 5), else a note (a temperature or humidity limit,
    a degraded non-volatile cache, ...), as is 5Dh/FFh, a test of the mechanism ("false")."""
    s = i.scsi
    if s is None:
        return SCRAP, "the drive's own SMART overall assessment says FAILED"
    said = s.ie_string or "no words given"
    code = (f" (asc {s.ie_asc:#04x}, ascq {s.ie_ascq:#04x})"
            if s.ie_asc is not None and s.ie_ascq is not None else "")
    text = f"the drive's own health status (SCSI informational exceptions) says FAILED: " \
           f"{said}{code}"
    warning = (s.ie_asc == 0x0B and s.ie_ascq not in SCSI_WARNINGS_SCRAP) or (
        s.ie_asc == 0x5D and s.ie_ascq == 0xFF)
    if warning:
        return NOTE, text + ": a warning, not a predicted failure"
    return SCRAP, text


def _scsi_counters(i: GradeInputs, t: Thresholds, add: Any) -> None:
    """SAS/SCSI log pages (docs/grading.md "SAS and SCSI drives")."""
    s = i.scsi
    if s is None:
        return
    if i.smart_passed is None:
        add(NOTE, "the drive reported no health status (SCSI informational exceptions): "
                  "graded on its counters alone", "smart_status", "absent")
    if s.exceptions_enabled is False:
        add(NOTE, "the drive's failure-prediction reporting is disabled (informational "
                  "exceptions, DEXCPT set; smartctl -s on enables it): its health status may "
                  "not warn", "smart_support", "disabled")
    if s.pending_defects:
        add(SCRAP, f"{s.pending_defects} pending defects: blocks the drive could not read, "
                   "waiting to be reallocated", "pending_defects", s.pending_defects, 0)
    if s.uncorrected:
        pages = ", ".join(f"{c.page} {c.uncorrected:,}" for c in s.error_counters
                          if c.uncorrected)
        add(SCRAP, f"{s.uncorrected:,} uncorrected errors ({pages}): blocks the drive could "
                   "not recover", "uncorrected_errors", s.uncorrected, 0)
    if s.grown_defects:
        scrap = s.grown_defects >= t.reallocated_scrap
        add(SCRAP if scrap else NOTE, f"{s.grown_defects:,} defects in the grown defect list "
                                      "(blocks reallocated since it left the factory)",
            "grown_defects", s.grown_defects, t.reallocated_scrap)


def _nvme_counters(i: GradeInputs, t: Thresholds, add: Any) -> None:
    if i.critical_warning:
        for bit, (text, grade) in _CRITICAL.items():
            if i.critical_warning & (1 << bit):
                add(grade, f"critical warning: {text}", "critical_warning", i.critical_warning)
    if (i.available_spare is not None and i.spare_threshold
            and i.available_spare < i.spare_threshold):
        add(SCRAP, f"available spare {i.available_spare}% is below its threshold "
                   f"{i.spare_threshold}%", "available_spare", i.available_spare,
            i.spare_threshold)
    if i.media_errors:
        scrap = i.media_errors >= t.media_errors_scrap
        add(SCRAP if scrap else NOTE, f"{i.media_errors} media and data integrity errors "
                                      "(unrecovered)", "media_errors", i.media_errors,
            t.media_errors_scrap)


def _wear(i: GradeInputs, t: Thresholds, add: Any) -> None:
    used, where = i.percentage_used, "percentage_used"
    if used is None and i.life_left_percent is not None:
        used, where = max(0, 100 - i.life_left_percent), i.life_attribute
    if used is None:
        return
    if used >= t.wear_scrap_percent:
        add(SCRAP, f"{used}% of its rated life used", where, used, t.wear_scrap_percent)
    elif used >= t.wear_note_percent:
        add(NOTE, f"{used}% of its rated life used", where, used, t.wear_note_percent)


def history_flags(i: GradeInputs) -> list[str]:
    """Counters that contradict each other, as on a used drive whose usage counters were
    reset to sell it as new (docs/grading.md "Reset history"): the evidence, one line each."""
    out = []
    hours, writes = i.power_on_hours, i.host_writes_bytes
    if hours == 0 and writes is not None and writes >= 2**30:
        out.append(f"{writes / 2**30:,.1f} GiB written by hosts in 0 power-on hours")
    if hours == 0 and i.percentage_used:
        out.append(f"{i.percentage_used}% of its rated life used in 0 power-on hours")
    if hours is not None and hours > 0 and i.power_cycles == 0:
        out.append(f"{hours:,} power-on hours and 0 power cycles")
    if hours == 0 and i.life_left_percent is not None and i.life_left_percent < 100:
        out.append(f"{i.life_attribute} says {100 - i.life_left_percent}% of its life used in "
                   "0 power-on hours")
    return out


def identity_flags(i: GradeInputs, kernel_bytes: int | None) -> list[str]:
    """Capacities that contradict each other (docs/grading.md "Identity"): what the drive
    reports against what the kernel sees, and an NVMe namespace's NSZE >= NCAP >= NUSE.
    A kernel size of 0 is no size that contradicts: the kernel cannot use the drive's block
    size (a SAS drive of 520-byte blocks, said by discovery and reformatted by the erase)."""
    out = []
    kernel_bytes = kernel_bytes or None
    if kernel_bytes is not None and i.reported_bytes is not None and \
            i.reported_bytes != kernel_bytes:
        out.append(f"the drive reports {i.reported_bytes:,} bytes, the kernel sees "
                   f"{kernel_bytes:,}")
    size, cap, use = i.namespace_bytes
    if size is not None and cap is not None and cap > size:
        out.append(f"namespace capacity {cap:,} bytes exceeds its size {size:,} (NCAP > NSZE)")
    if cap is not None and use is not None and use > cap:
        out.append(f"namespace utilization {use:,} bytes exceeds its capacity {cap:,} "
                   "(NUSE > NCAP)")
    if size is not None and kernel_bytes is not None and size != kernel_bytes:
        out.append(f"the namespace's size is {size:,} bytes, the kernel sees {kernel_bytes:,}")
    return out
