"""The one place the TUI starts work in the engine: "run this plan on this drive".

It calls the engine facade (:mod:`ssdbench.plan.engine`: ``run_plan``, ``finish``, the
journal) and the shipped plans (:mod:`ssdbench.plan.plans`). Widgets never import this
module; the app hands them Progress events and results.

The :class:`Engine` protocol is what the app needs; tests swap :class:`LiveEngine` for a
:class:`ScriptedEngine` that emits real ``Progress`` sequences.
"""

from __future__ import annotations

import shlex
import threading
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

from ssdbench.devices import Drive
from ssdbench.devices.model import DriveIdentity
from ssdbench.plan.engine import DriveOutcome, RunOutcome
from ssdbench.plan.journal import Journal, JournalError, doubt
from ssdbench.plan.plans import PRESETS, Plan, RunSpec, preset
from ssdbench.progress import Progress, ProgressCallback
from ssdbench.system import (
    CommandSink,
    Host,
    Result,
    Runner,
    RunningProcess,
    SystemRunner,
    live_host,
)

# Erase choices (RunParams.erase_fallback): the engine always uses the best secure method a
# drive has; without one, "fail" stops the run, "overwrite" Clears it by one overwrite pass
# (erase/overwrite.py: NIST SP 800-88 Clear) and "discard" discards the span instead.
ERASE_SECURE = "fail"
ERASE_DISCARD = "discard"
ERASE_OVERWRITE = "overwrite"
ERASE_CHOICES = (
    ("secure erase (fail without one)", ERASE_SECURE),
    ("secure erase, else Clear by overwrite", ERASE_OVERWRITE),
    ("secure erase, else discard (not secure-erased)", ERASE_DISCARD),
)

CommandCallback = Callable[[str], None]


def preset_plan(name: str) -> Plan:
    return preset(name)


def preset_op_levels(name: str) -> tuple[int, ...]:
    levels = tuple(r.op_percent for r in preset(name).runs if r.kind == "consistency")
    return levels or (0,)


def plan_with(name: str, params: Mapping[str, object], op_levels: Sequence[int],
              erase_fallback: str) -> Plan:
    """A preset with the operator's values; raises PlanError/ParamError naming the key."""
    base = preset(name).with_params({**params, "erase_fallback": erase_fallback}, source="plan")
    if not any(r.kind == "consistency" for r in base.runs):
        return base
    runs: list[RunSpec] = []
    for r in base.runs:
        if r.kind != "consistency":
            runs.append(r)
        elif not any(x.kind == "consistency" for x in runs):
            runs.extend(RunSpec("consistency", op) for op in op_levels)
    return replace(base, runs=tuple(runs), source="tui")


def stage_names(run: RunSpec) -> list[str]:
    """The stages of one run, in order (what the run screen lists before they start)."""
    from ssdbench.stages.plans import stages_for

    return [s.name for s in stages_for(run.kind, op_percent=run.op_percent)]


class Engine(Protocol):
    def run_drive(self, drive: Drive, plan: Plan, *, index: int, count: int,
                  results_root: Path, progress: ProgressCallback,
                  on_command: CommandCallback, cancel: threading.Event,
                  resume: bool = False) -> DriveOutcome:
        """Every run of ``plan`` on ``drive`` (``index`` of ``count`` drives running at
        once); never raises for a failed stage or a refusal. ``resume``: continue what the
        journal says was unfinished for this drive."""
        ...

    def finish(self, results_root: Path) -> list[str]:
        """After every drive: the results index (summary.csv, index.html); problems."""
        ...


class NotifyingRunner:
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
    """The real engine: ``plan.engine.run_plan`` per drive (fio pinned to a CPU of its own
    when several drives run, as ``run_plans`` does), the journal in ``state.json``."""

    host_factory: Callable[[], Host] = _fresh_host
    journal: bool = True
    _journals: dict[Path, Journal] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)

    def _journal(self, results_root: Path) -> Journal:
        """One journal per results root, shared by the drives (it locks its writes)."""
        with self._lock:
            if results_root not in self._journals:
                self._journals[results_root] = Journal.open(results_root)
            return self._journals[results_root]

    def run_drive(self, drive: Drive, plan: Plan, *, index: int, count: int,
                  results_root: Path, progress: ProgressCallback,
                  on_command: CommandCallback, cancel: threading.Event,
                  resume: bool = False) -> DriveOutcome:
        from ssdbench.plan import engine as facade

        base = self.host_factory()
        host = Host(NotifyingRunner(base.runner, on_command), base.fs)
        cpus = facade.cpu_list()
        cpu = cpus[index % len(cpus)] if count > 1 and cpus else None
        try:
            results_root.mkdir(parents=True, exist_ok=True)
            journal = (self._journal(results_root)
                       if self.journal and plan.destructive else None)
            # The operator typed the end of consent_id on the consent screen: the engine
            # checks the whole id again (and refuses protected drives) before writing.
            # the report drawn by a process of its own: Textual draws this screen in this
            # process (plan/engine.render_apart)
            return facade.run_plan(host, drive, plan, results_root=results_root,
                                   consent=drive.consent_id, progress=progress,
                                   cancel=cancel, journal=journal, resume=resume, cpu=cpu,
                                   report_apart=True)
        except (facade.Refused, JournalError, OSError) as exc:
            return DriveOutcome(drive.name, drive.consent_id, None,
                                (RunOutcome("-", "failed", str(exc), None),))

    def finish(self, results_root: Path) -> list[str]:
        from ssdbench.plan import engine as facade

        return facade.finish(results_root, runner=self.host_factory().runner)


# ---- a scripted engine: real Progress sequences without a drive (tests, demos) ----

@dataclass(frozen=True)
class Step:
    """One scripted event or command, or a pause point the test releases."""

    event: Progress | None = None
    command: str | None = None
    wait: threading.Event | None = None


@dataclass
class ScriptedEngine:
    """Plays a list of steps per drive; the outcome is what the script says. Between steps
    it checks ``cancel`` like a stage does, and emits "cancelled" for the stage in progress
    when it is set."""

    scripts: Mapping[str, Sequence[Step]]
    outcomes: Mapping[str, DriveOutcome]
    started: list[str] = field(default_factory=list)
    resumed: list[str] = field(default_factory=list)

    def run_drive(self, drive: Drive, plan: Plan, *, index: int, count: int,
                  results_root: Path, progress: ProgressCallback,
                  on_command: CommandCallback, cancel: threading.Event,
                  resume: bool = False) -> DriveOutcome:
        self.started.append(drive.name)
        if resume:
            self.resumed.append(drive.name)
        last: Progress | None = None
        for step in self.scripts.get(drive.name, ()):
            if step.wait is not None:
                while not step.wait.wait(0.05):
                    if cancel.is_set():
                        break
            if cancel.is_set():
                if last is not None:
                    progress(replace(last, state="cancelled", message="cancelled by the user"))
                return DriveOutcome(drive.name, drive.consent_id, None, (RunOutcome(
                    last.run if last else "-", "cancelled", "cancelled by the user", None),))
            if step.command is not None:
                on_command(step.command)
            if step.event is not None:
                last = step.event
                progress(step.event)
        return self.outcomes[drive.name]

    def finish(self, results_root: Path) -> list[str]:
        return []


def unfinished_plans(results_root: Path) -> dict[str, dict[str, Any]]:
    """What the journal says did not end (consent_id → entry); {} without a journal."""
    if not (results_root / "state.json").exists():
        return {}
    return Journal.open(results_root).unfinished()


@dataclass(frozen=True)
class UnfinishedMatch:
    """An unfinished journal entry and the present drive it belongs to (None: not here).
    ``doubt``: why that drive cannot be told apart from the one that ran ("" when it
    can); the TUI asks the operator then, never resumes silently."""

    key: str
    entry: dict[str, Any]
    drive: Drive | None
    doubt: str = ""


def match_unfinished(drives: Sequence[Drive],
                     entries: Mapping[str, dict[str, Any]]) -> list[UnfinishedMatch]:
    """Each unfinished entry with the drive of exactly its identity (serial, model, WWN,
    capacity, place), as kiosk mode matches them (kiosk/run.py ``_journal_entry``). In
    doubt: an identity that reports no serial and no WWN, or a serial another drive
    shared (when it ran, or now) without a WWN or backing file to tell them apart, or an
    entry an older ssdbench wrote without identity (matched by its consent id)."""
    out = []
    for key, entry in sorted(entries.items()):
        recorded = DriveIdentity.from_json(entry.get("identity"))
        if recorded is None:
            cid = entry.get("consent_id", key)
            old = next((d for d in drives if d.consent_id in (key, cid)), None)
            out.append(UnfinishedMatch(key, entry, old, "it was recorded without an "
                                       "identity (an older ssdbench)" if old else ""))
            continue
        drive = next((d for d in drives if d.identity == recorded), None)
        why = "" if drive is None else doubt(entry, recorded.telling,
                                             bool(recorded.wwn or recorded.backing),
                                             drive.serial_shared_with)
        out.append(UnfinishedMatch(key, entry, drive, why))
    return out


def journal_plan(entry: Mapping[str, Any]) -> Plan:
    from ssdbench.plan.plans import plan_from_json

    return plan_from_json(entry["plan"])


def iter_runs(outcomes: Sequence[DriveOutcome]) -> Iterator[tuple[DriveOutcome, RunOutcome]]:
    for d in outcomes:
        for r in d.runs:
            yield d, r


__all__ = [
    "ERASE_CHOICES", "ERASE_DISCARD", "ERASE_SECURE", "PRESETS", "DriveOutcome", "Engine",
    "LiveEngine", "NotifyingRunner", "Plan", "RunOutcome", "RunSpec", "ScriptedEngine",
    "Step", "UnfinishedMatch", "match_unfinished", "plan_with", "preset_op_levels",
    "preset_plan", "stage_names",
]
