"""The drive's own self-test: ATA SMART short / extended (``smartctl -t``, polled with
``smartctl -c``), the NVMe device self-test (``nvme device-self-test``, polled with
``nvme self-test-log``) and the SAS/SCSI background self-test (``smartctl -t``: SEND
DIAGNOSTIC; polled with ``smartctl -l selftest``: the self-test results log page), parsed
into frozen dataclasses (docs/grading.md "Self-tests").

Every value is untrusted: a status that cannot be read is a ParseError naming the tool.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssdbench.devices.errors import ParseError
from ssdbench.devices.nvme import load_json_object
from ssdbench.devices.smart import counter, dig
from ssdbench.grade.counters import SELF_TEST_FAILED, SelfTest, whole
from ssdbench.grade.scsi import U32, ScsiSelfTest, scsi_self_tests

# the ATA self-test execution status's upper nibble (ATA8-ACS SMART READ DATA byte 363)
ATA_RUNNING = 15
_ATA_WORDS = {0: "completed without error", 1: "aborted by the host", 2: "interrupted by a reset",
              3: "fatal error", 4: "failed: unknown test element", 5: "failed: electrical element",
              6: "failed: servo/seek element", 7: "failed: read element",
              8: "failed: handling damage"}


@dataclass(frozen=True)
class AtaSelfTestState:
    """``smartctl -j -c``: what the drive says about its self-test now."""

    running: bool
    remaining_percent: int | None  # while running (the drive counts down in tens)
    status: str  # the drive's words
    passed: bool | None  # the last one's outcome when not running
    short_minutes: int | None  # the drive's own estimates
    extended_minutes: int | None
    supported: bool


def parse_smartctl_capabilities(text: str) -> AtaSelfTestState:
    obj = load_json_object(text, "smartctl -c")
    status = dig(obj, "ata_smart_data", "self_test", "status")
    if not isinstance(status, dict) or whole(status.get("value")) is None:
        raise ParseError("smartctl -c: no ata_smart_data.self_test.status value")
    value = status["value"]
    nibble = value >> 4
    running = nibble == ATA_RUNNING
    remaining = whole(status.get("remaining_percent"))
    if running and remaining is None:
        remaining = (value & 0x0F) * 10  # the low nibble: tens of percent left
    passed = status.get("passed")
    return AtaSelfTestState(
        running=running, remaining_percent=remaining if running else None,
        status=str(status.get("string") or _ATA_WORDS.get(nibble, f"status {value:#x}")),
        passed=None if running else (passed if isinstance(passed, bool) else (
            True if nibble == 0 else False if nibble in SELF_TEST_FAILED else None)),
        short_minutes=whole(dig(obj, "ata_smart_data", "self_test", "polling_minutes", "short")),
        extended_minutes=whole(dig(obj, "ata_smart_data", "self_test", "polling_minutes",
                                  "extended")),
        supported=dig(obj, "ata_smart_data", "capabilities", "self_tests_supported") is True)


def _norm(key: Any) -> str:
    return "".join(ch for ch in str(key).lower() if ch.isalnum())


@dataclass(frozen=True)
class NvmeSelfTestState:
    """``nvme self-test-log -o json``: the operation running now and the log's newest."""

    running: bool
    operation: int  # 0 none, 1 short, 2 extended, 0xE vendor
    completion_percent: int | None
    latest: SelfTest | None


# NVMe self-test result codes (Device Self-test log, result bits 3:0)
_NVME_RESULTS = {0: "completed without error", 1: "aborted by a Device Self-test command",
                 2: "aborted by a Controller Level Reset", 3: "aborted by a namespace removal",
                 4: "aborted by a Format NVM command", 5: "a fatal or unknown test error",
                 6: "completed with a failed segment (segment unknown)",
                 7: "completed with one or more failed segments", 8: "aborted for an unknown "
                 "reason", 9: "aborted by a sanitize operation", 0xF: "entry not used"}


def parse_nvme_self_test_log(text: str) -> NvmeSelfTestState:
    """nvme-cli 2.x's JSON, its keys compared without case, spaces or underscores
    ("Current Device Self-Test Operation" in 2.3, "current_operation" in later ones)."""
    obj = load_json_object(text, "nvme self-test-log")
    flat = {_norm(k): v for k, v in obj.items()}
    op = whole(flat.get("currentdeviceselftestoperation", flat.get("currentoperation")))
    done = whole(flat.get("currentdeviceselftestcompletion", flat.get("completion")))
    if op is None:
        raise ParseError("nvme self-test-log: no current operation")
    reports = next((v for k, v in flat.items() if k in ("listofvalidreports", "result")
                    and isinstance(v, list)), [])
    latest = None
    for entry in reports:
        e = {_norm(k): v for k, v in entry.items()} if isinstance(entry, dict) else {}
        status = whole(e.get("selftestresult", e.get("deviceselfteststatus")))
        if status is None:
            continue
        code = status & 0x0F
        if code == 0x0F:
            continue  # an unused entry
        kind = whole(e.get("selftestcode")) or (status >> 4)
        latest = SelfTest({1: "short", 2: "extended"}.get(kind, "other"),
                          True if code == 0 else False if code in (5, 6, 7) else None,
                          _NVME_RESULTS.get(code, f"result {code}"),
                          whole(e.get("poweronhours")))
        break
    return NvmeSelfTestState(op != 0, op, done if op != 0 else None, latest)


# SPC self-test results log: result 15 is the entry of the test running now
SCSI_RUNNING = 15


@dataclass(frozen=True)
class ScsiSelfTestLog:
    """``smartctl -j -l selftest`` of a SAS/SCSI drive: its self-test results log (LOG SENSE
    page 10h, twenty entries at most, the most recent first; the one running now has result
    15) and the extended test's length from the control mode page (smartctl writes it only
    when the drive gives one, and only with a log that has entries)."""

    entries: tuple[ScsiSelfTest, ...]
    extended_seconds: int | None

    @property
    def running(self) -> bool:
        return bool(self.entries) and self.entries[0].result == SCSI_RUNNING

    @property
    def signature(self) -> tuple[tuple[str, int, int | None], ...]:
        """What tells one state of the log from another: a new entry shifts every entry
        down (twenty identical entries at the same power-on hour would hide it)."""
        return tuple((e.kind, e.result, e.power_on_hours) for e in self.entries)

    @property
    def latest(self) -> SelfTest | None:
        """The newest entry as the grade takes it (None: an empty log, or a test running)."""
        if not self.entries or self.running:
            return None
        e = self.entries[0]
        return SelfTest(e.kind, e.passed, e.status or f"result {e.result}", e.power_on_hours)


def parse_scsi_self_test_log(text: str) -> ScsiSelfTestLog:
    """smartctl 7.x's JSON: ``scsi_self_test_0`` .. ``_19`` and
    ``scsi_extended_self_test_seconds``. A member of the wrong shape or a number no drive
    reports is a ParseError; no entries is an empty log (a drive never tested, or one whose
    log page smartctl could not read)."""
    obj = load_json_object(text, "smartctl -l selftest")
    seconds = counter(obj.get("scsi_extended_self_test_seconds"),
                      "scsi_extended_self_test_seconds", U32)
    return ScsiSelfTestLog(scsi_self_tests(obj), seconds or None)
