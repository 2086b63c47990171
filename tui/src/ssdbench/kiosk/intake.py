"""Intake: each drive's job (the lab's job file, ``[jobs]``) and the operator's fields
(``[fields] ask``), typed or scanned on the console (docs/kiosk.md "Jobs and the operator's
fields").

* :class:`JobSource` holds the job file: fetched at the start and again when a drive arrives
  in station mode (lab/jobs.py :func:`fetch_jobs`: a deadline, whole or not at all). A file
  that cannot be fetched or read is a console line, and no drive runs a plan while it is so
  (:func:`assign`: the drive waits; the bench cannot tell which drives have a job).
* :class:`Intake` is the queue of drives waiting for their fields. A barcode scanner is a
  keyboard that types the code and Enter: each line read from the console fills the next
  field of the first drive waiting, in the order of ``ask``; a line is only ever a value,
  never a command. Empty lines are ignored (a scanner ending its code with CR LF gives one);
  ``-`` alone leaves the field empty.
* :func:`assign` gives one drive its plan: the job's (its params over the config's
  ``[params]``), else the config's own, or none (it waits: no job and ``no_job = "wait"``,
  two jobs of one rank, a job file that cannot be read, a plan that writes without
  `destroy` naming the drive: a job file never widens consent). The fields go into the
  plan's params (asset_tag, customer, lot, extra_fields, job).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TextIO

from ssdbench.devices import Drive
from ssdbench.kiosk.config import KioskConfig
from ssdbench.lab.jobs import (
    BUILTIN_FIELDS,
    JOBS_TIMEOUT_S,
    Job,
    JobFile,
    JobsError,
    check_value,
    fetch_jobs,
    parse_jobs,
)
from ssdbench.plan.plans import Plan, PlanError, build_plan
from ssdbench.untrusted import shown

EMPTY = "-"  # a line of just this leaves the field empty


class JobSource:
    """The config's job file, as last fetched (thread-safe): a JobFile, or the JobsError
    that says why there is none."""

    def __init__(self, config: KioskConfig, *, timeout_s: float = JOBS_TIMEOUT_S,
                 fetch: Callable[..., tuple[str, bytes]] = fetch_jobs) -> None:
        assert config.jobs is not None
        self.config = config
        self.jobs = config.jobs
        self.timeout_s = timeout_s
        self._fetch = fetch
        self._lock = threading.Lock()
        self.current: JobFile | JobsError = JobsError("job file: not fetched yet")
        self._idle = threading.Event()  # no fetch under way
        self._idle.set()

    def refresh(self, say: Callable[[str], None]) -> JobFile | JobsError:
        """Fetch and parse the file again (within the deadline); say what came of it."""
        names = (*BUILTIN_FIELDS, *(self.config.fields.names if self.config.fields else ()))
        try:
            if self.jobs.url is not None:
                where, raw = self._fetch(url=self.jobs.url, timeout_s=self.timeout_s)
            else:
                where, raw = self._fetch(store=self.config.store, key=self.jobs.store,
                                         timeout_s=self.timeout_s)
            got: JobFile | JobsError = parse_jobs(raw, where, plans=self.jobs.plans,
                                                  field_names=names)
        except JobsError as exc:
            got = exc
        with self._lock:
            self.current = got
        if isinstance(got, JobsError):
            say(f"jobs: {got}; no drive runs a plan until it can be read")
        else:
            say(f"jobs: {len(got.jobs)} jobs read from {got.source}")
        return got

    def refresh_soon(self, say: Callable[[str], None]) -> None:
        """:meth:`refresh` in a thread of its own (station mode: a drive arrived; the
        station's loop and its other drives never wait for the server). A fetch already
        under way is the one this drive gets."""
        with self._lock:
            if not self._idle.is_set():
                return
            self._idle.clear()

        def fetch() -> None:
            try:
                self.refresh(say)
            finally:
                self._idle.set()

        threading.Thread(target=fetch, daemon=True, name="ssdbench-jobs").start()

    def get(self) -> JobFile | JobsError:
        """The file as last fetched; a fetch under way is waited for (its deadline)."""
        self._idle.wait(self.timeout_s + 5.0)
        with self._lock:
            return self.current


@dataclass(frozen=True)
class Assigned:
    plan: Plan
    job: Job | None = None

    @property
    def described(self) -> str:
        """``plan erase (job J-1)`` or ``plan quick (the bench's default)``."""
        return (f"plan {self.plan.name} ("
                + (f"job {shown(self.job.id, limit=200)}" if self.job is not None
                   else "the bench's default") + ")")


def assign(config: KioskConfig, default: Plan, jobs: JobFile | JobsError | None,
           drive: Drive, typed: Mapping[str, str]) -> Assigned | str:
    """The drive's plan (see the module docstring), or why it waits."""
    job = None
    if config.jobs is not None:
        if isinstance(jobs, JobsError) or jobs is None:
            return f"waiting: the job file cannot be read ({jobs or 'not fetched'})"
        try:
            job = jobs.find(drive.consent_id, drive.model, typed.get("lot", ""))
        except JobsError as exc:
            return f"waiting: {exc}"
        if job is None and config.jobs.no_job == "wait":
            return (f"waiting: no job for it in {jobs.source} (no_job = \"wait\"): add one "
                    "and plug it in again")
    plan = default
    if job is not None:
        try:
            plan = build_plan(job.plan)
            params = {**config.params, **dict(job.params)}
            if params:
                plan = plan.with_params(params, source=f"{config.source} [params] and job "
                                        f"{job.id}")
        except PlanError as exc:
            return f"waiting: {job.described}: {shown(str(exc), limit=300)}"
    if plan.destructive and not config.destroy_names(drive.consent_id):
        whose = job.described if job is not None else "the bench's default"
        return (f"not run: {whose} plan {plan.name} erases and writes, and `destroy` does not "
                "name this drive (a job file never widens consent)")
    values = {**dict(job.fields if job is not None else ()),
              **{k: v for k, v in typed.items()}}
    p = plan.params
    extra = dict(p.extra_fields)
    extra.update({k: v for k, v in values.items() if k not in BUILTIN_FIELDS})
    run_params = replace(p, asset_tag=values.get("asset_tag", p.asset_tag),
                     customer=values.get("customer", p.customer),
                     lot=values.get("lot", p.lot), extra_fields=tuple(extra.items()),
                     job=job.id if job is not None else "")
    return Assigned(replace(plan, params=run_params), job)


@dataclass
class Waiting:
    """A drive waiting for its fields."""

    key: str  # the drive's identity key
    who: str  # "sdb (S3EV...)" as lines name it
    done: Callable[[dict[str, str]], None]
    values: dict[str, str] = field(default_factory=dict)


class Intake:
    """The drives waiting for their fields, first come first served (thread-safe).
    ``asking(key, field)`` is called when a drive's next field is asked (None: it has them
    all), ``say`` gets one line per event."""

    def __init__(self, ask: Iterable[str], say: Callable[[str], None],
                 asking: Callable[[str, str | None], None] = lambda key, name: None) -> None:
        self.ask = tuple(ask)
        self.say = say
        self.asking = asking
        self._queue: list[Waiting] = []
        self._lock = threading.Lock()
        self.idle = threading.Event()
        self.idle.set()
        self.closed = False  # the console ended: nothing more can be typed

    def close(self) -> None:
        """The console ended (no more lines): the drives waiting are not tested."""
        with self._lock:
            self.closed = True
            gone, self._queue = self._queue, []
            self.idle.set()
        for w in gone:
            self.say(f"intake: {w.who}: the console ended before its fields were in: "
                     "not tested")

    def add(self, key: str, who: str, done: Callable[[dict[str, str]], None]) -> None:
        """Queue a drive; ``done(values)`` is called (in the feeding thread) once its
        fields are in. With no fields to ask, at once."""
        if not self.ask:
            done({})
            return
        if self.closed:
            self.say(f"intake: {who}: no console to scan or type its {self.ask[0]} on: "
                     "not tested")
            return
        with self._lock:
            self._queue.append(Waiting(key, who, done))
            first = len(self._queue) == 1
            self.idle.clear()
        self.asking(key, self.ask[0])
        if first:
            self._prompt()
        else:
            self.say(f"intake: {who} waits for its {self.ask[0]} (after the drive before it)")

    def waiting(self) -> int:
        with self._lock:
            return len(self._queue)

    def keys(self) -> list[str]:
        with self._lock:
            return [w.key for w in self._queue]

    def _prompt(self) -> None:
        with self._lock:
            if not self._queue:
                return
            w = self._queue[0]
            name = self.ask[len(w.values)]
        self.say(f"intake: {w.who}: scan or type its {name}, then Enter")

    def feed(self, line: str) -> None:
        """One line from the console: the next field of the first drive waiting."""
        value = line.strip("\r\n").strip()
        if not value:
            return
        with self._lock:
            if not self._queue:
                w = None
            else:
                w = self._queue[0]
                name = self.ask[len(w.values)]
        if w is None:
            self.say(f"intake: no drive waits for a field: {shown(value, limit=60)!r} not used")
            return
        if value == EMPTY:
            value = ""
        else:
            why = check_value(value)
            if why:
                self.say(f"intake: {w.who}: {name} not taken ({why}): scan or type it again")
                return
        finished = None
        with self._lock:
            if not self._queue or self._queue[0] is not w:
                return  # the drive left while the line was read
            w.values[name] = value
            if len(w.values) == len(self.ask):
                finished = self._queue.pop(0)
        self.say(f"intake: {w.who}: {name} = {shown(value, limit=MAX_SHOWN)!r}")
        if finished is not None:
            self.asking(w.key, None)
            finished.done(dict(finished.values))
            # idle only once the drive's values are handed over: a kiosk waiting on it
            # reads them next (set before, it read none: "its fields were not entered")
            with self._lock:
                if not self._queue:
                    self.idle.set()
        else:
            self.asking(w.key, self.ask[len(w.values)])
        self._prompt()

    def drop(self, present: set[str]) -> list[Waiting]:
        """Forget the drives that left (identity keys not in ``present``)."""
        with self._lock:
            gone = [w for w in self._queue if w.key not in present]
            self._queue = [w for w in self._queue if w.key in present]
            if not self._queue:
                self.idle.set()
        for w in gone:
            self.say(f"intake: {w.who} left before its fields were in: not tested")
        if gone:
            self._prompt()
        return gone

    def pending(self) -> list[Waiting]:
        with self._lock:
            return list(self._queue)


MAX_SHOWN = 128


def read_lines(stream: TextIO, intake: Intake, cancel: threading.Event) -> threading.Thread:
    """A daemon thread feeding each line of ``stream`` (the console) to ``intake``; it ends
    at the end of the stream or when ``cancel`` is set (at the next line)."""

    def loop() -> None:
        try:
            for line in stream:
                if cancel.is_set():
                    return
                intake.feed(line[:4096])
        except (OSError, ValueError, UnicodeDecodeError):
            pass  # no console to read (closed, or not text): nothing is typed then
        intake.close()

    thread = threading.Thread(target=loop, daemon=True, name="ssdbench-intake")
    thread.start()
    return thread
