"""The one place the TUI starts work in the engine: "run this plan on this drive".

Everything here calls what the engine already has (``commands.run``'s building blocks and
``stages.run_stages``) so it can be re-pointed at the plan/journal module when that
exists.  Widgets never import this module; the app hands them Progress events and results.

The :class:`Engine` protocol is what the app needs; tests swap :class:`LiveEngine` for a
scripted engine that emits real ``Progress`` sequences.
"""

from __future__ import annotations

import io
import shlex
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ssdbench.devices import Drive
from ssdbench.progress import Progress, ProgressCallback
from ssdbench.results import atomic
from ssdbench.results.layout import RunRecord, drive_dir_name, run_name
from ssdbench.stages.params import RunParams
from ssdbench.system import (
    CommandSink,
    Host,
    Result,
    Runner,
    RunningProcess,
    SystemRunner,
    live_host,
)

PRESETS = ("review", "quick", "trim", "diagnose")
PRESET_HELP = {
    "review": "reviewer set: consistency per OP level + TRIM validation (hours)",
    "quick": "same stages, minutes instead of hours (smoke test, demo)",
    "trim": "TRIM validation only",
    "diagnose": "non-destructive: read scan + 4 KiB random read (writes nothing)",
}
# Erase choices besides the drive's own methods (devices.model erase method names).
ERASE_AUTO = "auto"  # the best secure method; fails without one unless erase_fallback=discard
ERASE_DISCARD = "discard"  # no secure erase: discard the span, result "not secure-erased"

CommandCallback = Callable[[str], None]


def preset_params(preset: str) -> RunParams:
    """The plan parameters a preset starts from (the user edits them afterwards)."""
    base = RunParams()
    if preset == "quick":
        return base.with_values({"torture_seconds": 300, "trim_torture_seconds": 300,
                                 "probe_gib": 1.0, "random_read_seconds": 30},
                                source="preset quick")
    if preset in ("review", "trim", "diagnose"):
        return base
    raise ValueError(f"unknown preset {preset!r} (known: {', '.join(PRESETS)})")


def preset_op_levels(preset: str) -> tuple[int, ...]:
    return (0, 25) if preset in ("review", "quick") else (0,)


@dataclass(frozen=True)
class RunSpec:
    kind: str  # consistency | trim | diagnose
    op_percent: int = 0

    @property
    def name(self) -> str:
        return run_name(self.kind, self.op_percent)


@dataclass(frozen=True)
class Plan:
    preset: str
    params: RunParams
    op_levels: tuple[int, ...] = (0,)
    erase_method: str = ERASE_AUTO

    @property
    def destructive(self) -> bool:
        return self.preset != "diagnose"

    def runs(self) -> list[RunSpec]:
        if self.preset == "diagnose":
            return [RunSpec("diagnose")]
        if self.preset == "trim":
            return [RunSpec("trim")]
        return [*(RunSpec("consistency", op) for op in self.op_levels), RunSpec("trim")]

    def effective_params(self) -> RunParams:
        if self.erase_method == ERASE_DISCARD:
            return self.params.with_values({"erase_fallback": "discard"}, source="plan")
        return self.params


def stage_names(kind: str) -> list[str]:
    """The stages of one run, in order (what the run screen lists before they start)."""
    from ssdbench.stages.plans import stages_for

    return [s.name for s in stages_for(kind)]


@dataclass(frozen=True)
class RunOutcome:
    name: str
    state: str  # done | failed | cancelled | skipped
    error: str | None
    run_dir: Path | None


@dataclass(frozen=True)
class DriveOutcome:
    drive: str  # kernel name
    drive_dir: Path | None
    runs: tuple[RunOutcome, ...]
    notes: tuple[str, ...] = ()

    @property
    def state(self) -> str:
        states = [r.state for r in self.runs]
        for s in ("cancelled", "failed"):
            if s in states:
                return s
        return "done" if "done" in states else (states[0] if states else "failed")


class Engine(Protocol):
    def run_drive(self, drive: Drive, plan: Plan, *, results_root: Path,
                  progress: ProgressCallback, on_command: CommandCallback,
                  cancel: threading.Event) -> DriveOutcome:
        """Run every run of ``plan`` on ``drive``; never raises for a failed stage."""
        ...

    def finish(self, results_root: Path) -> list[str]:
        """After every drive: the results index (summary.csv, index.html); problems."""
        ...


class _NotifyingRunner:
    """A Runner that says which command starts (the run screen's "command" line)."""

    def __init__(self, inner: Runner, on_command: CommandCallback) -> None:
        self.inner = inner
        self.on_command = on_command

    def _say(self, argv: Sequence[str]) -> None:
        try:
            self.on_command(shlex.join(argv))
        except Exception:  # a front end must not break a run
            pass

    def run(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
            timeout: float | None = 60.0, env: Mapping[str, str] | None = None) -> Result:
        self._say(argv)
        return self.inner.run(argv, ok_codes=ok_codes, timeout=timeout, env=env)

    def stream(self, argv: Sequence[str], *, ok_codes: Sequence[int] = (0,),
               env: Mapping[str, str] | None = None,
               cwd: str | Path | None = None) -> RunningProcess:
        self._say(argv)
        return self.inner.stream(argv, ok_codes=ok_codes, env=env, cwd=cwd)

    def add_sink(self, sink: CommandSink) -> None:
        self.inner.add_sink(sink)

    def remove_sink(self, sink: CommandSink) -> None:
        self.inner.remove_sink(sink)


def _fresh_host() -> Host:
    # One runner per drive: each drive's log.txt sink sees only its own commands.
    return Host(SystemRunner(), live_host().fs)


@dataclass
class LiveEngine:
    """The real engine (commands.run's building blocks, stages.run_stages)."""

    host_factory: Callable[[], Host] = _fresh_host
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _secure_erase(self, drive: Drive, plan: Plan, root: Path) -> Any:
        from ssdbench.commands import run as run_cmd
        from ssdbench.stages.base import RunContext, StageFailed

        if plan.erase_method in (ERASE_AUTO,):
            return run_cmd.secure_erase_hook(drive, root)
        if plan.erase_method == ERASE_DISCARD:
            return None
        from ssdbench import erase

        method = plan.erase_method

        def hook(ctx: RunContext) -> Mapping[str, Any]:
            try:
                record = erase.erase_drive(
                    ctx.host, erase.target_from_drive(drive), method=method,
                    journal=erase.JsonPasswordJournal(root / "erase-journal.json"),
                    progress=ctx.progress)
            except erase.EraseError as exc:
                raise StageFailed(f"secure erase ({method}) failed: {exc}") from exc
            return record.to_dict()

        return hook

    def run_drive(self, drive: Drive, plan: Plan, *, results_root: Path,
                  progress: ProgressCallback, on_command: CommandCallback,
                  cancel: threading.Event) -> DriveOutcome:
        from ssdbench.commands import run as run_cmd
        from ssdbench.stages.base import RunContext, StageFailed, resolve_target, run_stages
        from ssdbench.stages.plans import stages_for
        from ssdbench.system import CommandLogFile

        base = self.host_factory()
        host = Host(_NotifyingRunner(base.runner, on_command), base.fs)
        params = plan.effective_params()
        if drive.protected:  # the UI refuses earlier; the engine adapter refuses again
            reason = "; ".join(drive.protect_reasons) or "protected"
            return DriveOutcome(drive.name, None, (RunOutcome(
                "-", "failed", f"{drive.path} is protected: {reason}", None),))
        try:
            target = resolve_target(host, drive.path)
        except StageFailed as exc:
            return DriveOutcome(drive.name, None, (RunOutcome("-", "failed", str(exc), None),))
        drive_dir = results_root / drive_dir_name(datetime.now(UTC), drive.model or "unknown",
                                                  drive.serial or drive.name)
        drive_dir.mkdir(parents=True, exist_ok=True)
        log_sink = CommandLogFile(drive_dir / "log.txt")
        host.runner.add_sink(log_sink)
        outcomes: list[RunOutcome] = []
        notes: list[str] = []
        try:
            try:
                tools = run_cmd._tools(host, params)
            except Exception as exc:  # _Refused: fio is not usable
                return DriveOutcome(drive.name, drive_dir,
                                    (RunOutcome("-", "failed", str(exc), None),))
            drive_json: dict[str, Any] = {"drive": drive.to_json(), "erases": [], "runs": []}
            atomic.write_json(drive_dir / "drive.json", drive_json)
            stopped = False
            for spec in plan.runs():
                if stopped or cancel.is_set():
                    outcomes.append(RunOutcome(spec.name, "cancelled" if cancel.is_set()
                                               else "skipped", "not started", None))
                    continue
                if spec.op_percent:
                    reason = ("over-provisioning partitions are not built in this engine yet; "
                              "this run was skipped")
                    progress(Progress(drive.name, spec.name, "op-partition", "skipped",
                                      message=reason))
                    outcomes.append(RunOutcome(spec.name, "skipped", reason, None))
                    continue
                run_dir = drive_dir / spec.name
                run_dir.mkdir(parents=True, exist_ok=True)
                record = RunRecord.create(
                    run_dir, run=spec.name, kind=spec.kind,
                    drive={"name": drive.name, "path": drive.path, "model": drive.model,
                           "serial": drive.serial, "firmware": drive.firmware,
                           "size_bytes": drive.size_bytes},
                    target=target.record(spec.op_percent), params=params.as_record(),
                    tools=tools,
                )
                ctx = RunContext(
                    host=host, run_dir=run_dir, drive_name=drive.name, run_name=spec.name,
                    target=target, params=params, record=record, progress=progress,
                    cancel=cancel, secure_erase=self._secure_erase(drive, plan, results_root),
                )
                state = run_stages(ctx, stages_for(spec.kind))
                error = record.data.get("error")
                outcomes.append(RunOutcome(spec.name, state, error, run_dir))
                if record.data.get("erase"):
                    drive_json["erases"].append({"run": spec.name, **record.data["erase"]})
                drive_json["runs"].append({"run": spec.name, "state": state, "error": error})
                atomic.write_json(drive_dir / "drive.json", drive_json)
                if state != "done":
                    stopped = True
        finally:
            host.runner.remove_sink(log_sink)
        err = io.StringIO()
        with self._lock:  # matplotlib is not thread safe: one report at a time
            _render_drive(drive_dir, err)
        notes.extend(line for line in err.getvalue().splitlines() if line)
        return DriveOutcome(drive.name, drive_dir, tuple(outcomes), tuple(notes))

    def finish(self, results_root: Path) -> list[str]:
        err = io.StringIO()
        with self._lock:
            try:
                from ssdbench.report import render_index

                if results_root.is_dir():
                    render_index(results_root)
            except Exception as exc:
                err.write(f"index failed ({type(exc).__name__}: {exc}); run "
                          f"`ssdbench report {results_root}` to retry\n")
        return [line for line in err.getvalue().splitlines() if line]


def _render_drive(drive_dir: Path, err: io.StringIO) -> None:
    try:
        from ssdbench.report import render_drive

        render_drive(drive_dir)
    except Exception as exc:  # the measurements are saved; a report bug must not hide that
        err.write(f"report failed ({type(exc).__name__}: {exc}); the results are saved, "
                  f"run `ssdbench report {drive_dir.parent}` to retry\n")


# ---- a scripted engine: real Progress sequences without a drive (tests, demos) ----

@dataclass(frozen=True)
class Step:
    """One scripted event, or a pause point the test releases."""

    event: Progress | None = None
    command: str | None = None
    wait: threading.Event | None = None


@dataclass
class ScriptedEngine:
    """Plays a list of steps per drive; the outcome is what the script says.

    Between steps it checks ``cancel`` like a stage does, and emits a "cancelled" event for
    the stage in progress when it is set.
    """

    scripts: Mapping[str, Sequence[Step]]
    outcomes: Mapping[str, DriveOutcome]
    started: list[str] = field(default_factory=list)

    def run_drive(self, drive: Drive, plan: Plan, *, results_root: Path,
                  progress: ProgressCallback, on_command: CommandCallback,
                  cancel: threading.Event) -> DriveOutcome:
        self.started.append(drive.name)
        last: Progress | None = None
        for step in self.scripts.get(drive.name, ()):
            if step.wait is not None:
                while not step.wait.wait(0.05):
                    if cancel.is_set():
                        break
            if cancel.is_set():
                if last is not None:
                    progress(replace(last, state="cancelled", message="cancelled by the user"))
                return DriveOutcome(drive.name, None, (RunOutcome(
                    last.run if last else "-", "cancelled", "cancelled by the user", None),))
            if step.command is not None:
                on_command(step.command)
            if step.event is not None:
                last = step.event
                progress(step.event)
        return self.outcomes[drive.name]

    def finish(self, results_root: Path) -> list[str]:
        return []


def iter_runs(outcomes: Sequence[DriveOutcome]) -> Iterator[tuple[DriveOutcome, RunOutcome]]:
    for d in outcomes:
        for r in d.runs:
            yield d, r


__all__ = [
    "ERASE_AUTO", "ERASE_DISCARD", "PRESETS", "DriveOutcome", "Engine",
    "LiveEngine", "Plan", "RunOutcome", "RunSpec", "ScriptedEngine", "Step",
    "preset_op_levels", "preset_params", "stage_names",
]
