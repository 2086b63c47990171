"""The engine facade: "run this plan on these drives". The CLI, the TUI and kiosk mode call
:func:`check_consent`, :func:`run_plan` / :func:`run_plans` and :func:`finish`; nothing else
orchestrates runs.

Safety is checked here, not in the front ends: a protected drive is refused, and a plan that
writes needs ``consent == drive.consent_id``. ``run_plan`` raises :class:`Refused` before it
writes anything; once the drive folder exists it never raises for a failed stage: the
outcome says what happened (:class:`DriveOutcome`).
"""

from __future__ import annotations

import os
import shlex
import sys
import threading
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any

from ssdbench import __version__, jsonfile
from ssdbench.devices import Drive
from ssdbench.devices.host import host_record
from ssdbench.exitcodes import ExitCode
from ssdbench.fio.runner import fio_version
from ssdbench.plan.journal import Journal
from ssdbench.plan.plans import Plan, RunSpec
from ssdbench.progress import Progress, ProgressCallback, ignore_progress
from ssdbench.results import atomic
from ssdbench.results.layout import RunRecord, drive_dir_name, journal_drive_dir
from ssdbench.stages.base import RunContext, StageFailed, resolve_target, run_stages
from ssdbench.stages.params import RunParams
from ssdbench.stages.plans import stages_for
from ssdbench.stages.secure_erase import ERASE_JOURNAL, secure_erase_hook
from ssdbench.stages.sensors import DriveWatch, environment_record, health
from ssdbench.system import (
    CommandError,
    CommandLogFile,
    CommandSink,
    Host,
    Result,
    Runner,
    RunningProcess,
)

_REPORT_LOCK = threading.Lock()  # matplotlib is not thread safe: one report at a time


class Refused(Exception):
    """Nothing was written: the drive is protected, consent is missing or wrong, the drive
    is unknown or fio is unusable. ``code`` is the command line's exit code."""

    def __init__(self, code: ExitCode, message: str) -> None:
        super().__init__(message)
        self.code = code


@dataclass(frozen=True)
class RunOutcome:
    name: str
    state: str  # done | failed | cancelled | skipped
    error: str | None
    run_dir: Path | None
    resumed: bool = False  # finished before a power loss, kept as it was


@dataclass(frozen=True)
class DriveOutcome:
    drive: str  # kernel name
    consent_id: str
    drive_dir: Path | None
    runs: tuple[RunOutcome, ...]
    notes: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        states = [r.state for r in self.runs]
        for s in ("cancelled", "failed"):
            if s in states:
                return s
        return "done" if states and all(s == "done" for s in states) else "failed"


# ---- safety ----

def check_consent(drive: Drive, plan: Plan, consent: str | None) -> None:
    """Raise Refused unless ``plan`` may run on ``drive`` with this consent."""
    if not plan.destructive:
        return
    if drive.protected:
        reasons = "; ".join(drive.protect_reasons) or "protected"
        raise Refused(ExitCode.REFUSED,
                      f"{drive.path} is protected and is never written: {reasons}")
    if drive.needs_scsi_reformat and not (
            all(r.kind == "erase" for r in plan.runs) and plan.params.scsi_reformat_512):
        raise Refused(ExitCode.REFUSED,
                      f"{drive.path} has {drive.scsi_block_size}-byte sectors (the kernel "
                      "shows capacity 0): only the erase plan with scsi_reformat_512 = true "
                      "can use it (it reformats the drive to 512 first)")
    if consent is None or consent != drive.consent_id:
        given = "no --destroy was given" if consent is None else f"--destroy {consent!r} was given"
        model = f" ({drive.model})" if drive.model else ""
        raise Refused(
            ExitCode.REFUSED,
            f"refusing to write to {drive.path}{model}: {given}; consent (--destroy, or "
            f"`destroy` in the kiosk config) must name its consent id {drive.consent_id!r} "
            "exactly (the serial; the kernel name when it has none; see `ssdbench list`)",
        )


def locate_drive(host: Host, spec: str) -> Drive:
    """The discovered drive named by spec (path, kernel name or serial); Refused when unknown."""
    from ssdbench.devices import DriveNotFound, discover, find_drive

    drives = discover(host, include_all=True)
    try:
        return find_drive(drives, spec)
    except DriveNotFound:
        # name the drives `ssdbench list` shows, not every loop and zram device
        from ssdbench.devices.discover import is_listed

        listed = [d for d in drives if is_listed(host, d.name)]
        known = ", ".join(f"{d.path} ({d.serial or 'no serial'})" for d in listed) or "none"
        raise Refused(ExitCode.NO_SUCH_DRIVE,
                      f"no drive {spec!r}; drives found: {known}") from None


def locate_journal_drive(host: Host, key: str, entry: Mapping[str, Any]) -> Drive:
    """The drive a journal entry recorded, found by its identity (serial, model, WWN,
    capacity, place), never by its serial alone: two drives may report one serial. An
    entry without an identity (an older ssdbench) by its key, as before (the engine then
    finds no entry of this drive and runs the plan afresh). Refused when none matches."""
    from ssdbench.devices import discover
    from ssdbench.devices.model import DriveIdentity
    from ssdbench.untrusted import shown

    if "identity" not in entry:
        return locate_drive(host, key)
    want = DriveIdentity.from_json(entry.get("identity"))
    drives = discover(host, include_all=True)
    for d in drives:
        if want is not None and d.identity == want:
            return d
    known = ", ".join(f"{d.path} ({d.serial or 'no serial'})" for d in drives
                      if d.consent_id == entry.get("consent_id")) or "none with its serial"
    raise Refused(ExitCode.NO_SUCH_DRIVE,
                  f"--resume: the drive of journal entry {shown(key)!r} is not here (no drive "
                  f"has its identity: serial, model, WWN, capacity and place; {known})")


# ---- the erase room's secure erase ----

def recover_password(host: Host, drive: Drive, results_root: Path) -> list[str]:
    """Remove an ATA password an interrupted erase left (the erase room's journal)."""
    try:
        from ssdbench import erase
    except ImportError:
        return []
    if drive.ata_security is None:
        return []
    journal = erase.JsonPasswordJournal(results_root / ERASE_JOURNAL)
    return erase.recover_leftover_password(host, erase.target_from_drive(drive), journal)


# ---- CPU pinning: each drive's fio on its own CPU ----

def cpu_list() -> list[int]:
    try:
        return sorted(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        return list(range(os.cpu_count() or 1))


class PinnedRunner:
    """A Runner that starts fio under ``taskset -c CPU`` (taskset execs fio: same pid)."""

    def __init__(self, inner: Runner, cpu: int) -> None:
        self.inner = inner
        self.cpu = cpu

    def run(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
            timeout: float | None = 60.0, env: Mapping[str, str] | None = None) -> Result:
        return self.inner.run(argv, ok_codes=ok_codes, timeout=timeout, env=env)

    def stream(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
               env: Mapping[str, str] | None = None,
               cwd: str | Path | None = None) -> RunningProcess:
        if argv and os.path.basename(argv[0]) == "fio":
            argv = ["taskset", "-c", str(self.cpu), *argv]
        return self.inner.stream(argv, ok_codes=ok_codes, env=env, cwd=cwd)

    def add_sink(self, sink: CommandSink) -> None:
        self.inner.add_sink(sink)

    def remove_sink(self, sink: CommandSink) -> None:
        self.inner.remove_sink(sink)


# ---- reports ----

def render_drive_report(drive_dir: Path, *, svg: bool = True) -> str | None:
    """The report room's summary/charts/HTML for one drive; a problem as text, never raised.
    ``svg``: every chart also as SVG (PNG always)."""
    try:
        from ssdbench.report import render_drive
    except ImportError:
        return (f"the report module is not in this build; run `ssdbench report "
                f"{drive_dir.parent}` later")
    try:
        with _REPORT_LOCK:
            render_drive(drive_dir, svg=svg)
    except Exception as exc:  # the measurements are saved; a report bug must not hide that
        return (f"report failed ({type(exc).__name__}: {exc}); the results are saved, run "
                f"`ssdbench report {drive_dir.parent}` to retry")
    return None


# a hang guard for a report in a process of its own (a slow machine draws a 24-h run's
# charts in minutes; emulated, a short run's take one)
REPORT_APART_TIMEOUT_S = 3600.0


def render_apart(what: str, path: Path, runner: Runner, *, svg: bool = True) -> str | None:
    """One drive's report (``what`` = "drive") or the results index ("index") drawn by a
    process of its own (``ssdbench.report.apart``, started through ``runner``: log.txt keeps
    the command and its duration); a problem as text, never raised. For a front end whose
    own threads draw a screen (the TUI): matplotlib does not share its interpreter."""
    argv = [sys.executable, "-m", "ssdbench.report.apart", what, str(path)]
    if not svg:
        argv.append("--no-svg")
    retry = f"run `ssdbench report {path if what == 'index' else path.parent}` to retry"
    try:
        runner.run(argv, timeout=REPORT_APART_TIMEOUT_S, env=_report_env())
    except CommandError as exc:
        tail = exc.stderr_tail.strip().splitlines()
        why = tail[-1] if tail else exc.reason
        return f"{'index' if what == 'index' else 'report'} failed ({why}); {retry}"
    return None


def _report_env() -> dict[str, str]:
    """What a report process needs of this one's environment (a child gets a fixed one,
    system.base_environment): this ssdbench on its import path (a source tree, a test's
    interpreter without the package installed) and matplotlib's config and font cache
    (MPLCONFIGDIR: the image builds the cache in advance; without it every report process
    would build one, tens of seconds under emulation)."""
    import ssdbench

    root = str(Path(ssdbench.__file__).resolve().parents[1])
    env = {"PYTHONPATH": os.pathsep.join(p for p in (root, os.environ.get("PYTHONPATH"))
                                         if p)}
    for key in ("MPLCONFIGDIR", "HOME"):
        if os.environ.get(key):
            env[key] = os.environ[key]
    return env


def finish(results_root: Path, *, svg: bool = True, runner: Runner | None = None) -> list[str]:
    """After every drive: index.html and summary.csv of the results root; problems. With
    ``runner``, drawn by a process of its own (:func:`render_apart`)."""
    if runner is not None:
        if not results_root.is_dir():
            return []
        problem = render_apart("index", results_root, runner, svg=svg)
        return [problem] if problem else []
    try:
        from ssdbench.report import render_index
    except ImportError:
        return []
    try:
        with _REPORT_LOCK:
            if results_root.is_dir():
                render_index(results_root, svg=svg)
    except Exception as exc:
        return [f"index failed ({type(exc).__name__}: {exc}); run `ssdbench report "
                f"{results_root}` to retry"]
    return []


# ---- running a plan ----

def tools_record(host: Host, params: RunParams) -> dict[str, Any]:
    try:
        fio = fio_version(host.runner)
    except CommandError as exc:
        raise Refused(ExitCode.UNSUPPORTED, f"fio is not usable: {exc}") from None
    kernel = (host.fs.read_text("/proc/sys/kernel/osrelease") or "").strip() or None
    return {"ssdbench": __version__, "fio": fio, "kernel": kernel, "ioengine": params.ioengine}


def _drive_record(drive: Drive) -> dict[str, Any]:
    return {"name": drive.name, "path": drive.path, "model": drive.model,
            "serial": drive.serial, "firmware": drive.firmware, "size_bytes": drive.size_bytes}


def _set_aside(run_dir: Path, reason: str) -> Path:
    """An unfinished run folder from before a power loss or Ctrl-C: its run.json says
    "interrupted" (unless it already says cancelled/failed) and the folder becomes
    ``<run>-interrupted-<n>`` so the redone run gets a clean folder. Both are reported."""
    record_path = run_dir / "run.json"
    label = "interrupted"
    try:

        data = jsonfile.read(record_path)
        if data.get("state") == "running":
            data["state"] = "interrupted"
            running = [s["name"] for s in data.get("stages", []) if s.get("state") == "running"]
            for s in data.get("stages", []):
                if s.get("state") in ("running", "pending"):
                    s["state"] = "interrupted" if s.get("state") == "running" else "skipped"
            data["error"] = (f"interrupted during stage {running[0] if running else '?'} "
                             f"({reason}); the run was redone from its erase")
            atomic.write_json(record_path, data)
        elif data.get("state") in ("cancelled", "failed"):
            label = str(data["state"])
    except (OSError, ValueError):
        pass
    n = 1
    while (dest := run_dir.with_name(f"{run_dir.name}-{label}-{n}")).exists():
        n += 1
    run_dir.rename(dest)
    atomic.fsync_dir(run_dir.parent)
    return dest


@dataclass
class _DriveRun:
    host: Host
    drive: Drive
    plan: Plan
    root: Path
    progress: ProgressCallback
    cancel: threading.Event
    journal: Journal | None
    notes: list[str] = field(default_factory=list)
    key: str = ""  # the journal's key of this drive (Journal.key_for: its identity's)
    twins: Callable[[], Sequence[str]] | None = None  # RunContext.twins

    def journal_call(self, fn: Callable[[], None]) -> None:
        try:
            fn()
        except OSError as exc:  # a journal that cannot be written must not stop the test
            self.notes.append(f"journal not updated: {exc}")


def run_plan(
    host: Host,
    drive: Drive,
    plan: Plan,
    *,
    results_root: Path,
    consent: str | None,
    progress: ProgressCallback = ignore_progress,
    cancel: threading.Event | None = None,
    journal: Journal | None = None,
    resume: bool = False,
    cpu: int | None = None,
    report_progress: bool = False,
    svg: bool = True,
    report_apart: bool = False,
    twins: Callable[[], Sequence[str]] | None = None,
) -> DriveOutcome:
    """Every run of ``plan`` on ``drive``, one after the other (each from its own erase).

    With ``journal`` every transition goes to state.json; with ``resume`` an unfinished
    journal entry for this drive is continued: finished runs are kept, the interrupted one
    is set aside (run.json "interrupted") and redone from its erase. With
    ``report_progress`` the report gets events too (run and stage ``report``: kiosk mode
    copies results to the stick on each event). ``svg``: the charts also as SVG.
    ``report_apart``: the report drawn by a process of its own (:func:`render_apart`).
    ``twins``: the other drives reporting this drive's serial as known now (RunContext).
    """
    check_consent(drive, plan, consent)
    cancel = cancel or threading.Event()
    if cpu is not None:
        host = Host(PinnedRunner(host.runner, cpu), host.fs)
    tools = tools_record(host, plan.params)
    resolve = _resolve(host, drive.path)

    ctx = _DriveRun(host, drive, plan, Path(results_root), progress, cancel, journal,
                    twins=twins)
    # the journal knows a drive by its identity, never by its serial alone (two drives
    # may report one serial): resume continues the entry of exactly this identity
    identity = drive.identity.to_json()
    found = journal.find(identity) if (journal is not None and resume) else None
    entry = None if found is None else found[1]
    if entry is not None and entry.get("state") in ("done", "failed"):
        entry = found = None
    if journal is not None:
        ctx.key = found[0] if found is not None else journal.key_for(drive.consent_id,
                                                                     identity)
    drive_dir: Path | None = None
    if entry is not None and (kept := journal_drive_dir(ctx.root, entry.get("drive_dir"))):
        drive_dir = kept  # one folder right under the root: state.json may be edited
    else:
        entry = None
    if drive_dir is None:  # a folder of its own: two drives may share model and serial
        drive_dir = _new_drive_dir(ctx.root, drive_dir_name(
            datetime.now(UTC), drive.model or "unknown", drive.serial or drive.name))
    drive_dir.mkdir(parents=True, exist_ok=True)
    log_sink = CommandLogFile(drive_dir / "log.txt")
    host.runner.add_sink(log_sink)
    try:
        outcomes = _run_all(ctx, drive_dir, entry, tools, resolve)
        if report_progress:
            progress(Progress(drive.name, "report", "report", "running", message="started"))
        problem = (render_apart("drive", drive_dir, host.runner, svg=svg) if report_apart
                   else render_drive_report(drive_dir, svg=svg))
    finally:
        host.runner.remove_sink(log_sink)
    if problem:
        ctx.notes.append(problem)
    if report_progress:
        progress(Progress(drive.name, "report", "report", "failed" if problem else "done",
                          message=problem or "done"))
    return DriveOutcome(drive.name, drive.consent_id, drive_dir, tuple(outcomes),
                        tuple(ctx.notes))


def _new_drive_dir(root: Path, name: str) -> Path:
    """``root/name`` made now, or ``name-2``, ``-3``... when it exists (two drives that
    report one model and serial, started in the same second)."""
    root.mkdir(parents=True, exist_ok=True)
    n, path = 1, root / name
    while True:
        try:
            path.mkdir()
            return path
        except FileExistsError:
            n += 1
            path = root / f"{name}-{n}"


def _resolve(host: Host, path: str) -> Callable[[], Any]:
    def resolve() -> Any:
        return resolve_target(host, path)

    try:
        resolve()
    except StageFailed as exc:
        raise Refused(ExitCode.NO_SUCH_DRIVE, str(exc)) from None
    return resolve


def _load_run_json(run_dir: Path) -> dict[str, Any]:
    try:
        data = jsonfile.read(run_dir / "run.json")
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _load_drive_json(path: Path, drive: Drive) -> dict[str, Any]:
    try:
        data = jsonfile.read(path)
        if isinstance(data, dict) and isinstance(data.get("runs"), list):
            data["drive"] = drive.to_json()
            data.setdefault("erases", [])
            return data
    except (OSError, ValueError):
        pass
    return {"drive": drive.to_json(), "erases": [], "runs": []}


def _run_all(ctx: _DriveRun, drive_dir: Path, entry: dict[str, Any] | None,
             tools: dict[str, Any], resolve: Callable[[], Any]) -> list[RunOutcome]:
    drive, plan, journal, key = ctx.drive, ctx.plan, ctx.journal, ctx.key
    drive_json = _load_drive_json(drive_dir / "drive.json", drive)
    atomic.write_json(drive_dir / "drive.json", drive_json)
    if journal is not None:
        if entry is None:
            ctx.journal_call(lambda: journal.start_drive(
                key, drive=drive.name, model=drive.model, serial=drive.serial,
                drive_dir=drive_dir.name, plan=plan.to_json(),
                identity=drive.identity.to_json(), consent_id=drive.consent_id,
                serial_shared_with=drive.serial_shared_with))
        else:
            ctx.journal_call(lambda: journal.resume_drive(key, drive.name))
    if entry is not None:
        try:
            ctx.notes.extend(recover_password(ctx.host, drive, ctx.root))
        except Exception as exc:
            ctx.notes.append(f"leftover ATA password not removed: {exc}")
    recorded_runs: dict[str, Any] = (entry or {}).get("runs") or {}
    outcomes: list[RunOutcome] = []
    for spec in plan.runs:
        run_dir = drive_dir / spec.name
        prior = recorded_runs.get(spec.name) or {}
        if prior.get("state") == "done" and (run_dir / "run.json").is_file():
            if _heal_run(drive_json, drive_dir, spec.name):
                atomic.write_json(drive_dir / "drive.json", drive_json)
            outcomes.append(RunOutcome(spec.name, "done", None, run_dir, resumed=True))
            ctx.progress(Progress(drive.name, spec.name, "-", "done",
                                  message="finished before the restart; kept"))
            continue
        if ctx.cancel.is_set():
            outcomes.append(RunOutcome(spec.name, "skipped", "cancelled by the user", None))
            continue
        if run_dir.exists():
            aside = _set_aside(run_dir, "power loss or crash" if prior.get("state") == "running"
                               else "an earlier attempt")
            ctx.notes.append(f"{spec.name}: the unfinished earlier attempt is kept in "
                             f"{aside.name}; redone from its erase")
            drive_json["runs"].append({"run": aside.name, "state": "interrupted",
                                       "error": "set aside on resume"})
            # now, not after the redone run: another power loss must not forget it
            atomic.write_json(drive_dir / "drive.json", drive_json)
        outcomes.append(_one_run(ctx, drive_dir, spec, tools=tools, resolve=resolve,
                                 drive_json=drive_json))
    if journal is not None:
        final = DriveOutcome(drive.name, key, drive_dir, tuple(outcomes)).state
        ctx.journal_call(lambda: journal.finish_drive(key, final))
    return outcomes


def _one_run(ctx: _DriveRun, drive_dir: Path, spec: RunSpec, *, tools: dict[str, Any],
             resolve: Callable[[], Any], drive_json: dict[str, Any]) -> RunOutcome:
    drive, journal, key = ctx.drive, ctx.journal, ctx.key
    params = ctx.plan.params_for(spec)
    run_dir = drive_dir / spec.name
    run_dir.mkdir(parents=True, exist_ok=True)
    try:
        target = resolve()
    except StageFailed as exc:  # the drive disappeared
        return RunOutcome(spec.name, "failed", str(exc), None)
    record = RunRecord.create(
        run_dir, run=spec.name, kind=spec.kind, drive=_drive_record(drive),
        target=target.record(spec.op_percent), params=params.as_record(), tools=tools)
    record.set("plan", {"name": ctx.plan.name, "source": ctx.plan.source})
    # the machine it is tested in and the controller it hangs off (devices/host.py)
    record.set("host", host_record(ctx.host, drive.name))
    if target.kernel_name is not None:
        record.set("environment", environment_record(ctx.host, drive.transport,
                                                     drive.name, tools))
    # the diagnose run reads smartctl in its own health stages
    watch = None if spec.kind in ("diagnose", "grade", "authenticity") else DriveWatch(
        ctx.host, drive.transport, drive.path)
    before = watch.read(run_dir / "smart" / "before.json") if watch is not None else None

    def on_stage(stage: str, state: str) -> None:
        if journal is not None:
            ctx.journal_call(lambda: journal.stage_state(key, spec.name, stage, state))

    if journal is not None:
        ctx.journal_call(lambda: journal.run_state(key, spec.name, "running"))
    run_ctx = RunContext(
        host=ctx.host, run_dir=run_dir, drive_name=drive.name, run_name=spec.name,
        target=target, params=params, record=record, progress=ctx.progress,
        cancel=ctx.cancel, secure_erase=secure_erase_hook(drive, ctx.root), on_stage=on_stage,
        watch=None if watch is None else partial(watch.sample, run_dir=run_dir),
        twins=ctx.twins,
    )
    state = run_stages(run_ctx, stages_for(spec.kind, op_percent=spec.op_percent))
    error = record.data.get("error")
    if journal is not None:
        ctx.journal_call(lambda: journal.run_state(key, spec.name, state))
    _record_run(drive_json, spec.name, state, error, record.data.get("erase"))
    atomic.write_json(drive_dir / "drive.json", drive_json)
    # after drive.json: the counters read takes a moment, and a power cut in it must not
    # leave drive.json without the finished run
    if watch is not None:
        after = watch.read(run_dir / "smart" / "after.json")
        record.set("health", health(before, after, watch))
    return RunOutcome(spec.name, state, error, run_dir)


def _heal_run(drive_json: dict[str, Any], drive_dir: Path, run: str) -> bool:
    """The journal says ``run`` is done but drive.json does not list it: the power went
    before drive.json reached the stick (it is copied apart from state.json). It is added
    from the run's own run.json; True when it was missing."""
    if any(r.get("run") == run and r.get("state") == "done" for r in drive_json["runs"]):
        return False
    meta = _load_run_json(drive_dir / run)
    _record_run(drive_json, run, "done", None, meta.get("erase"))
    return True


def heal_finished_drive(drive_dir: Path, entry: Mapping[str, Any]) -> list[str]:
    """A drive whose plan the journal says finished (its report, say, was cut by a power
    loss): drive.json gets every run the journal says is done and whose run.json is there,
    if it lacks it. The runs added; a drive.json that cannot be read is left alone."""
    runs = entry.get("runs")
    path = drive_dir / "drive.json"
    try:
        drive_json = jsonfile.read(path)
    except (OSError, ValueError):
        return []
    if not isinstance(runs, dict) or not isinstance(drive_json, dict) \
            or not isinstance(drive_json.get("runs"), list):
        return []
    drive_json.setdefault("erases", [])
    added = [name for name, run in runs.items()
             if isinstance(name, str) and isinstance(run, dict) and run.get("state") == "done"
             and (drive_dir / name / "run.json").is_file()
             and _heal_run(drive_json, drive_dir, name)]
    if added:
        atomic.write_json(path, drive_json)
    return added


def _record_run(drive_json: dict[str, Any], run: str, state: str, error: Any,
                erase: Any) -> None:
    """drive.json ``runs`` gets the run, ``erases`` its erase (once: a healed run's erase
    may be there already)."""
    entry = {"run": run, **erase} if isinstance(erase, dict) else None
    if entry is not None and entry not in drive_json["erases"]:
        drive_json["erases"].append(entry)
    drive_json["runs"].append({"run": run, "state": state, "error": error})


# ---- several drives at once ----

@dataclass(frozen=True)
class DriveJob:
    drive: Drive
    consent: str | None
    plan: Plan
    resume: bool = False
    # the other drives that report its serial as known now (a station's board: a twin
    # plugged in after this drive started is named in its record too)
    twins: Callable[[], Sequence[str]] | None = None


def run_job(host: Host, job: DriveJob, *, results_root: Path,
            progress: ProgressCallback = ignore_progress, cancel: threading.Event,
            journal: Journal | None = None, cpu: int | None = None,
            report_progress: bool = False, svg: bool = True) -> DriveOutcome:
    """``run_plan`` of one job that never raises: a refusal, a bug or a drive that
    disappeared is a failed outcome with the reason (the other drives go on)."""
    try:
        return run_plan(
            host, job.drive, job.plan, results_root=results_root, consent=job.consent,
            progress=progress, cancel=cancel, journal=journal, resume=job.resume, cpu=cpu,
            report_progress=report_progress, svg=svg, twins=job.twins)
    except Refused as exc:
        return DriveOutcome(job.drive.name, job.drive.consent_id, None,
                            (RunOutcome("-", "failed", str(exc), None),))
    except Exception as exc:  # a bug on one drive must not stop the others
        return DriveOutcome(job.drive.name, job.drive.consent_id, None,
                            (RunOutcome("-", "failed", f"{type(exc).__name__}: {exc}", None),))


def run_plans(
    host_factory: Callable[[], Host],
    jobs: Sequence[DriveJob],
    *,
    results_root: Path,
    progress: ProgressCallback = ignore_progress,
    cancel: threading.Event | None = None,
    journal: Journal | None = None,
    pin: bool = True,
    report_progress: bool = False,
    svg: bool = True,
) -> list[DriveOutcome]:
    """One thread per drive; a drive that fails, is refused or disappears does not stop the
    others. Each drive gets its own Host (so its log.txt sees only its commands) and, with
    ``pin``, its fio on its own CPU (round-robin). Outcomes in the order of ``jobs``."""
    cancel = cancel or threading.Event()
    cpus = cpu_list()
    outcomes: list[DriveOutcome | None] = [None] * len(jobs)

    def work(i: int, job: DriveJob) -> None:
        cpu = cpus[i % len(cpus)] if pin and len(jobs) > 1 else None
        outcomes[i] = run_job(host_factory(), job, results_root=results_root,
                              progress=progress, cancel=cancel, journal=journal, cpu=cpu,
                              report_progress=report_progress, svg=svg)

    threads = [threading.Thread(target=work, args=(i, job), name=f"drive-{job.drive.name}",
                                daemon=True) for i, job in enumerate(jobs)]
    for t in threads:
        t.start()
    for t in threads:
        while t.is_alive():
            t.join(0.5)  # a timed join keeps the main thread responsive to signals
    return [o for o in outcomes if o is not None]


def describe_plan(plan: Plan) -> list[str]:
    """Human lines: each run and its stages (``--dry-run``)."""
    lines = [f"plan {plan.name}: {plan.description}"]
    for spec in plan.runs:
        names = [s.name for s in stages_for(spec.kind, op_percent=spec.op_percent)]
        lines.append(f"  {spec.name}: {' → '.join(names)}")
    p = plan.params
    lines.append("  " + shlex.join([f"torture_seconds={p.torture_seconds}",
                                     f"trim_torture_seconds={p.trim_torture_seconds}",
                                     f"probe_gib={p.probe_gib}",
                                     f"probe_preset={p.probe_preset}",
                                     f"trim_idle_seconds={p.trim_idle_seconds}",
                                     f"erase_fallback={p.erase_fallback}"]))
    return lines
