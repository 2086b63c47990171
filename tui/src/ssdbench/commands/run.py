"""`ssdbench run DRIVE... --destroy ID...`: a plan (erase, fill, torture, TRIM validation) on
one or more drives at once.

Safety first: drives come from discovery; a protected drive is refused with the reasons;
nothing is written unless `--destroy` names each drive's consent id (its serial, or the
kernel name when it has none; repeat `--destroy` once per drive). Every drive is checked
before any is touched. Several drives run concurrently, each fio on its own CPU; one
failing does not stop the others. Ctrl-C stops fio cleanly, runs are marked "cancelled"
and the exit code is 130. After a power loss, `ssdbench run --resume` continues what the
journal (state.json in the results folder) says was unfinished: finished runs are kept,
the interrupted one is redone from its erase.

Plans: review, quick, trim, diagnose (read-only, no consent needed), erase (purge, verify
and the signed erase record; docs/erase.md), grade (read-only: the drive's self-test and its
counters graded; docs/grading.md), intake (the fake-capacity check, then the erase), wsat
and hir (SNIA PTS; docs/pts.md), iops, throughput and latency (the SNIA PTS round loops),
speed (read-only: the four corners against the drive's class; docs/plans.md), or a plan
file (docs/plans.md). `--run` is the older way to name the runs (review durations).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
import time
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ssdbench.exitcodes import ExitCode
from ssdbench.plan import engine
from ssdbench.plan.engine import DriveJob, DriveOutcome, Refused
from ssdbench.plan.journal import Journal, JournalError
from ssdbench.plan.plans import PRESETS, Plan, PlanError, RunSpec, build_plan, plan_from_json
from ssdbench.progress import Progress
from ssdbench.stages.params import RunParams
from ssdbench.stages.secure_erase import secure_erase_hook
from ssdbench.system import Host, SystemRunner, live_host

RUN_CHOICES = ("consistency", "trim", "all", "diagnose")

# Kept for ui/engine.py until it calls ssdbench.plan.engine directly.
_tools = engine.tools_record
__all__ = ["main", "register", "secure_erase_hook"]


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "run", help="test drives with a plan: erase, fill, torture, TRIM (destroys data)",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("drives", metavar="DRIVE", nargs="*",
                   help="/dev path, kernel name or serial (several run at once)")
    p.add_argument("--destroy", metavar="CONSENT_ID", action="append", default=[],
                   help="a drive's serial (kernel name when it has none): consent to wipe "
                        "it; once per drive")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--plan", metavar="PLAN",
                       help=f"{', '.join(PRESETS)}, or a plan file (.toml)")
    which.add_argument("--run", choices=RUN_CHOICES, default=None,
                       help="consistency (the default), trim, all (both), diagnose (read-only)")
    p.add_argument("--op", type=int, metavar="PERCENT", default=None,
                   help="with --run consistency/all: extra over-provisioning percent "
                        "(a GPT partition of 100-N%% after the erase)")
    p.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                   help="plan parameter, e.g. torture_seconds=600 (repeatable)")
    p.add_argument("--config", type=Path, metavar="FILE", help="plan parameters (TOML)")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results folder (default: ssdbench/ on the SSDRESULTS stick, else RAM)")
    p.add_argument("--erase-fallback", choices=("fail", "discard", "overwrite"), default=None,
                   help="without a secure-erase method: fail, overwrite (Clear by one "
                        "pass, docs/erase.md), or discard (not secure-erased)")
    p.add_argument("--resume", action="store_true",
                   help="continue what the journal says was unfinished (no DRIVE: every "
                        "unfinished drive, with the consent recorded when it started)")
    p.add_argument("--no-pin", action="store_true", help="do not pin each drive's fio to a CPU")
    p.add_argument("--no-svg", action="store_true",
                   help="charts as PNG only (no SVG copies: a faster report)")
    p.add_argument("--quiet", action="store_true", help="no progress lines on stderr")
    p.set_defaults(func=main)


class StderrProgress:
    """At most one line a second per stage, plus every state change."""

    def __init__(self, out: TextIO) -> None:
        self.out = out
        self._last: dict[tuple[str, str, str], float] = {}
        self._part: dict[tuple[str, str, str], str] = {}  # what the stage runs (a corner)
        self._lock = threading.Lock()

    def __call__(self, ev: Progress) -> None:
        key = (ev.drive, ev.run, ev.stage)
        now = time.monotonic()
        result = ev.message == "result"  # a job's mean: always printed, named by its part
        with self._lock:
            if ev.message and not result:
                self._part[key] = ev.message
            if (ev.state == "running" and not result
                    and now - self._last.get(key, -10.0) < 1.0):
                return
            self._last[key] = now
            part = self._part.get(key, "")
        parts = [f"ssdbench: {ev.drive} {ev.run} {ev.stage} {ev.state}"]
        if ev.fraction is not None:
            parts.append(f"{ev.fraction * 100:5.1f}%")
        if ev.eta_s is not None:
            parts.append(f"eta {int(ev.eta_s) // 60:d}:{int(ev.eta_s) % 60:02d}")
        if ev.iops is not None:
            parts.append(f"{ev.iops:,.0f} IOPS")
        if ev.mib_s is not None:
            parts.append(f"{ev.mib_s:,.1f} MiB/s")
        # a message beside a fraction names the part running (a speed corner: #45 A)
        if result:
            parts.append(f"mean{' of ' + part if part else ''}")
        elif ev.message and ev.message not in ("started", ev.state):
            parts.append(ev.message)
        print(" ".join(parts), file=self.out, flush=True)


def legacy_plan(choice: str, op: int | None) -> Plan:
    """``--run`` as a plan with the review durations."""
    op = op or 0
    runs = {"consistency": (RunSpec("consistency", op),), "trim": (RunSpec("trim"),),
            "all": (RunSpec("consistency", op), RunSpec("trim")),
            "diagnose": (RunSpec("diagnose"),)}[choice]
    if op and choice not in ("consistency", "all"):
        raise PlanError(f"--op {op}: only consistency runs take extra over-provisioning")
    if not 0 <= op <= 90:
        raise PlanError(f"--op {op}: expected a percentage from 0 to 90")
    return Plan(f"run-{choice}", f"--run {choice}", runs, RunParams(), "--run")


def _plan(args: argparse.Namespace) -> Plan:
    overrides: dict[str, object] = {}
    if args.erase_fallback is not None:
        overrides["erase_fallback"] = args.erase_fallback
    if args.plan is not None:
        if args.op is not None:
            raise PlanError("--op goes with --run; a plan sets op_percent per run")
        return build_plan(args.plan, config=args.config, sets=args.sets, overrides=overrides)
    base = legacy_plan(args.run or "consistency", args.op)
    from ssdbench.stages.params import ParamError, load_config, parse_set

    try:
        if args.config is not None:
            base = base.with_params(load_config(args.config), source=str(args.config))
        base = base.with_params(parse_set(args.sets), source="--set")
    except ParamError as exc:
        raise PlanError(str(exc)) from None
    return base.with_params(overrides, source="command line") if overrides else base


def _consent_for(drive: Any, destroy: list[str]) -> str | None:
    if drive.consent_id in destroy:
        return str(drive.consent_id)
    return destroy[0] if len(destroy) == 1 else None


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
        return _run(args, host, err, cancel)
    except Refused as exc:
        print(f"ssdbench run: {exc}", file=err)
        return int(exc.code)
    except (PlanError, JournalError) as exc:
        print(f"ssdbench run: {exc}", file=err)
        return int(ExitCode.USAGE if isinstance(exc, PlanError) else ExitCode.FAILURE)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)


def _results_root(args: argparse.Namespace, host: Host, err: TextIO) -> Path:
    if args.results:
        return Path(args.results)
    from ssdbench.results.destination import find_destination

    dest = find_destination(host)
    print(f"ssdbench: {dest.description}", file=err, flush=True)
    return dest.results_dir


def _check_drive_dir(root: Path, key: str, name: object) -> None:
    """A journal's ``drive_dir`` names one folder right under the results root, or none
    that exists yet; anything else (``../..``, a link out of it) is an edited state.json:
    JournalError, nothing written (docs/results-format.md "Read back as untrusted")."""
    from ssdbench.results.layout import journal_drive_dir
    from ssdbench.untrusted import path_part, shown

    if name is None or journal_drive_dir(root, name) is not None:
        return
    clean = isinstance(name, str) and path_part(name, limit=255) == name
    if clean and not (root / str(name)).is_symlink() and not (root / str(name)).exists():
        return  # its folder is gone: the engine makes a new one
    raise JournalError(f"{root / 'state.json'}: drive {shown(key)}: drive_dir {shown(name)!r} "
                       "is not a folder of this results folder; move state.json away to "
                       "start afresh")


def _jobs(args: argparse.Namespace, host: Host, root: Path | None) -> list[DriveJob]:
    if args.resume and not args.drives:
        if root is None or not (root / "state.json").exists():
            raise Refused(ExitCode.USAGE, "--resume: no journal (state.json) in the results "
                                          "folder; nothing to resume")
        journal = Journal.open(root)
        jobs = []
        for key, entry in sorted(journal.unfinished().items()):
            _check_drive_dir(root, key, entry.get("drive_dir"))
            drive = engine.locate_journal_drive(host, key, entry)  # by its identity
            plan = plan_from_json(entry["plan"])
            jobs.append(DriveJob(drive, drive.consent_id, plan, resume=True))
        if not jobs:
            raise Refused(ExitCode.USAGE, f"--resume: every plan in {root / 'state.json'} "
                                          "has finished; nothing to resume")
        return jobs
    if not args.drives:
        raise Refused(ExitCode.USAGE, "name at least one DRIVE (or --resume)")
    plan = _plan(args)
    drives = [engine.locate_drive(host, spec) for spec in args.drives]
    names = [d.name for d in drives]
    if len(set(names)) != len(names):
        raise Refused(ExitCode.USAGE, "a drive is named twice")
    if plan.params.psid and len(drives) > 1:  # each other drive: NOT_AUTHORIZED, maybe locked out
        raise Refused(ExitCode.USAGE, "a PSID belongs to one drive (it is printed on its label): "
                                      "give psid with that drive alone")
    return [DriveJob(d, _consent_for(d, args.destroy), plan, resume=args.resume)
            for d in drives]


def _run(args: argparse.Namespace, given: Host | None, err: TextIO,
         cancel: threading.Event) -> int:
    host = given or live_host()
    if args.drives and not args.resume:
        jobs = _jobs(args, host, None)
        for job in jobs:  # every drive is checked before any is touched
            engine.check_consent(job.drive, job.plan, job.consent)
        root = _results_root(args, host, err)
    else:
        root = _results_root(args, host, err)
        jobs = _jobs(args, host, root)
        for job in jobs:
            engine.check_consent(job.drive, job.plan, job.consent)
    # the lab's key: not in the results folder; from a URL fetched into memory before any drive
    from ssdbench.kiosk.config import ConfigError
    from ssdbench.kiosk.labkey import prepare_record_keys

    try:
        prepare_record_keys([j.plan.params.record_key for j in jobs], source="plan parameter",
                            key="record_key", results=root,
                            say=lambda line: print(f"ssdbench: {line}", file=err, flush=True))
    except ConfigError as exc:
        raise Refused(ExitCode.USAGE, str(exc)) from None
    journal = Journal.open(root) if any(j.plan.destructive for j in jobs) else None
    progress = (lambda _ev: None) if args.quiet else StderrProgress(err)
    print(f"ssdbench: results in {root}", file=err, flush=True)
    if len(jobs) == 1:
        job = jobs[0]
        outcomes = [engine.run_plan(host, job.drive, job.plan, results_root=root,
                                    consent=job.consent, progress=progress, cancel=cancel,
                                    journal=journal, resume=job.resume, svg=not args.no_svg)]
    else:
        def factory() -> Host:
            return given if given is not None else Host(SystemRunner(), host.fs)

        outcomes = engine.run_plans(factory, jobs, results_root=root, progress=progress,
                                    cancel=cancel, journal=journal, pin=not args.no_pin,
                                    svg=not args.no_svg)
    for problem in engine.finish(root, svg=not args.no_svg):
        print(f"ssdbench: {problem}", file=err)
    return _summarise(outcomes, err)


def _summarise(outcomes: list[DriveOutcome], err: TextIO) -> int:
    for out in outcomes:
        for run in out.runs:
            kept = " (kept from before the restart)" if run.resumed else ""
            print(f"ssdbench: {out.drive} {run.name}: {run.state}{kept}"
                  + (f": {run.error}" if run.error else ""), file=err, flush=True)
        for note in out.notes:
            print(f"ssdbench: {out.drive}: {note}", file=err)
        if out.drive_dir is not None:
            print(str(out.drive_dir))
    states = [o.state for o in outcomes]
    if "cancelled" in states:
        return int(ExitCode.INTERRUPTED)
    if any(s != "done" for s in states):
        return int(ExitCode.FAILURE)
    return int(ExitCode.OK)
