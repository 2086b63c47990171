"""The self-test stage (plan parameter ``self_test``: none, short, extended): the drive's own
test, started, polled with its progress and an ETA from the drive's own estimate, aborted
on cancel; run.json ``self_test``. Read-only for the data (the drive reads its own media).

ATA (and SATA behind a SAT bridge): ``smartctl -t short|long``, ``smartctl -c`` every few
seconds, ``smartctl -X`` to abort. SAS/SCSI (a drive that answers SCSI itself, not ATA behind
SAT): ``smartctl -t short|long`` (SEND DIAGNOSTIC, a background self-test), its self-test
results log through ``smartctl -l selftest`` every few seconds (the entry of the test running
now, then a new entry with its result) and REQUEST SENSE's progress (``sg_requests
--progress``) where the drive gives one, ``smartctl -X`` to abort. NVMe: ``nvme
device-self-test -s 1|2``, ``nvme self-test-log -o json``, ``-s 0xf`` to abort. A drive that
refuses (no SMART, no self-test support, a loop device) or logs nothing is recorded as not
run, with the reason: the grade then says the self-test is missing, never that it passed.
"""

from __future__ import annotations

import json
import time
from dataclasses import asdict, dataclass
from typing import Any

from ssdbench import jsonfile
from ssdbench.devices.errors import ParseError
from ssdbench.devices.smart import SMARTCTL_OK_CODES, dig
from ssdbench.erase.scsi import SCSI_TRANSPORTS, parse_progress
from ssdbench.grade.counters import SelfTest
from ssdbench.grade.selftest import (
    parse_nvme_self_test_log,
    parse_scsi_self_test_log,
    parse_smartctl_capabilities,
)
from ssdbench.stages.base import RunContext, StageCancelled, StageFailed, StageNotAvailable
from ssdbench.system import CommandError

POLL_S = 5.0
# the drive's estimate times this, plus this, before the stage gives up on a test that runs on
SLACK, SLACK_S = 3.0, 300.0
NVME_SHORT_S = 120.0  # NVMe's short test is at most two minutes (NVMe base specification)
# SPC-4: a short self-test should take at most two minutes; an extended one the control mode
# page's estimate, else a day (a large SAS hard disk announces about 24 h)
SCSI_SHORT_S, SCSI_LONG_S = 120.0, 86400.0
SAT_VENDOR = "ATA"  # a SATA drive behind a SCSI/ATA Translation layer (devices/discover.py)


@dataclass
class SelfTestStage:
    name: str = "self-test"
    poll_s: float = POLL_S

    def execute(self, ctx: RunContext) -> None:
        kind = str(getattr(ctx.params, "self_test", "none") or "none")
        if kind == "none":
            return
        name = ctx.target.kernel_name or ""
        runner: _Nvme | _Scsi | _Ata
        if name.startswith("nvme"):
            runner = _Nvme(ctx, kind)
        elif native_scsi(_identity(ctx)):
            runner = _Scsi(ctx, kind)
        else:
            runner = _Ata(ctx, kind)
        try:
            result = runner.run(self)
        except StageCancelled:
            runner.abort()
            raise
        ctx.record.set("self_test", result)
        if result.get("available") is False or result.get("ran") is False:
            # no self-test, one the drive refused, or one it never logged: the stage is not
            # "done" (the screen said so for a refused test); the grade still says missing
            raise StageNotAvailable(f"self-test ({kind}) {result['summary']}")
        ctx.emit(self.name, "running", f"self-test ({kind}): {result['summary']}")


def _record(kind: str, test: SelfTest | None, seconds: float, why: str = "", *,
            available: bool = True) -> dict[str, Any]:
    """run.json ``self_test``; ``available`` False: the drive has no self-test to run (the
    stage is then "not available", #45 H)."""
    if test is None:
        return {"kind": kind, "ran": False, "reason": why, "seconds": round(seconds, 1),
                "summary": f"not run: {why}", **({} if available else {"available": False})}
    words = {True: "passed", False: "FAILED", None: "no verdict"}[test.passed]
    return {"kind": kind, "ran": True, "result": asdict(test), "seconds": round(seconds, 1),
            "summary": f"{words} ({test.status})"}


class _Ata:
    def __init__(self, ctx: RunContext, kind: str) -> None:
        self.ctx, self.kind = ctx, kind
        self.path = ctx.target.path

    def _smartctl(self, *args: str) -> str:
        return self.ctx.host.runner.run(["smartctl", "-j", *args, self.path],
                                        ok_codes=SMARTCTL_OK_CODES, timeout=120).text

    def abort(self) -> None:
        try:
            self._smartctl("-X")
        except CommandError:
            pass

    def _start(self) -> str:
        """``smartctl -t short|long``; why the drive refused it, "" when it started."""
        try:
            return smartctl_refused(self._smartctl("-t", "short" if self.kind == "short"
                                                   else "long"))
        except CommandError as exc:
            return str(exc)

    def _newest(self) -> tuple[Any, ...] | None:
        """The newest entry of the drive's self-test log (kind, hours, status, count)."""
        try:
            obj = json.loads(self._smartctl("-l", "selftest"))
        except (CommandError, ValueError, RecursionError):
            return None
        for log in ("extended", "standard"):
            section = dig(obj, "ata_smart_self_test_log", log)
            table = section.get("table") if isinstance(section, dict) else None
            if isinstance(table, list) and table and isinstance(table[0], dict):
                e = table[0]
                return (log, section.get("count"), dig(e, "type", "value"),
                        e.get("lifetime_hours"), dig(e, "status", "value"))
        return None

    def run(self, stage: SelfTestStage) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            state = parse_smartctl_capabilities(self._smartctl("-c"))
        except CommandError as exc:
            return _record(self.kind, None, 0.0, f"smartctl -c: {exc}", available=False)
        except ParseError as exc:
            return _record(self.kind, None, 0.0, capabilities_missing(str(exc)),
                           available=False)
        if not state.supported:
            return _record(self.kind, None, 0.0, "the drive does not support self-tests",
                           available=False)
        minutes = state.short_minutes if self.kind == "short" else state.extended_minutes
        before = self._newest()
        refused = self._start()
        if refused:
            return _record(self.kind, None, 0.0, f"smartctl -t refused: {refused}")
        budget = (minutes or 2) * 60.0 * SLACK + SLACK_S
        seen_running = False
        while True:
            if stage_wait(self.ctx, stage.poll_s):
                raise StageCancelled("cancelled during the self-test")
            try:
                state = parse_smartctl_capabilities(self._smartctl("-c"))
            except (CommandError, ParseError) as exc:
                raise StageFailed(f"self-test: the drive stopped answering: {exc}") from None
            elapsed = time.monotonic() - t0
            if not state.running:
                # never seen running (a quick drive, or one that ignored the command): the
                # status is this test's only if the drive's log has a new entry
                if not seen_running and self._newest() == before:
                    return _record(self.kind, None, elapsed, "the drive logged no new "
                                   "self-test: the status it shows is an earlier test's")
                test = SelfTest(self.kind, state.passed, state.status)
                return _record(self.kind, test, elapsed)
            seen_running = True
            left = state.remaining_percent
            fraction = None if left is None else max(0.0, min(1.0, 1 - left / 100))
            eta = None if minutes is None else max(0.0, minutes * 60.0 - elapsed)
            self.ctx.emit(stage.name, "running", f"{state.status}", fraction=fraction,
                          eta_s=eta)
            if elapsed > budget:
                self.abort()
                raise StageFailed(f"self-test still running after {elapsed:.0f} s (the drive "
                                  f"estimated {minutes} min): aborted")


class _Nvme:
    def __init__(self, ctx: RunContext, kind: str) -> None:
        self.ctx, self.kind = ctx, kind
        self.path = ctx.target.path

    def _nvme(self, *args: str) -> str:
        return self.ctx.host.runner.run(["nvme", *args], timeout=120).text

    def abort(self) -> None:
        try:
            self._nvme("device-self-test", self.path, "-s", "0xf")
        except CommandError:
            pass

    def run(self, stage: SelfTestStage) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            self._nvme("device-self-test", self.path, "-s", "1" if self.kind == "short" else "2")
        except CommandError as exc:
            return _record(self.kind, None, 0.0, f"nvme device-self-test refused: {exc}")
        budget = NVME_SHORT_S * SLACK + SLACK_S if self.kind == "short" else 6 * 3600.0
        while True:
            try:
                state = parse_nvme_self_test_log(self._nvme("self-test-log", self.path,
                                                            "-o", "json"))
            except (CommandError, ParseError) as exc:
                raise StageFailed(f"self-test: the drive stopped answering: {exc}") from None
            elapsed = time.monotonic() - t0
            if not state.running:
                return _record(self.kind, state.latest, elapsed,
                               "the drive's self-test log has no result")
            fraction = None if state.completion_percent is None else (
                state.completion_percent / 100)
            eta = None
            if fraction and fraction > 0.05:
                eta = elapsed / fraction - elapsed
            elif self.kind == "short":
                eta = max(0.0, NVME_SHORT_S - elapsed)
            self.ctx.emit(stage.name, "running", f"{state.completion_percent}% done",
                          fraction=fraction, eta_s=eta)
            if elapsed > budget:
                self.abort()
                raise StageFailed(f"self-test still running after {elapsed:.0f} s: aborted")
            if stage_wait(self.ctx, stage.poll_s):
                raise StageCancelled("cancelled during the self-test")


class _Scsi(_Ata):
    """smartctl as for ATA (its -t and -X are SEND DIAGNOSTIC on SCSI), the SCSI log and
    REQUEST SENSE's progress instead of ``smartctl -c``."""

    def _progress(self) -> float | None:
        """REQUEST SENSE's progress indication (percent done), None when the drive gives none
        (many do not for a self-test) or sg_requests cannot say."""
        try:
            return parse_progress(self.ctx.host.runner.run(
                ["sg_requests", "--progress", self.path], timeout=60).text)
        except (CommandError, ParseError):
            return None

    def run(self, stage: SelfTestStage) -> dict[str, Any]:
        t0 = time.monotonic()
        try:
            before = parse_scsi_self_test_log(self._smartctl("-l", "selftest"))
        except CommandError as exc:
            return _record(self.kind, None, 0.0, f"smartctl -l selftest: {exc}",
                           available=False)
        except ParseError as exc:
            return _record(self.kind, None, 0.0, str(exc), available=False)
        if before.running:
            return _record(self.kind, None, 0.0, "a self-test started before this run is "
                           "still running (the drive's self-test log says so)")
        refused = self._start()
        if refused:
            return _record(self.kind, None, 0.0, f"smartctl -t refused: {refused}")
        estimate = SCSI_SHORT_S if self.kind == "short" else (
            before.extended_seconds or SCSI_LONG_S)
        budget = estimate * SLACK + SLACK_S
        while True:
            if stage_wait(self.ctx, stage.poll_s):
                raise StageCancelled("cancelled during the self-test")
            try:
                log = parse_scsi_self_test_log(self._smartctl("-l", "selftest"))
            except (CommandError, ParseError) as exc:
                raise StageFailed(f"self-test: the drive stopped answering: {exc}") from None
            elapsed = time.monotonic() - t0
            if not log.running:
                # the end is a new entry in the log: without one the newest is an earlier
                # test's (a drive that ignored SEND DIAGNOSTIC, or one that logs nothing)
                test = log.latest
                if log.signature == before.signature or test is None:
                    return _record(self.kind, None, elapsed, "the drive logged no new "
                                   "self-test: its self-test log shows no result of this one")
                return _record(self.kind, test, elapsed)
            done = self._progress()
            fraction = None if done is None else max(0.0, min(1.0, done / 100))
            if fraction is not None and fraction > 0.05:
                eta: float | None = elapsed / fraction - elapsed
            elif self.kind == "short" or before.extended_seconds:
                eta = max(0.0, estimate - elapsed)
            else:
                eta = None
            status = log.entries[0].status or "self-test in progress"
            self.ctx.emit(stage.name, "running", status if done is None
                          else f"{status} ({done:.0f}% done)", fraction=fraction, eta_s=eta)
            if elapsed > budget:
                self.abort()
                raise StageFailed(f"self-test still running after {elapsed:.0f} s: aborted")


def _identity(ctx: RunContext) -> object:
    """Discovery's view of the drive: its drive.json beside the run (run.json's ``drive``
    names the drive only)."""
    try:
        data = jsonfile.read(ctx.run_dir.parent / "drive.json")
    except (OSError, ValueError):
        return None
    return data.get("drive") if isinstance(data, dict) else None


def native_scsi(drive: object) -> bool:
    """drive.json's ``drive`` (discovery's) is a SAS/SCSI drive that answers SCSI itself: not a
    SATA drive behind SAT (INQUIRY vendor "ATA") nor one opted in to ATA pass-through, which
    keep the ATA self-test."""
    if not isinstance(drive, dict) or drive.get("transport") not in SCSI_TRANSPORTS:
        return False
    vendor = drive.get("vendor")
    return drive.get("ata_passthrough") is not True and not (
        isinstance(vendor, str) and vendor.strip().upper() == SAT_VENDOR)


def capabilities_missing(error: str) -> str:
    """Why ``smartctl -c`` gave no self-test, in words: once its name, never a JSON key
    (#45 H: "smartctl -c: smartctl -c: no ata_smart_data.self_test.status value")."""
    if "self_test.status" in error:
        return "smartctl -c shows no self-test status (the drive reports no SMART self-test)"
    return error if error.startswith("smartctl -c") else f"smartctl -c: {error}"


def smartctl_refused(text: str) -> str:
    """Why smartctl did not start the test ("" when it did): its exit status's bits 0-2 (the
    command line, the device open, a SMART command failed) with its own words."""
    try:
        obj = json.loads(text)
    except (ValueError, RecursionError):
        return "smartctl's answer is not JSON"
    status = dig(obj, "smartctl", "exit_status")
    if not isinstance(status, int) or status & 0x07:
        messages = dig(obj, "smartctl", "messages")
        said = "; ".join(str(m.get("string", "")) for m in messages if isinstance(m, dict)) \
            if isinstance(messages, list) else ""
        return said or f"exit status {status}"
    return ""


def stage_wait(ctx: RunContext, seconds: float) -> bool:
    """Wait, or return True at once when the user cancels."""
    return ctx.cancel.wait(seconds)
