"""Run one fio job through the process boundary and follow it live.

``fio --output-format=json --status-interval=1 jobs/<stage>.fio`` is started with
:meth:`Runner.stream` from the run folder. Each status dump becomes a :class:`LiveStatus`
(per-second IOPS and MiB/s from the difference of consecutive cumulative dumps, bytes done,
fraction and ETA) handed to a callback. The final JSON object goes to ``fio/<stage>.json``.

How a stage ends, never a success by accident:

* ``done``: fio exited 0, no job reports an ``error``, size-based jobs moved every byte;
* ``cancelled``: the cancel event was set; fio got SIGINT (it stops cleanly and writes its
  logs) and what it logged is kept;
* ``failed``: non-zero exit, killed by a signal, ``error`` in the job JSON, no final JSON,
  a short transfer, or no status for ``status_timeout_s`` (hung: fio is stopped).
"""

from __future__ import annotations

import json
import os
import signal
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from ssdbench.fio.jobs import JobFile
from ssdbench.fio.status import FioOutputError, FioReport, JsonStreamSplitter, parse_report
from ssdbench.results import atomic
from ssdbench.system import CommandError, CommandTimeout, Runner

MIB = 1024 * 1024
MIN_RATE_INTERVAL_S = 0.5  # a rate over less than this is noise, not a figure (None)


@dataclass(frozen=True)
class LiveStatus:
    """What fio did so far, from its last status dump."""

    stage: str
    elapsed_s: float
    bytes_done: int
    ios_done: int
    iops: float | None  # over the last interval
    mib_s: float | None
    fraction: float | None
    eta_s: float | None
    # fio's time 0 on the wall clock (ms): the dump's timestamp_ms minus the job's runtime;
    # None with several jobs or without a timestamp
    fio_epoch_ms: int | None = None


@dataclass(frozen=True)
class FioOutcome:
    stage: str
    state: str  # "done", "failed", "cancelled"
    reason: str | None
    report: FioReport | None  # fio's final report (None when fio gave none)
    duration_s: float
    statuses: int  # how many status dumps arrived


StatusCallback = Callable[[LiveStatus], None]


def fio_version(runner: Runner) -> str:
    """``fio-3.33``: what ``fio --version`` prints."""
    return runner.run(["fio", "--version"], timeout=30).text.strip()


def fio_argv(job: JobFile) -> list[str]:
    readonly = ["--readonly"] if job.read_only else []
    return ["fio", "--output-format=json", "--status-interval=1", *readonly, job.relpath]


def _signal_name(code: int) -> str:
    try:
        return signal.Signals(code).name
    except ValueError:
        return f"signal {code}"


def _exit_reason(exc: CommandError) -> str:
    rc = exc.returncode
    if rc is not None and rc < 0:
        text = f"fio was killed by {_signal_name(-rc)}"
    else:
        text = f"fio exited with code {rc}"
    tail = [ln for ln in exc.stderr_tail.strip().splitlines() if ln.strip()][-3:]
    return text + (": " + " | ".join(tail) if tail else "")


class _Follower:
    """Turns consecutive status dumps into LiveStatus events."""

    def __init__(self, job: JobFile, on_status: StatusCallback) -> None:
        self.job = job
        self.on_status = on_status
        self.prev: tuple[float, int, int] | None = None  # (time_s, bytes, ios)
        self.t0 = time.monotonic()
        self.count = 0

    def handle(self, report: FioReport) -> None:
        self.count += 1
        nbytes, ios = report.total(self.job.direction)
        stamp = report.timestamp_ms / 1000.0 if report.timestamp_ms else time.monotonic()
        iops = mib_s = None
        if self.prev is not None and stamp - self.prev[0] >= MIN_RATE_INTERVAL_S:
            dt = stamp - self.prev[0]
            iops = (ios - self.prev[2]) / dt
            mib_s = (nbytes - self.prev[1]) / dt / MIB
            self.prev = (stamp, nbytes, ios)
        elif self.prev is None:
            self.prev = (stamp, nbytes, ios)
        # else: too short an interval for a rate (fio's last dump comes moments after the
        # one before it: "0 IOPS 186 MiB/s"); the next dump measures from the last one kept
        # the stage's own clock bounds fio's: fio has printed the machine's uptime as a
        # job's runtime (a slow fill's first dumps), which no front end may show (#24 item 1)
        own = time.monotonic() - self.t0
        fio_s = report.runtime_ms / 1000.0
        sane = 0.0 < fio_s <= own + 1.0
        elapsed = fio_s if sane else own
        fraction = eta = None
        if self.job.runtime_s:
            fraction = min(elapsed / self.job.runtime_s, 1.0)
            eta = max(self.job.runtime_s - elapsed, 0.0)
            by_bytes = min(nbytes / self.job.bytes_goal, 1.0) if self.job.bytes_goal else 0.0
            if by_bytes > fraction:  # whichever limit comes first ends the job (WSAT)
                fraction = by_bytes
                eta = elapsed * (1.0 - by_bytes) / by_bytes
        elif self.job.total_bytes:
            fraction = min(nbytes / self.job.total_bytes, 1.0)
            if fraction > 0:
                eta = elapsed * (1.0 - fraction) / fraction
        epoch = None
        if report.timestamp_ms and len(report.jobs) == 1 and sane:
            epoch = report.timestamp_ms - report.runtime_ms
        try:
            self.on_status(
                LiveStatus(self.job.stage, elapsed, nbytes, ios, iops, mib_s, fraction, eta,
                           epoch)
            )
        except Exception:  # a progress consumer must never break a measurement
            pass


def run_fio(
    runner: Runner,
    run_dir: Path,
    job: JobFile,
    *,
    on_status: StatusCallback | None = None,
    cancel: threading.Event | None = None,
    status_timeout_s: float = 60.0,
    cancel_grace_s: float = 60.0,
) -> FioOutcome:
    """Write the job file, run fio on it, follow it, save its final JSON; never raises for
    fio's own failures (they are in the outcome)."""
    run_dir = Path(run_dir)
    job.write(run_dir)
    t0 = time.monotonic()
    follower = _Follower(job, on_status or (lambda _s: None))
    splitter = JsonStreamSplitter()
    proc = runner.stream(fio_argv(job), cwd=run_dir)
    finished = threading.Event()
    cancelled = threading.Event()

    def watch() -> None:
        assert cancel is not None
        while not finished.is_set():
            if cancel.wait(0.25):
                cancelled.set()
                proc.terminate(grace_s=cancel_grace_s)
                return

    watcher = None
    if cancel is not None:
        watcher = threading.Thread(target=watch, name=f"fio-cancel-{job.stage}", daemon=True)
        watcher.start()

    reason: str | None = None
    try:
        try:
            for chunk in proc.chunks(idle_timeout=status_timeout_s):
                for obj in splitter.feed(chunk):
                    try:
                        follower.handle(parse_report(obj))
                    except FioOutputError:
                        continue
            for obj in splitter.finish():
                try:
                    follower.handle(parse_report(obj))
                except FioOutputError:
                    continue
        except CommandTimeout:
            reason = (
                f"fio hung: no status from fio for {status_timeout_s:g} s; it was stopped"
            )
        try:
            proc.wait()
        except CommandError as exc:
            if reason is None:
                reason = _exit_reason(exc)
    finally:
        finished.set()
        if watcher is not None:
            watcher.join(timeout=cancel_grace_s + 15)

    final: FioReport | None = None
    if splitter.texts:
        try:
            final = parse_report(json.loads(splitter.texts[-1]))
        except (FioOutputError, ValueError):
            final = None
    # The last object is the final report unless fio died before printing one.
    exited_by_itself = reason is None
    if final is not None and (exited_by_itself or cancelled.is_set()):
        atomic.write_text(run_dir / "fio" / f"{job.stage}.json", splitter.texts[-1] + "\n")
    duration = time.monotonic() - t0

    def outcome(state: str, why: str | None) -> FioOutcome:
        return FioOutcome(job.stage, state, why, final, duration, follower.count)

    if cancelled.is_set():
        return outcome("cancelled", "cancelled by the user")
    if reason is not None:
        return outcome("failed", reason)
    if final is None:
        return outcome("failed", "fio printed no final JSON report")
    if final.errors:
        details = "; ".join(
            f"job {j.name!r}: error {j.error} ({os.strerror(j.error)})"
            for j in final.jobs if j.error
        )
        return outcome("failed", f"fio reported errors: {details}")
    nbytes, _ = final.total(job.direction)
    if job.total_bytes is not None and nbytes < job.total_bytes:
        return outcome(
            "failed", f"fio moved {nbytes} of {job.total_bytes} bytes: the span was not covered"
        )
    if job.runtime_s is not None and nbytes == 0:
        return outcome("failed", "fio completed no I/O")
    return outcome("done", None)
