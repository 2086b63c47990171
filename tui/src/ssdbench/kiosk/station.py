"""Station mode (`[station]` in the kiosk config): the session stays up after the drives
present at boot are done, and erases drive after drive as they are plugged in.

Every ``poll_s`` the station reads /sys/block (names and sizes, no tool run); when that
changed it runs discovery on the drives that are not being erased (no command reaches a
drive in the middle of its erase) and treats each drive it has not seen yet like one found
at boot: protected never, `select`, `destroy` (consent; ``destroy = "all-eligible"`` is the
opt-in to erase any unprotected drive), the journal (a drive whose plan already finished is
not erased again). A chosen drive starts at once in its own thread (``engine.run_job``);
the others go on. A drive pulled mid-erase fails in the engine with its reason (its record
says FAIL); the station notes it as removed.

A drive is known by its identity (``Drive.identity``: serial, model, WWN, capacity and the
place it is plugged in), never by its serial alone: two drives that report one serial
(counterfeit drives, USB bridges) are two rows, two erases and two records, and each row,
announcement and record names the other ("serial shared with sdb").

It ends when nothing is running and nothing came or went for ``idle_minutes``, or once
``drives`` drives were finished, or on cancel. The state of each drive (waiting, erasing,
verifying, PASS, FAIL, and removed when it left) is kept in a :class:`StationBoard` that the
kiosk's screen shows; every result is announced (console line, kiosk.txt). Textual is never
imported here.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Collection, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any

from ssdbench import jsonfile
from ssdbench.devices import Drive, block_devices_signature
from ssdbench.kiosk.config import KioskConfig, StationConfig, choose_drives
from ssdbench.kiosk.intake import Assigned, Intake
from ssdbench.plan.engine import DriveJob, DriveOutcome
from ssdbench.progress import Progress
from ssdbench.system import Host
from ssdbench.untrusted import shown

WAITING = "waiting"
ERASING = "erasing"
VERIFYING = "verifying"
PASS = "PASS"
FAIL = "FAIL"
POLL_S = 2.0
# the erase room's message once the erase command returned (erase/core.py)
VERIFY_MESSAGE = "checking the verification markers"


@dataclass(frozen=True)
class StationRow:
    """One drive on the station's screen."""

    name: str  # kernel name when it was found
    consent_id: str
    model: str
    state: str  # waiting | erasing | verifying | PASS | FAIL
    detail: str = ""  # the FAIL reason, or the record's category and method
    present: bool = True  # False once the drive left (pulled)
    key: str = ""  # the drive's identity (DriveIdentity.key): one row per drive
    shared_with: tuple[str, ...] = ()  # kernel names of other drives with its serial
    job: str = ""  # the lab's job that chose its plan ([jobs]), empty: the bench's default
    plan: str = ""  # the plan it runs, once known

    @property
    def label(self) -> str:
        return self.state if self.present else f"{self.state}, removed"

    @property
    def note(self) -> str:
        """"serial shared with sdb" when another drive reported the same serial."""
        return shared_note(self.shared_with)


def shared_note(names: Sequence[str]) -> str:
    return f"serial shared with {', '.join(names)}" if names else ""


def mark_shared_serials(drives: Sequence[Drive]) -> list[Drive]:
    """``drives`` (present together), each with ``serial_shared_with`` naming the others
    that report its serial (a serial names no drive then: both are erased, both named)."""
    by_serial: dict[str, list[Drive]] = {}
    for d in drives:
        if d.serial:
            by_serial.setdefault(d.serial, []).append(d)
    return [replace(d, serial_shared_with=tuple(sorted(
        {o.name for o in by_serial.get(d.serial, []) if o.identity != d.identity}
        | set(d.serial_shared_with)))) if d.serial else d for d in drives]


class StationBoard:
    """Each drive's state, fed by the engine's Progress events and by the station
    (thread-safe; the kiosk's screen reads :meth:`rows`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._rows: dict[str, StationRow] = {}  # by identity key
        self._by_name: dict[str, str] = {}  # kernel name -> identity key of the drive there

    def found(self, drive: Drive) -> None:
        """A row for the drive; the row of an earlier drive of the same identity (it left,
        and this one cannot be told from it) stays, under a key of its own."""
        key = drive.identity.key
        with self._lock:
            if key in self._rows:
                n = len(self._rows)
                self._rows = {(f"{k}#{n}" if k == key else k): (
                    replace(v, key=f"{k}#{n}") if k == key else v)
                    for k, v in self._rows.items()}
            self._rows[key] = StationRow(drive.name, drive.consent_id, drive.model, WAITING,
                                         key=key, shared_with=drive.serial_shared_with)
            self._by_name[drive.name] = key

    def shared(self, key: str, names: Collection[str]) -> None:
        """Another drive present reports this drive's serial: the row names it."""
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows[key] = replace(row, shared_with=tuple(sorted(
                    set(row.shared_with) | set(names))))

    def asking(self, key: str, name: str | None) -> None:
        """The drive waits for its field ``name`` (typed or scanned); None: it has them."""
        self._detail(key, f"waiting for its {name} (scan or type it)" if name else "")

    def waits(self, key: str, why: str) -> None:
        """The drive is not run (no job, two jobs, ...): why, on its row."""
        self._detail(key, why)

    def assigned(self, key: str, plan: str, job: str) -> None:
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows[key] = replace(row, plan=plan, job=job, detail="")

    def _detail(self, key: str, detail: str) -> None:
        with self._lock:
            row = self._rows.get(key)
            if row is not None and row.state == WAITING:
                self._rows[key] = replace(row, detail=detail)

    def row(self, key: str) -> StationRow | None:
        with self._lock:
            return self._rows.get(key)

    def twins_of(self, key: str) -> tuple[str, ...]:
        """The kernel names of the drives seen reporting the serial of the drive ``key``."""
        row = self.row(key)
        return row.shared_with if row is not None else ()

    def __call__(self, ev: Progress) -> None:
        with self._lock:
            key = self._by_name.get(ev.drive)
            row = self._rows.get(key) if key is not None else None
            if row is None or row.state in (PASS, FAIL) or ev.stage != "erase":
                return
            state = row.state
            if ev.state == "running":
                state = VERIFYING if (state == VERIFYING or ev.message == VERIFY_MESSAGE) \
                    else ERASING
            self._rows[row.key] = replace(row, state=state)

    def finished(self, key: str, passed: bool, detail: str) -> None:
        """The drive of identity ``key`` ended: PASS or FAIL, and what to say."""
        with self._lock:
            row = self._rows.get(key)
            if row is not None:
                self._rows[key] = replace(row, state=PASS if passed else FAIL, detail=detail)

    def present(self, keys: set[str]) -> list[StationRow]:
        """Mark the drives whose identity is not in ``keys`` removed; return the ones that
        just left."""
        gone = []
        with self._lock:
            for key, row in self._rows.items():
                if row.present and key not in keys:
                    self._rows[key] = replace(row, present=False)
                    gone.append(self._rows[key])
        return gone

    def rows(self) -> list[StationRow]:
        with self._lock:
            return list(self._rows.values())


def record_summary(outcome: DriveOutcome) -> tuple[bool, str]:
    """PASS or FAIL of a finished drive and what to say, on one line: the record's category,
    method and file (drive folder/run/erase-record.json, as found in the results folder on
    the stick), or the reason it failed, from the erase run's run.json."""
    run = outcome.runs[-1] if outcome.runs else None
    passed = outcome.state == "done"
    reason = "" if run is None or run.error is None else " ".join(str(run.error).split())
    if run is None or run.run_dir is None:
        return passed, reason or "no record written"
    try:
        data: Any = jsonfile.read(run.run_dir / "run.json")
    except (OSError, ValueError):
        data = {}
    rec = data.get("erase_record") if isinstance(data, dict) else None
    where = f"{run.run_dir.parent.name}/{run.run_dir.name}/erase-record.json"
    if not isinstance(rec, dict):
        return passed, reason or "no record written"
    signed = "signed" if rec.get("signed") else "UNSIGNED"
    method = (data.get("erase") or {}).get("method") if isinstance(data, dict) else None
    what = f"{rec.get('category') or 'no category'}, {method or 'no method'}, {signed}"
    return passed, f"{what if passed else reason}; record {where}"


def _unset(job: DriveJob) -> DriveOutcome:
    raise RuntimeError(f"Station.start not set: {job.drive.name} not erased")


@dataclass
class Station:
    """The loop of station mode (see the module docstring). ``start(drive)`` runs the plan
    on one drive and returns its outcome (blocking; it runs in a thread of its own);
    ``eligible(drive)`` is None when the drive should be erased, else why not (the journal
    says it finished, ...); ``say`` gets one line per event. ``discover(host, names)`` is
    discovery restricted to those kernel names (``devices.discover(..., only=names)``: no
    command reaches another drive)."""

    host: Host
    config: KioskConfig
    settings: StationConfig
    discover: Callable[[Host, Collection[str]], list[Drive]]
    job_for: Callable[[Drive], DriveJob | str]
    # with [jobs] or [fields]: a fresh drive's plan once its fields are in (intake.assign)
    resolve: Callable[[DriveJob, dict[str, str]], Assigned | str] | None = None
    intake: Intake | None = None  # the drives waiting for their fields (console lines)
    # the front end sets these two before run(): how a job runs, where a line goes
    start: Callable[[DriveJob], DriveOutcome] = field(default=_unset)
    say: Callable[[str], None] = field(default=lambda line: None)
    board: StationBoard = field(default_factory=StationBoard)
    cancel: threading.Event = field(default_factory=threading.Event)
    clock: Callable[[], float] = time.monotonic
    poll_s: float = POLL_S
    # identity keys (DriveIdentity.key) of the drives present already handled or skipped
    seen: set[str] = field(default_factory=set)
    known: list[Drive] = field(default_factory=list)  # every drive found in the session
    outcomes: list[DriveOutcome] = field(default_factory=list)
    # by identity key: kernel name, thread, the drive
    _running: dict[str, tuple[str, threading.Thread, Drive]] = field(default_factory=dict)
    _lock: threading.Lock = field(default_factory=threading.Lock)
    # by identity key: the drives waiting for their fields or their plan (not running yet)
    _pending: dict[str, Drive] = field(default_factory=dict)
    _ended: bool = False  # run() returned: no drive starts any more

    def add(self, job: DriveJob, *, found: bool = True) -> None:
        """Start ``job`` now (a drive found at boot or plugged in later)."""
        drive = job.drive
        key = drive.identity.key
        self.seen.add(key)
        if found:
            self.board.found(drive)
            self.board.assigned(key, job.plan.name, job.plan.params.job)
        if job.twins is None:  # the record names a twin plugged in while this one erases
            job = replace(job, twins=partial(self.board.twins_of, key))
        thread = threading.Thread(target=self._work, args=(job,), daemon=True,
                                  name=f"station-{drive.name}")
        with self._lock:
            if self._ended:  # its plan came after the session ended
                return
            self._running[key] = (drive.name, thread, drive)
        thread.start()

    def _work(self, job: DriveJob) -> None:
        drive = job.drive
        key = drive.identity.key
        try:
            outcome = self.start(job)
        except Exception as exc:  # start() should not raise; a bug must not stop the station
            outcome = DriveOutcome(drive.name, drive.consent_id, None, ())
            self.say(f"station: {drive.name} ({drive.consent_id}): {type(exc).__name__}: {exc}")
        passed, detail = record_summary(outcome)
        row = self.board.row(key)
        note = shared_note(row.shared_with if row is not None else drive.serial_shared_with)
        if note:
            outcome = replace(outcome, notes=(*outcome.notes, note))
        self.board.finished(key, passed, detail)
        self.say(f"station: {drive.name} ({drive.consent_id}) {PASS if passed else FAIL}: "
                 f"{detail}" + (f"; {note}" if note else ""))
        with self._lock:
            self.outcomes.append(outcome)
            self._running.pop(key, None)

    def running(self) -> int:
        with self._lock:
            return len(self._running)

    def take_in(self, job: DriveJob) -> None:
        """A fresh drive with [jobs] or [fields]: its row, its fields asked (the intake),
        then its plan (:attr:`resolve`) and its start; or why it waits."""
        drive = job.drive
        key = drive.identity.key
        self.seen.add(key)
        self.board.found(drive)
        with self._lock:
            self._pending[key] = drive
        who = f"{drive.name} ({drive.consent_id})"

        def resolved(values: dict[str, str]) -> None:
            # in a thread of its own: the plan may wait for a job file being fetched, and
            # neither the station's loop nor the console's reader waits with it
            threading.Thread(target=self._resolved, args=(job, values), daemon=True,
                             name=f"station-intake-{drive.name}").start()

        if self.intake is not None:
            self.intake.add(key, who, resolved)
        else:
            resolved({})

    def _resolved(self, job: DriveJob, values: dict[str, str]) -> None:
        drive = job.drive
        key = drive.identity.key
        who = f"{drive.name} ({drive.model or '?'} {drive.consent_id})"
        assert self.resolve is not None
        with self._lock:
            if key not in self._pending:
                return  # it left meanwhile
        got = self.resolve(job, values)
        if isinstance(got, str):
            self.board.waits(key, got)
            self.say(f"station: {who} {got}{_also(drive)}")
        else:
            self.board.assigned(key, got.plan.name, got.plan.params.job)
            self.say(f"station: {who} found: running {got.described}{_also(drive)}")
            self.add(replace(job, plan=got.plan), found=False)
        with self._lock:  # only now: until it runs, the session is not idle
            self._pending.pop(key, None)

    def pending(self) -> int:
        """The drives waiting for their fields."""
        with self._lock:
            return len(self._pending)

    def scan(self) -> None:
        """Discover the drives that are not running, announce the ones that left, start the
        new ones the config chooses, and say why the others are not erased."""
        with self._lock:
            busy = {name for name, _t, _d in self._running.values()}
            busy_drives = [d for _n, _t, d in self._running.values()]
        free = [n for n in self.host.fs.listdir("/sys/block") if n not in busy]
        # every disk erasing: no discovery at all (no tool may read a drive in its erase)
        drives = self.discover(self.host, free) if free else []
        here = {d.identity.key for d in [*drives, *busy_drives]}
        for row in self.board.present(here):
            self.say(f"station: {row.name} ({row.consent_id}) removed ({row.state})")
        if self.intake is not None:
            self.intake.drop(here)
        with self._lock:
            self._pending = {k: d for k, d in self._pending.items() if k in here}
        # every drive present, erasing or not: a serial two of them report names neither
        marked = mark_shared_serials([*drives, *busy_drives])
        for d in marked:
            if d.serial_shared_with:
                self.board.shared(d.identity.key, d.serial_shared_with)
        new = [d for d in marked[:len(drives)] if d.identity.key not in self.seen]
        self.known.extend(d for d in new if d.identity not in
                          {k.identity for k in self.known})
        chosen, skipped = choose_drives(self.config,
                                        [(d.consent_id, d.model, d.protected) for d in new])
        for i, why in skipped:
            self.seen.add(new[i].identity.key)
            self.say(f"station: {new[i].name} ({new[i].model or '?'} {new[i].consent_id}) "
                     f"plugged in, not erased: {why}{_also(new[i])}")
        for i in chosen:
            drive = new[i]
            job = self.job_for(drive)
            if isinstance(job, str):
                self.seen.add(drive.identity.key)
                self.say(f"station: {drive.name} ({drive.consent_id}) not erased: {job}"
                         f"{_also(drive)}")
                continue
            if self.resolve is not None and not job.resume:
                self.take_in(job)
                continue
            self.say(f"station: {drive.name} ({drive.model or '?'} {drive.consent_id}) "
                     f"found: {'resuming' if job.resume else 'erasing'}{_also(drive)}")
            self.add(job)
        # a drive that left is looked at again when it comes back
        self.seen &= here

    def _finished_enough(self) -> bool:
        limit = self.settings.drives
        with self._lock:
            return limit is not None and len(self.outcomes) >= limit and not self._running

    def run(self) -> list[DriveOutcome]:
        """Watch for drives until idle, the drive count, or cancel; then wait for the
        running ones. Returns every drive's outcome in the order they finished."""
        idle_s = self.settings.idle_minutes * 60.0
        limit = "" if self.settings.drives is None else f", or after {self.settings.drives} drives"
        # first the signature, then one look: a drive plugged in since the kiosk's discovery
        # at boot is found now, one plugged in after this read at the next poll
        last = block_devices_signature(self.host)
        self.scan()
        self.say(f"station: waiting for drives (ends after {self.settings.idle_minutes:g} min "
                 f"with none running or plugged in{limit})")
        last_activity = self.clock()
        ended = 0  # drives finished at the last look
        while not self.cancel.is_set():
            now = self.clock()
            if self._finished_enough():
                self.say(f"station: {self.settings.drives} drives finished: the session ends")
                break
            with self._lock:  # one look: a drive ending after it is seen at the next
                finished, ended = len(self.outcomes) != ended, len(self.outcomes)
                typing = self.intake is None or not self.intake.closed
                running = len(self._running) + (len(self._pending) if typing else 0)
            sig = block_devices_signature(self.host)
            # a drive that finished was hidden from discovery while it ran: look again
            if sig != last or finished:
                last, last_activity = sig, now
                self.scan()
            if running == 0 and now - last_activity >= idle_s:
                self.say(f"station: idle for {self.settings.idle_minutes:g} min: "
                         "the session ends")
                break
            self.cancel.wait(self.poll_s)
        with self._lock:
            self._ended = True
            left = list(self._pending.values())
        for d in left:
            self.say(f"station: {d.name} ({d.consent_id}) was still waiting when the session "
                     "ended: not tested")
        for _name, thread in self._threads():
            while thread.is_alive():
                thread.join(0.5)
        with self._lock:
            return list(self.outcomes)

    def _threads(self) -> Sequence[tuple[str, threading.Thread]]:
        with self._lock:
            return [(name, thread) for name, thread, _d in self._running.values()]


def _also(drive: Drive) -> str:
    note = shared_note(drive.serial_shared_with)
    return f" ({note})" if note else ""


def station_lines(rows: Sequence[StationRow]) -> list[str]:
    """kiosk.txt's station part: one line per drive with its state and detail (and the
    drives that share its serial)."""
    # a drive's model and serial are its own words: one line each, no escapes (shown)
    return [shown(f"station: {r.name} ({r.model or '?'} {r.consent_id}) {r.label}"
                  + (f" [plan {r.plan}, job {r.job}]" if r.job else "")
                  + (f": {r.detail}" if r.detail else "") + (f" ({r.note})" if r.note else ""),
                  limit=2000)
            for r in rows]

