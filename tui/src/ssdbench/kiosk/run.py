"""Kiosk mode: boot, find the stick and the config, test the chosen drives, power off.

Order: results destination (the SSDRESULTS stick, else RAM) → config (kiosk.config search
order) → validation (a bad config stops here: a message naming the key, exit 2, nothing
written) → discovery → choice (``select``/``destroy``; protected never) → the journal
decides (finished plans are not redone, unfinished ones are resumed) → intake (with
``[fields] ask``: each fresh drive's fields typed or scanned on the console, in turn; with
``[jobs]``: each drive's plan from the lab's job file, kiosk/intake.py) → every chosen drive
at once → summary → results flushed (and copied from RAM to a stick that appeared) →
``on_finish``.

The serial console gets ONE plain line per event (``ssdbench: nvme0n1 trim probe-clean done
312.4 MiB/s``); on a tty a rich full-screen table shows the drives live as well. Textual is
never imported here.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from functools import partial
from pathlib import Path
from typing import Any, TextIO

from ssdbench.devices import Drive
from ssdbench.devices.host import read_controller, read_machine
from ssdbench.devices.model import DriveIdentity
from ssdbench.exitcodes import ExitCode
from ssdbench.kiosk.config import (
    ConfigError,
    KioskConfig,
    choose_drives,
    find_config,
    is_url,
    kernel_cmdline_value,
    load_config,
    shown_url,
    unmatched_selectors,
)
from ssdbench.kiosk.intake import Assigned, Intake, JobSource, assign, read_lines
from ssdbench.kiosk.labkey import prepare_record_keys
from ssdbench.kiosk.mirror import StickMirror
from ssdbench.kiosk.station import (
    Station,
    StationBoard,
    mark_shared_serials,
    shared_note,
    station_lines,
)
from ssdbench.lab.live import LiveStatus, start_store
from ssdbench.lab.post import Poster, finish_post, start_post
from ssdbench.lab.uploader import StoreUploader
from ssdbench.plan import engine
from ssdbench.plan.engine import DriveJob, DriveOutcome
from ssdbench.plan.journal import Journal, JournalError, doubt
from ssdbench.plan.plans import Plan, PlanError, build_plan, plan_from_json
from ssdbench.progress import Progress
from ssdbench.record.batch import BATCH_STEM, write_batch
from ssdbench.results import atomic
from ssdbench.results.layout import journal_drive_dir, utc_stamp
from ssdbench.system import CommandError, Host, SystemRunner
from ssdbench.untrusted import shown

# a console line that quotes a drive's words is cut only far past any real line
LINE_LIMIT = 2000


@dataclass(frozen=True)
class KioskOptions:
    config: Path | None = None
    results: Path | None = None  # the folder holding the drive folders; default: the stick
    dry_run: bool = False
    include_all: bool = False  # also loop/virtual devices (tests, demos)
    no_power: bool = False  # never power off/reboot (tests)


class EventLines:
    """One plain line per state change; running updates only feed the stage's mean rate."""

    def __init__(self, out: TextIO, echo: Callable[[str], None] | None = None) -> None:
        self.out = out
        self.echo = echo
        self._lock = threading.Lock()
        self._rates: dict[tuple[str, str, str], list[float]] = {}
        self._iops: dict[tuple[str, str, str], list[float]] = {}
        self._result: dict[tuple[str, str, str], Progress] = {}
        self.latest: dict[str, Progress] = {}

    def __call__(self, ev: Progress) -> None:
        key = (ev.drive, ev.run, ev.stage)
        with self._lock:
            self.latest[ev.drive] = ev
            if ev.state == "running" and ev.message == "result":
                self._result[key] = ev
                return
            if ev.state == "running":
                if ev.mib_s is not None:
                    self._rates.setdefault(key, []).append(ev.mib_s)
                if ev.iops is not None:
                    self._iops.setdefault(key, []).append(ev.iops)
                if ev.message != "started":
                    return
                line = f"ssdbench: {ev.drive} {ev.run} {ev.stage} started"
            else:
                line = f"ssdbench: {ev.drive} {ev.run} {ev.stage} {ev.state}"
                rates = self._rates.pop(key, [])
                iops = self._iops.pop(key, [])
                result = self._result.pop(key, None)
                if result is not None:  # the stage's own mean beats the mean of samples
                    rates = [result.mib_s] if result.mib_s is not None else rates
                    iops = [result.iops] if result.iops is not None else iops
                if ev.state == "done" and ev.stage.startswith(("torture", "randread", "wsat",
                                                               "hir", "iops", "latency")) \
                        and iops:
                    line += f" {sum(iops) / len(iops):,.0f} IOPS"
                elif ev.state == "done" and rates:
                    line += f" {sum(rates) / len(rates):.1f} MiB/s"
                if ev.message and ev.message not in ("done", ev.state):
                    line += f": {ev.message}"
        self.say(line)

    def say(self, line: str) -> None:
        line = shown(line, limit=2000)  # drive strings in it: no ESC, BEL, CR, NUL
        if self.echo is not None:
            self.echo(line)
        else:
            print(line, file=self.out, flush=True)


@dataclass
class Screen:
    """The rich full-screen view (tty only): one row per drive, refreshed twice a second."""

    out: TextIO
    lines: EventLines | None = None
    board: StationBoard | None = None  # station mode: each drive's state under the table
    _live: Any = None
    rows: dict[str, str] = field(default_factory=dict)

    def __enter__(self) -> Screen:
        from rich.console import Console
        from rich.live import Live

        console = Console(file=self.out)
        self._live = Live(self._table(), console=console, refresh_per_second=2, screen=False,
                          get_renderable=self._table)
        self._live.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        if self._live is not None:
            self._live.__exit__(None, None, None)

    def echo(self, line: str) -> None:
        if self._live is not None:
            self._live.console.print(line, markup=False, highlight=False)

    def _table(self) -> Any:
        from rich.console import Group
        from rich.table import Table
        from rich.text import Text

        def cell(value: object) -> Text:  # never markup: drive strings are untrusted
            return Text(shown(value))

        table = Table(title="ssdbench kiosk", expand=True)
        for col in ("drive", "run", "stage", "state", "progress", "IOPS", "MiB/s", "ETA"):
            table.add_column(col)
        latest = dict(self.lines.latest) if self.lines is not None else {}
        for name, ev in sorted(latest.items()):
            eta = "" if ev.eta_s is None else f"{int(ev.eta_s) // 60}:{int(ev.eta_s) % 60:02d}"
            table.add_row(cell(name), cell(ev.run), cell(ev.stage), cell(ev.state),
                          "" if ev.fraction is None else f"{ev.fraction * 100:.1f}%",
                          "" if ev.iops is None else f"{ev.iops:,.0f}",
                          "" if ev.mib_s is None else f"{ev.mib_s:,.1f}", eta)
        if self.board is None:
            return table
        station = Table(title="station: plug drives in; each is erased, verified, recorded",
                        expand=True)
        for col in ("drive", "serial", "model", "plan / job", "state", "record / reason"):
            station.add_column(col)
        styles = {"PASS": "bold green", "FAIL": "bold red"}
        for row in self.board.rows():  # one row per drive (identity), never per serial
            serial = f"{row.consent_id} ({row.note})" if row.note else row.consent_id
            plan = f"{row.plan} ({row.job})" if row.job else row.plan
            station.add_row(cell(row.name), cell(serial), cell(row.model or "?"), cell(plan),
                            cell(row.label), cell(row.detail), style=styles.get(row.state, ""))
        return Group(table, station)


def _bad_config(message: str, out: TextIO, err: TextIO) -> int:
    print(f"ssdbench kiosk: {shown(message, limit=2000)}", file=err, flush=True)
    print("ssdbench kiosk: nothing was erased or written; fix the config and reboot",
          file=err, flush=True)
    if out.isatty():
        from rich.console import Console
        from rich.panel import Panel
        from rich.text import Text

        Console(file=out).print(Panel(
            Text(f"{shown(message, limit=2000)}\n\nNothing was erased or written. Fix the "
                 "config and reboot."), title="ssdbench kiosk: bad config", style="bold red"))
    return int(ExitCode.USAGE)


def _psid_bound_to_one_drive(config: KioskConfig) -> None:
    """A `[params]` psid is tried on every locked drive of the session: each other drive
    answers NOT_AUTHORIZED and may lock out until a power cycle. So kiosk mode takes one only
    when `select` names exactly one drive by serial, and never in station mode (any drive
    may be plugged in). ConfigError names the key."""
    if not config.params.get("psid"):
        return
    if config.station is not None:
        raise ConfigError(config.source, "params.psid",
                          "not allowed with [station] (each plugged-in drive would be tried "
                          "with it); PSID revert one drive at a time: a config without "
                          "[station] whose `select` is [\"serial:ITS-SERIAL\"]")
    one = (not config.select_all and len(config.selectors) == 1
           and config.selectors[0].kind == "serial")
    if not one:
        raise ConfigError(config.source, "params.psid",
                          "a PSID belongs to one drive: `select` must be exactly one "
                          "\"serial:EXACT\" entry (the drive whose label shows this PSID), "
                          f"got {[str(s) for s in config.selectors] or 'all-eligible'}")


def _plan_for(config: KioskConfig) -> Plan:
    """The config's plan with its `[params]`; a PlanError names the file, [params] and the
    key (``ssdbench.toml [params]: `torture_seconds`: expected ...``); a psid not bound to
    one drive is a ConfigError."""
    _psid_bound_to_one_drive(config)
    plan = build_plan(config.plan)
    if config.params:
        plan = plan.with_params(dict(config.params), source=f"{config.source} [params]")
    return plan


def power(host: Host, action: str, err: TextIO) -> None:
    """poweroff -f / reboot -f, else busybox's."""
    for argv in ([action, "-f"], ["busybox", action, "-f"]):
        try:
            host.runner.run(argv, timeout=60)
            return
        except CommandError as exc:
            print(f"ssdbench kiosk: {' '.join(argv)} failed: {exc}", file=err, flush=True)


def run_kiosk(opts: KioskOptions, host: Host, out: TextIO, err: TextIO,
              cancel: threading.Event | None = None, *, inp: TextIO | None = None) -> int:
    """``inp``: the console the operator's fields are typed or scanned on (default stdin)."""
    cancel = cancel or threading.Event()

    def say(line: str) -> None:
        print(shown(f"ssdbench: {line}", limit=LINE_LIMIT), file=out, flush=True)

    from ssdbench.results.destination import RAM_ROOT, find_destination, sync_destination

    dest = None
    mirror: StickMirror | None = None
    if opts.results is None:
        dest = find_destination(host)
        print(f"ssdbench: {dest.description}", file=out, flush=True)
        # The engine writes to RAM; the mirror copies onto the stick while it is there.
        if opts.dry_run:
            root = dest.results_dir
        else:
            mirror = StickMirror(host, RAM_ROOT, dest, lambda line: print(
                f"ssdbench: {line}", file=out, flush=True))
            root = mirror.results_dir
    else:
        root = opts.results
    cmdline = host.fs.read_text("/proc/cmdline") or ""
    stick_root = dest.root if dest is not None and dest.on_stick else None
    path = find_config(opts.config, cmdline, stick_root)
    if path is None:
        return _bad_config("no config: put ssdbench.toml on the SSDRESULTS stick, or boot "
                           "with ssdbench.config=PATH, or give --config FILE", out, err)
    try:
        config = load_config(path, base=stick_root, say=lambda line: print(
            f"ssdbench: {line}", file=out, flush=True))
        plan = _plan_for(config)
        # the lab's key: never on the stick; from a URL fetched into memory before any drive
        prepare_record_keys([plan.params.record_key], source=config.source,
                            results=stick_root, whole_filesystem=True,
                            fetch=not opts.dry_run, say=lambda line: print(
                                f"ssdbench: {line}", file=out, flush=True))
    except (ConfigError, PlanError) as exc:
        return _bad_config(str(exc), out, err)
    named = shown_url(path) if isinstance(path, str) and is_url(path) else path
    print(f"ssdbench: config {named}: plan {plan.name}, on_finish {config.on_finish}",
          file=out, flush=True)
    job_source = JobSource(config) if config.jobs is not None else None
    if job_source is not None:  # a file that cannot be read: every drive waits
        job_source.refresh(say)

    from ssdbench.devices import discover

    # two drives reporting one serial are two drives: each is named on the other's lines
    drives = mark_shared_serials(discover(host, include_all=opts.include_all))
    for d in drives:
        if d.serial_shared_with:
            print(shown(f"ssdbench: {d.name} ({d.model or '?'} {d.consent_id}): "
                        f"{shared_note(d.serial_shared_with)}; each is known by its identity "
                        f"(serial, model, WWN, capacity, place {d.identity.place})",
                        limit=LINE_LIMIT), file=out, flush=True)
    chosen, skipped = choose_drives(
        config, [(d.consent_id, d.model, d.protected) for d in drives])
    for i, why in skipped:
        print(f"ssdbench: {drives[i].name} ({drives[i].model or '?'} "
              f"{drives[i].consent_id}) skipped: {why}", file=out, flush=True)
    # station mode: the drives named in `select` may be plugged in later (checked at the end)
    selection = [] if config.station else _selection_problems(config, drives, chosen)
    for line in selection:
        print(f"ssdbench: {line}", file=out, flush=True)
        print(f"ssdbench kiosk: {line}", file=err, flush=True)
    if mirror is not None:
        n = mirror.seed()
        if n:
            print(f"ssdbench: {n} files of earlier runs read from the stick", file=out,
                  flush=True)
    try:
        journal = Journal.open(root) if root.exists() else Journal(root / "state.json")
    except JournalError as exc:
        print(f"ssdbench kiosk: {exc}", file=err, flush=True)
        return int(ExitCode.FAILURE)
    reports: list[Path] = []
    jobs = _jobs(config, plan, [drives[i] for i in chosen], journal, out, reports=reports)
    if config.station is None and _takes_in(config):
        jobs, waited = _take_in(config, plan, jobs, source=job_source, say=say,
                                cancel=cancel, inp=inp or sys.stdin, typing=not opts.dry_run)
        if cancel.is_set():
            return int(ExitCode.INTERRUPTED)
        for line in waited:  # a drive not run is never a silent success (exit status 3)
            print(f"ssdbench kiosk: {shown(line, limit=LINE_LIMIT)}", file=err, flush=True)
        selection = [*selection, *waited]
    if opts.dry_run:
        for line in engine.describe_plan(plan):
            print(f"ssdbench: {line}", file=out)
        for job in jobs:
            what = "resume" if job.resume else "run"
            print(f"ssdbench: would {what} {job.plan.name} on {job.drive.path} "
                  f"({job.drive.model or '?'} {job.drive.consent_id}), results in {root}",
                  file=out, flush=True)
        if config.store is not None:
            print(f"ssdbench: would send the results to {config.store.describe()}", file=out)
        if config.post is not None:
            print(f"ssdbench: would post each finished record to {config.post.describe()}",
                  file=out)
        return int(ExitCode.NO_SUCH_DRIVE if selection else ExitCode.OK)
    if selection:  # in the results too: the stick is what the tester reads afterwards
        root.mkdir(parents=True, exist_ok=True)
        atomic.write_text(root / "kiosk.txt", "".join(f"{line}\n" for line in selection))
    if mirror is not None:
        mirror.start()
    store: tuple[StoreUploader, LiveStatus] | None = None
    if config.store is not None:  # beside the stick: results and status.json to the lab
        store = start_store(
            config.store, root, plan.name, {d.name: d.consent_id for d in drives},
            cmdline_bench=kernel_cmdline_value(cmdline, "ssdbench.bench"),
            say=lambda line: print(f"ssdbench: {line}", file=out, flush=True),
            host=read_machine(host).to_json(),
            controllers={d.name: read_controller(host, d.name).to_json() for d in drives})
        print(f"ssdbench: results also to {config.store.describe()} as bench "
              f"{store[0].bench}", file=out, flush=True)
    poster: Poster | None = None
    if config.post is not None:  # each finished record to the lab's asset system
        poster = start_post(config.post, root,
                            lambda line: print(f"ssdbench: {line}", file=out, flush=True))
        print(f"ssdbench: finished records also posted to {config.post.describe()}",
              file=out, flush=True)
    for drive_dir in reports:  # finished, but the power went during its report
        print(f"ssdbench: {drive_dir.name}: the report was not written (interrupted); "
              "writing it", file=out, flush=True)
        problem = engine.render_drive_report(drive_dir, svg=config.svg)
        if problem:
            print(f"ssdbench: {drive_dir.name}: {problem}", file=out, flush=True)
    station: Station | None = None
    outcomes: list[DriveOutcome]
    if config.station is not None:
        def job_for(d: Drive) -> DriveJob | str:
            # a drive arrived: the lab's latest job file (fetched while the station goes on)
            if job_source is not None and station is not None:
                job_source.refresh_soon(station.say)
            return _station_job(config, plan, journal, d, out)

        def resolve(job: DriveJob, values: dict[str, str]) -> Assigned | str:
            return assign(config, plan, None if job_source is None else job_source.get(),
                          job.drive, values)

        station = Station(host, config, config.station,
                          discover=lambda h, only: discover(h, include_all=opts.include_all,
                                                            only=only),
                          job_for=job_for, cancel=cancel,
                          resolve=resolve if _takes_in(config) else None)
        asks = config.fields.ask if config.fields is not None else ()
        if asks:
            # station.say is set when the station runs: looked up at each line
            station.intake = Intake(asks, lambda line: station.say(line),  # noqa: PLW0108
                                    station.board.asking)
            read_lines(inp or sys.stdin, station.intake, cancel)
        station.known.extend(drives)
        station.seen.update(d.identity.key for d in drives)
        outcomes = _run(jobs, root, journal, out, cancel, mirror=mirror, svg=config.svg,
                        store=store, station=station)
        selection = _selection_problems(config, station.known,
                                        [0] if station.outcomes else [])
        for line in selection:
            print(f"ssdbench: {line}", file=out, flush=True)
        atomic.write_text(root / "kiosk.txt", "".join(
            f"{line}\n" for line in [*selection, *station_lines(station.board.rows())]))
    elif not jobs:
        print("ssdbench: no drive to test", file=out, flush=True)
        outcomes = []
    else:
        outcomes = _run(jobs, root, journal, out, cancel, mirror=mirror, svg=config.svg,
                        store=store)
        shared = {j.drive.name: shared_note(j.drive.serial_shared_with) for j in jobs}
        outcomes = [replace(o, notes=(*o.notes, shared[o.drive])) if shared.get(o.drive)
                    else o for o in outcomes]
    for problem in engine.finish(root, svg=config.svg):
        print(f"ssdbench: {problem}", file=out, flush=True)
    _batch_page(root, outcomes, plan, out)
    _summary(outcomes, out)
    sync_destination()
    if poster is not None:  # before the last copy: the stick gets post-journal.json
        keep = config.on_finish in ("poweroff", "reboot") and (
            mirror is None or mirror.on_stick() is None)  # the queue is in RAM only
        finish_post(poster, cancel,
                    lambda line: print(f"ssdbench: {line}", file=out, flush=True),
                    wait_s=365 * 86400.0 if keep else 120.0)
    if mirror is not None:
        _save(mirror, config.on_finish, cancel, out)
    if store is not None:
        _send(store, outcomes, config.on_finish, cancel, out,
              on_stick=mirror is not None and mirror.on_stick() is not None)
    if config.on_finish in ("poweroff", "reboot") and not opts.no_power:
        print(f"ssdbench: {config.on_finish}", file=out, flush=True)
        power(host, config.on_finish, err)
    states = [o.state for o in outcomes]
    if "cancelled" in states:
        return int(ExitCode.INTERRUPTED)
    if not all(s == "done" for s in states):
        return int(ExitCode.FAILURE)
    return int(ExitCode.NO_SUCH_DRIVE if selection else ExitCode.OK)


def _batch_page(root: Path, outcomes: list[DriveOutcome], plan: Plan, out: TextIO) -> None:
    """The batch page of this kiosk run's (or station session's) drives, for a lot handed
    on: ``batch-<time>.html`` and ``.pdf`` in the results folder (record/batch.py)."""
    dirs = [o.drive_dir for o in outcomes if o.drive_dir is not None and o.drive_dir.is_dir()]
    if not dirs:
        return
    now = datetime.now(UTC)
    try:
        path, problem = write_batch(
            root, dirs, title=f"kiosk run of plan {plan.name}", made=utc_stamp(now),
            stem=f"{BATCH_STEM}-{now:%Y%m%dT%H%M%SZ}",
            pdf=bool(getattr(plan.params, "record_pdf", True)))
    except OSError as exc:
        print(shown(f"ssdbench: batch page not written: {exc}", limit=LINE_LIMIT), file=out,
              flush=True)
        return
    print(f"ssdbench: batch page of {len(dirs)} drives: {path.name}"
          + (f" ({problem})" if problem else ""), file=out, flush=True)


def _selection_problems(config: KioskConfig, drives: list[Drive], chosen: list[int]) -> list[str]:
    """What the tester must hear about `select`: each entry that matched no drive (with the
    drives that were there), or that no drive at all was chosen."""
    found = ", ".join(f"{d.name} {d.consent_id} {d.model or '?'}" for d in drives) or "none"
    lines = [f"`select` entry {s} matched no drive (drives found: {found})"
             for s in unmatched_selectors(
                 config, [(d.consent_id, d.model, d.protected) for d in drives])]
    if not chosen and not lines:
        lines.append(f"no drive was chosen to test (drives found: {found})")
    return lines


def _save(mirror: StickMirror, on_finish: str, cancel: threading.Event, out: TextIO) -> None:
    """The last copy to the stick; before a power-off or reboot, wait for a pulled stick."""
    n = mirror.close()
    if (mirror.on_stick() is None and mirror.ever_had_stick
            and on_finish in ("poweroff", "reboot")):
        mirror.wait_for_stick(cancel)
    where = mirror.on_stick()
    if where is not None:
        print(f"ssdbench: all results copied: {where} ({n} files written at the end)",
              file=out, flush=True)
    else:
        print(f"ssdbench: results only in RAM ({mirror.results_dir}): no SSDRESULTS stick",
              file=out, flush=True)


def _send(store: tuple[StoreUploader, LiveStatus], outcomes: list[DriveOutcome],
          on_finish: str, cancel: threading.Event, out: TextIO, *, on_stick: bool) -> None:
    """The last send to the store: before a power-off or reboot with the results only in
    RAM, keep retrying until they are all there (or cancel); else try for 2 minutes (what
    is left is on the stick and goes at the next boot, the journal says what was sent)."""
    uploader, live = store
    states = {o.state for o in outcomes}
    live.finish("done" if states <= {"done"} else "cancelled" if "cancelled" in states
                else "failed")
    forever = on_finish in ("poweroff", "reboot") and not on_stick
    unsent = uploader.close(cancel, wait_s=365 * 86400.0 if forever else 120.0)
    if unsent:
        print(f"ssdbench: {unsent} files not sent to the store ({uploader.last_error}); "
              "they are kept " + ("on the stick and go at the next boot" if on_stick
                                  else f"in RAM ({uploader.results_dir})"),
              file=out, flush=True)
    else:
        print(f"ssdbench: all results sent to {uploader.cfg.describe()}", file=out, flush=True)


def _station_job(config: KioskConfig, plan: Plan, journal: Journal, drive: Drive,
                 out: TextIO) -> DriveJob | str:
    """A drive plugged in while the station runs: its job as at boot, or why not."""
    jobs = _jobs(config, plan, [drive], journal, out, reports=[])
    return jobs[0] if jobs else "the journal says it was erased already (PASS)"


def _journal_entry(journal: Journal, drive: Drive, out: TextIO) -> dict[str, Any] | None:
    """The journal's entry of this drive: the one recorded for exactly its identity (serial,
    model, WWN, capacity, place), and only when that identity can tell it from another
    drive (a serial, a WWN or a backing file no other drive shared). None: the plan runs
    afresh; the console says why when an entry was passed over."""
    identity = drive.identity
    who = f"{drive.name} ({drive.consent_id})"
    found = journal.find(identity.to_json())
    if found is None:
        for key, other in _entries_at(journal, drive):
            recorded = DriveIdentity.from_json(other.get("identity"))
            why = ("it was recorded without an identity (an older ssdbench)"
                   if recorded is None else
                   f"it was another drive: {'; '.join(identity.differences(recorded))}")
            # the journal is read back from the stick: its words are untrusted
            print(shown(f"ssdbench: {who}: the journal's entry {key} (plan "
                        f"{_plan_name(other)}, {other.get('state')}) is not this drive's: "
                        f"{why}; running the plan on it", limit=2000), file=out, flush=True)
        return None
    key, entry = found
    why = doubt(entry, identity.telling, bool(identity.wwn or identity.backing),
                drive.serial_shared_with)
    if why:
        print(shown(f"ssdbench: {who}: the journal's entry {key} (plan {_plan_name(entry)}, "
                    f"{entry.get('state')}) has this drive's identity, but {why}: another "
                    "drive of the same model and capacity in the same place would look the "
                    "same, so it cannot be told apart; running the plan afresh", limit=2000),
              file=out, flush=True)
        return None
    return entry


def _entries_at(journal: Journal, drive: Drive) -> list[tuple[str, dict[str, Any]]]:
    """Entries at this drive's consent id or kernel name (another drive's, or one recorded
    without an identity)."""
    return [(k, v) for k, v in journal.entries().items()
            if k == drive.consent_id or v.get("consent_id") == drive.consent_id
            or v.get("drive") == drive.name]


def _plan_name(entry: dict[str, Any]) -> str:
    plan = entry.get("plan")
    return str(plan.get("name")) if isinstance(plan, dict) else "?"


def _jobs(config: KioskConfig, plan: Plan, drives: list[Drive], journal: Journal,
          out: TextIO, *, reports: list[Path]) -> list[DriveJob]:
    """The drives to run or resume; finished drives whose report is missing go to
    ``reports``. A drive is matched to the journal by its identity (``_journal_entry``)."""
    jobs = []
    for drive in drives:
        entry = _journal_entry(journal, drive, out)
        if config.station is not None and entry is not None and entry.get("state") == "failed":
            entry = None  # station mode: a drive that failed (pulled, ...) is erased afresh
        if entry is not None and entry.get("state") in ("done", "failed"):
            # one folder right under the results root (state.json may have been edited)
            drive_dir = journal_drive_dir(journal.path.parent, entry.get("drive_dir"))
            if drive_dir is not None:
                # the power may have gone after the journal said done and before drive.json
                # (copied apart from it) reached the stick
                healed = engine.heal_finished_drive(drive_dir, entry)
                if healed:
                    print(f"ssdbench: {drive_dir.name}: drive.json lacked the finished "
                          f"run(s) {', '.join(healed)}; added from their run.json",
                          file=out, flush=True)
                if not (drive_dir / "report.html").exists():
                    reports.append(drive_dir)
            print(shown(f"ssdbench: {drive.name} ({drive.consent_id}) skipped: the journal "
                        f"says plan {entry['plan']['name']} already finished ({entry['state']})"
                        f" in {entry['drive_dir']}; remove state.json to test it again",
                        limit=LINE_LIMIT), file=out, flush=True)
            continue
        if entry is not None:
            print(shown(f"ssdbench: {drive.name} ({drive.consent_id}): resuming the unfinished "
                        f"plan {entry['plan']['name']}", limit=LINE_LIMIT),
                  file=out, flush=True)
            jobs.append(DriveJob(drive, drive.consent_id, plan_from_json(entry["plan"]),
                                 resume=True))
            continue
        jobs.append(DriveJob(drive, drive.consent_id, plan))
    return jobs


def _takes_in(config: KioskConfig) -> bool:
    """Whether each fresh drive goes through intake: the lab's jobs, or fields to ask."""
    return config.jobs is not None or bool(config.fields is not None and config.fields.ask)


def _take_in(config: KioskConfig, plan: Plan, jobs: list[DriveJob], *,
             source: JobSource | None, say: Callable[[str], None], cancel: threading.Event,
             inp: TextIO, typing: bool) -> tuple[list[DriveJob], list[str]]:
    """The drives found at boot (kiosk mode without [station]): each fresh drive's fields
    asked in turn on the console (``typing``; not in a dry run), then its plan: the lab's
    job, the config's own, or not run (the line says why). Resumed drives keep theirs.
    Returns the jobs to run and a line for each drive not run."""
    asks = config.fields.ask if config.fields is not None and typing else ()
    fresh = [j for j in jobs if not j.resume]
    typed: dict[str, dict[str, str]] = {}
    if asks and fresh:
        intake = Intake(asks, say)
        for j in fresh:
            intake.add(j.drive.identity.key, f"{j.drive.name} ({j.drive.consent_id})",
                       partial(typed.__setitem__, j.drive.identity.key))
        read_lines(inp, intake, cancel)
        while not intake.idle.wait(0.5) and not cancel.is_set():
            pass
    chosen = []
    waited = []
    for j in jobs:
        key = j.drive.identity.key
        if j.resume:
            chosen.append(j)
            continue
        who = f"{j.drive.name} ({j.drive.model or '?'} {j.drive.consent_id})"
        if asks and key not in typed:  # the intake said why (the console ended, cancel)
            waited.append(f"{who} not tested: its fields were not entered")
            continue
        got = assign(config, plan, None if source is None else source.get(), j.drive,
                     typed.get(key, {}))
        if isinstance(got, str):
            say(f"{who} {got}")
            waited.append(f"{who} {got}")
            continue
        say(f"{who}: {got.described}")
        chosen.append(replace(j, plan=got.plan))
    return chosen, waited


def _run(jobs: list[DriveJob], root: Path, journal: Journal, out: TextIO,
         cancel: threading.Event, *, mirror: StickMirror | None = None,
         svg: bool = True, store: tuple[StoreUploader, LiveStatus] | None = None,
         station: Station | None = None) -> list[DriveOutcome]:
    def factory() -> Host:
        from ssdbench.system import live_host

        return Host(SystemRunner(), live_host().fs)

    def go(lines: EventLines) -> list[DriveOutcome]:
        def progress(ev: Progress) -> None:
            lines(ev)
            if store is not None:
                store[1](ev)
            # a stage started or ended: its files and the journal go to the stick (and store)
            if ev.state != "running" or ev.message == "started":
                if mirror is not None:
                    mirror.request()
                if store is not None:
                    store[0].request()

        if station is None:
            return engine.run_plans(factory, jobs, results_root=root, progress=progress,
                                    cancel=cancel, journal=journal, report_progress=True,
                                    svg=svg)
        return _station_run(station, jobs, root, lines, progress, factory=factory,
                            mirror=mirror, journal=journal, svg=svg,
                            live=None if store is None else store[1])

    if out.isatty():
        screen = Screen(out, board=None if station is None else station.board)
        lines = EventLines(out, echo=screen.echo)
        screen.lines = lines
        with screen:
            return go(lines)
    return go(EventLines(out))


def _station_run(station: Station, jobs: list[DriveJob], root: Path, lines: EventLines,
                 progress: Callable[[Progress], None], *, factory: Callable[[], Host],
                 mirror: StickMirror | None, journal: Journal, svg: bool,
                 live: LiveStatus | None = None) -> list[DriveOutcome]:
    """The station's loop with the kiosk's plumbing: every event also to the board, every
    announcement a console line and kiosk.txt (mirrored to the stick)."""
    board = station.board

    def both(ev: Progress) -> None:
        board(ev)
        progress(ev)

    kiosk_txt = threading.Lock()  # erase threads announce at once: the newest board wins

    def say(line: str) -> None:
        lines.say(shown(f"ssdbench: {line}", limit=LINE_LIMIT))
        root.mkdir(parents=True, exist_ok=True)
        with kiosk_txt:
            atomic.write_text(root / "kiosk.txt",
                              "".join(f"{ln}\n" for ln in station_lines(board.rows())))
        if mirror is not None:
            mirror.request()

    def start(job: DriveJob) -> DriveOutcome:
        if live is not None:  # the lab's status.json names the drives plugged in later too
            live.serials[job.drive.name] = job.drive.consent_id
        return engine.run_job(factory(), job, results_root=root, progress=both,
                              cancel=station.cancel, journal=journal, report_progress=True,
                              svg=svg)

    station.say = say
    station.start = start
    for job in jobs:
        if station.resolve is not None and not job.resume:
            station.take_in(job)  # its fields asked, then its plan (the lab's job)
        else:
            station.add(job)
    return station.run()


def _summary(outcomes: list[DriveOutcome], out: TextIO) -> None:
    print("ssdbench: summary", file=out)
    for o in outcomes:
        runs = ", ".join(f"{r.name} {r.state}" + (f" ({r.error})" if r.error else "")
                         for r in o.runs)
        # the serial and the run errors are a drive's words: one line each, no escapes
        print(shown(f"ssdbench: {o.drive} ({o.consent_id}): {o.state}: {runs}",
                    limit=LINE_LIMIT), file=out)
        if o.drive_dir is not None:
            print(shown(f"ssdbench: {o.drive} results: {o.drive_dir}", limit=LINE_LIMIT),
                  file=out)
        for note in o.notes:
            print(shown(f"ssdbench: {o.drive}: {note}", limit=LINE_LIMIT), file=out)
    out.flush()
    time.sleep(0)
