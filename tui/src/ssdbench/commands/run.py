"""`ssdbench run DRIVE --destroy ID`: erase, fill, torture (and the TRIM run) on one drive.

Safety first: the drive comes from discovery; a protected drive is refused with the
reasons; nothing is written without ``--destroy`` naming the drive's consent id (its
serial, or the kernel name when it has none). Ctrl-C stops fio cleanly, the run is marked
"cancelled" and the exit code is 130.
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from collections.abc import Callable, Mapping
from datetime import UTC, datetime
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ssdbench import __version__
from ssdbench.exitcodes import ExitCode
from ssdbench.fio.runner import fio_version
from ssdbench.progress import Progress
from ssdbench.results import atomic
from ssdbench.results.layout import RunRecord, drive_dir_name, run_name
from ssdbench.stages.base import (
    RunContext,
    SecureErase,
    StageFailed,
    resolve_target,
    run_stages,
)
from ssdbench.stages.params import ParamError, RunParams, build_params
from ssdbench.stages.plans import stages_for
from ssdbench.system import CommandError, CommandLogFile, Host, live_host

DEFAULT_RESULTS = Path("/run/ssdbench/results/ssdbench")
RUN_CHOICES = ("consistency", "trim", "all", "diagnose")


class _Refused(Exception):
    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="test a drive: erase, fill, torture; TRIM validation (destroys data)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("drive", metavar="DRIVE", help="/dev path, kernel name or serial")
    p.add_argument("--destroy", metavar="CONSENT_ID",
                   help="the drive's serial (kernel name when it has none): consent to wipe it")
    p.add_argument("--run", choices=RUN_CHOICES, default="consistency",
                   help="consistency (default), trim, all (both), diagnose (read-only)")
    p.add_argument("--op", type=int, metavar="PERCENT", default=None,
                   help="extra over-provisioning percent (needs --target PARTITION for now)")
    p.add_argument("--target", metavar="PATH",
                   help="test span: a partition of DRIVE (default: the whole drive)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="plan parameter, e.g. torture_seconds=600 (repeatable)")
    p.add_argument("--config", type=Path, metavar="FILE", help="plan parameters (TOML)")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help=f"results folder (default {DEFAULT_RESULTS})")
    p.add_argument("--erase-fallback", choices=("fail", "discard"), default=None,
                   help="without a secure-erase method: fail, or discard (not secure-erased)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=main)


# ---- the couplings with the other rooms, one small function each ----

def locate_drive(host: Host, spec: str) -> Any:
    """The discovered drive named by spec (devices room); raises _Refused when unknown."""
    from ssdbench.devices import DriveNotFound, discover, find_drive

    try:
        return find_drive(discover(host, include_all=True), spec)
    except DriveNotFound as exc:
        raise _Refused(ExitCode.NO_SUCH_DRIVE, str(exc)) from None


def secure_erase_hook(drive: Any, results_root: Path) -> SecureErase | None:
    """The erase room's secure erase for this drive, or None (then erase_fallback applies)."""
    try:
        from ssdbench import erase
    except ImportError:
        return None
    methods = set(getattr(drive, "erase_methods", ()) or ())
    if not methods & set(getattr(erase, "SECURE_METHODS", ())):
        return None

    hook = erase.stage_hook(
        erase.target_from_drive(drive),
        journal=erase.JsonPasswordJournal(results_root / "erase-journal.json"),
    )

    def run(ctx: RunContext) -> Mapping[str, Any]:
        try:
            return hook(ctx)
        except erase.EraseError as exc:
            raise StageFailed(f"secure erase failed: {exc}") from exc

    return run


def render_reports(drive_dir: Path, root: Path, err: TextIO) -> None:
    """The report room's summary, charts and HTML, when that module is there."""
    try:
        from ssdbench import report
    except ImportError:
        report = None  # type: ignore[assignment]
    render_drive: Callable[[Path], object] | None = getattr(report, "render_drive", None)
    render_index: Callable[[Path], object] | None = getattr(report, "render_index", None)
    if render_drive is None or render_index is None:
        print("ssdbench: the report module is not available in this build; the CSVs and fio "
              f"logs are complete, run `ssdbench report {root}` later", file=err)
        return
    try:
        render_drive(drive_dir)
        render_index(root)
    except Exception as exc:  # the measurements are saved; a report bug must not hide that
        print(f"ssdbench: report failed ({type(exc).__name__}: {exc}); the results are "
              f"saved, run `ssdbench report {root}` to retry", file=err)


# ---- progress on stderr ----

class StderrProgress:
    """At most one line a second per stage, plus every state change."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._last: dict[tuple[str, str], float] = {}
        self._lock = threading.Lock()

    def __call__(self, ev: Progress) -> None:
        key = (ev.run, ev.stage)
        now = time.monotonic()
        with self._lock:
            if ev.state == "running" and now - self._last.get(key, -10.0) < 1.0:
                return
            self._last[key] = now
        parts = [f"ssdbench: {ev.drive} {ev.run} {ev.stage} {ev.state}"]
        if ev.fraction is not None:
            parts.append(f"{ev.fraction * 100:5.1f}%")
        if ev.eta_s is not None:
            parts.append(f"eta {int(ev.eta_s) // 60:d}:{int(ev.eta_s) % 60:02d}")
        if ev.iops is not None:
            parts.append(f"{ev.iops:,.0f} IOPS")
        if ev.mib_s is not None:
            parts.append(f"{ev.mib_s:,.1f} MiB/s")
        if ev.message and ev.message not in ("started", ev.state) and ev.fraction is None:
            parts.append(ev.message)
        print(" ".join(parts), file=self.out, flush=True)


# ---- the command ----

def _kinds(choice: str) -> list[str]:
    return ["consistency", "trim"] if choice == "all" else [choice]


def _check_target(host: Host, drive: Any, target: str | None) -> str:
    if target is None:
        return str(drive.path)
    name = Path(target).name
    if target == drive.path or host.fs.exists(f"/sys/class/block/{drive.name}/{name}"):
        return target
    raise _Refused(ExitCode.REFUSED,
                   f"--target {target} is not {drive.path} or one of its partitions")


def _tools(host: Host, params: RunParams) -> dict[str, Any]:
    try:
        fio = fio_version(host.runner)
    except CommandError as exc:
        raise _Refused(ExitCode.UNSUPPORTED, f"fio is not usable: {exc}") from None
    kernel = (host.fs.read_text("/proc/sys/kernel/osrelease") or "").strip() or None
    return {"ssdbench": __version__, "fio": fio, "kernel": kernel, "ioengine": params.ioengine}


def main(args: argparse.Namespace, *, host: Host | None = None,
         err: TextIO | None = None) -> int:
    err = err or sys.stderr
    cancel = threading.Event()
    previous = None
    if threading.current_thread() is threading.main_thread():
        def on_sigint(_signum: int, _frame: FrameType | None) -> None:
            if cancel.is_set():
                raise KeyboardInterrupt
            print("ssdbench: cancelling (stopping fio cleanly; Ctrl-C again to abort)",
                  file=err, flush=True)
            cancel.set()

        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        return _run(args, host or live_host(), err, cancel)
    except _Refused as exc:
        print(f"ssdbench run: {exc}", file=err)
        return int(exc.code)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _run(args: argparse.Namespace, host: Host, err: TextIO, cancel: threading.Event) -> int:
    try:
        params = build_params(args.config, args.sets)
        extra: dict[str, object] = {}
        if args.op is not None:
            extra["op_percent"] = args.op
        if args.erase_fallback is not None:
            extra["erase_fallback"] = args.erase_fallback
        params = params.with_values(extra, source="command line")
    except ParamError as exc:
        raise _Refused(ExitCode.USAGE, str(exc)) from None

    drive = locate_drive(host, args.drive)
    kinds = _kinds(args.run)
    destructive = kinds != ["diagnose"]
    if destructive:
        if drive.protected:
            reasons = "; ".join(drive.protect_reasons) or "protected"
            raise _Refused(ExitCode.REFUSED,
                           f"{drive.path} is protected and is never written: {reasons}")
        if args.destroy is None or args.destroy != drive.consent_id:
            raise _Refused(
                ExitCode.REFUSED,
                f"refusing to write to {drive.path} ({drive.model}): --destroy must name "
                "this drive's serial exactly (its kernel name when it has no serial; see "
                "`ssdbench list`)",
            )
    target_path = _check_target(host, drive, args.target)
    if params.op_percent and target_path == drive.path and destructive:
        raise _Refused(ExitCode.USAGE,
                       f"--op {params.op_percent}: creating the OP partition is not built yet; "
                       "give the partition to test with --target PARTITION")
    try:
        target = resolve_target(host, target_path)
    except StageFailed as exc:
        raise _Refused(ExitCode.NO_SUCH_DRIVE, str(exc)) from None

    root = Path(args.results) if args.results else DEFAULT_RESULTS
    started = datetime.now(UTC)
    drive_dir = root / drive_dir_name(started, drive.model or "unknown",
                                      drive.serial or drive.name)
    drive_dir.mkdir(parents=True, exist_ok=True)
    log_sink = CommandLogFile(drive_dir / "log.txt")
    host.runner.add_sink(log_sink)
    try:
        tools = _tools(host, params)
    except _Refused:
        host.runner.remove_sink(log_sink)
        raise
    drive_json: dict[str, Any] = {"drive": drive.to_json(), "erases": [], "runs": []}
    atomic.write_json(drive_dir / "drive.json", drive_json)
    progress = (lambda _ev: None) if args.quiet else StderrProgress(err)
    print(f"ssdbench: results in {drive_dir}", file=err, flush=True)

    states: list[str] = []
    try:
        for kind in kinds:
            name = run_name(kind, params.op_percent if kind == "consistency" else 0)
            run_dir = drive_dir / name
            run_dir.mkdir(parents=True, exist_ok=True)
            record = RunRecord.create(
                run_dir, run=name, kind=kind,
                drive={"name": drive.name, "path": drive.path, "model": drive.model,
                       "serial": drive.serial, "firmware": drive.firmware,
                       "size_bytes": drive.size_bytes},
                target=target.record(params.op_percent if kind == "consistency" else 0),
                params=params.as_record(), tools=tools,
            )
            ctx = RunContext(
                host=host, run_dir=run_dir, drive_name=drive.name, run_name=name,
                target=target, params=params, record=record, progress=progress,
                cancel=cancel, secure_erase=secure_erase_hook(drive, root),
            )
            state = run_stages(ctx, stages_for(kind))
            states.append(state)
            if record.data.get("erase"):
                drive_json["erases"].append({"run": name, **record.data["erase"]})
            drive_json["runs"].append({"run": name, "state": state,
                                       "error": record.data.get("error")})
            atomic.write_json(drive_dir / "drive.json", drive_json)
            print(f"ssdbench: {name}: {state}"
                  + (f": {record.data['error']}" if record.data.get("error") else ""),
                  file=err, flush=True)
            if state != "done":
                break
    finally:
        host.runner.remove_sink(log_sink)
    render_reports(drive_dir, root, err)
    if "cancelled" in states:
        return int(ExitCode.INTERRUPTED)
    if any(s != "done" for s in states):
        return int(ExitCode.FAILURE)
    print(str(drive_dir))
    return int(ExitCode.OK)
