"""The block layer's own count of completed I/O, sampled on fio's second edges.

fio's averaged per-second IOPS log (``log_avg_msec=1000``) cannot give exact seconds: its
helper thread takes a sample only every ``iopsavgtime`` (500 ms), stamps rows at its own
drifting wake-ups (about a millisecond a row, a quarter of a second after three minutes
on a loaded host), writes no row for a sample without completions and averages only the
samples that had some, and it is blocked while a ``--status-interval`` dump waits for the
job thread (which sits in ``io_getevents`` through a drive's stall). On a drive whose rate
swings within a second (garbage collection) or stalls for seconds, the seconds of
``iops.csv`` built from those rows were off by 12% (median) and the zero-IOPS seconds
wrong (docs/engine.md "Per-second series").

So while a time-based IOPS stage runs (the torture, the random read), a small process of
its own (``python -m ssdbench.fio.blockstat``, started through the runner like every
command) reads the target's ``/sys/class/block/<dev>/stat`` (the kernel's completed-I/O
counters: sectors are counted as requests complete) with the wall-clock time of each read,
densely around each second of fio's clock and every 100 ms in between, into
``fio/<stage>_blockstat.csv``. It is a process, not a thread of ssdbench's, and runs as a
real-time task (``SCHED_FIFO`` priority 2) when it may (root; else at nice -15 if it may):
a read a hundred milliseconds late blurs the two seconds around that edge, and inside
ssdbench it waited for the interpreter lock behind the TUI and the engine and for the CPU
behind everything else (a thread once read 90 ms late on a loaded host; a process at
nice -15 still 25 ms late beside three CPU hogs and the rig's drive at nice -10), and its
rows reach the file from a thread of its own (``_Writer``). It sleeps between reads and
costs a few microseconds a read, about 16 reads a second.

fio's time 0 (its job epoch) comes from its status dumps: ``timestamp_ms - job_runtime``
(the smallest over the dumps: a dump is printed after its snapshot). ssdbench writes it
into ``fio/<stage>_blockstat.json``, which the sampler reads every 50 ms between edges.
``fio/logs.py`` then interpolates the cumulative counts at the whole seconds of that
epoch: exact seconds, whatever fio's helper thread did, and a stall is a stall.

Files (written as the stage runs: rows reach the file about once a second, not fsynced;
in kiosk mode the results live in RAM and reach the stick when a stage starts or ends):

* ``fio/<stage>_blockstat.csv``: a header line, then ``time_ns`` (CLOCK_REALTIME) and the
  stat file's fields as the kernel prints them (Documentation/block/stat.rst: reads, reads
  merged, sectors read, ms reading, writes, writes merged, sectors written, …; sectors are
  512 bytes; the header names as many fields as the kernel prints);
* ``fio/<stage>_blockstat.json``: the device, the stat path, the I/O size of the job,
  fio's epoch (``fio_epoch_ns``) and how it was found.

The sampler's protocol: argv ``STAT ROWS META PARENT_PID``; it prints ``ready`` once its
first row is taken, stops (one last read, the rows flushed) on SIGINT or SIGTERM or when
ssdbench (``PARENT_PID``) is gone, and prints ``error <why>`` when the trace ended early.
"""

from __future__ import annotations

import json
import os
import queue
import signal
import sys
import threading
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TextIO

from ssdbench.results import atomic
from ssdbench.system import CommandError, Runner, RunningProcess

NS = 1_000_000_000
DENSE_NS = 5_000_000  # before fio's epoch is known: every 5 ms
EDGE_NS = 2_000_000  # around a second's edge: every 2 ms ...
NEAR_NS = 6_000_000  # ... from 6 ms before it to 6 ms after it
COARSE_NS = 100_000_000  # elsewhere every 100 ms
FLUSH_NS = NS  # rows reach the file about once a second
META_NS = 50_000_000  # the sampler looks for fio's epoch (or a better one) every 50 ms
SAMPLER_RT_PRIORITY = 2  # SCHED_FIFO (root), above the test rig's simulated drives (1) ...
SAMPLER_NICE = -15  # ... else nice -15 if it may (above the drives' fallback, -10)
READY_TIMEOUT_S = 60.0  # the sampler's Python starts in a second or two under emulation
# the stat file's fields (Documentation/block/stat.rst; older kernels print fewer)
STAT_FIELDS = ("reads", "reads_merged", "sectors_read", "ms_reading", "writes",
               "writes_merged", "sectors_written", "ms_writing", "in_flight", "io_ticks_ms",
               "queue_ms", "discards", "discards_merged", "sectors_discarded",
               "ms_discarding", "flushes", "ms_flushing")
HEADER_START = b"time_ns,"
_STOP_SIGNALS = {signal.SIGINT, signal.SIGTERM}


def stat_path(kernel_name: str) -> str:
    return f"/sys/class/block/{kernel_name}/stat"


def trace_paths(fio_dir: Path, stage: str) -> tuple[Path, Path]:
    """(rows, metadata) of a stage's block-layer trace."""
    return fio_dir / f"{stage}_blockstat.csv", fio_dir / f"{stage}_blockstat.json"


def near_edge(now: int, epoch: int) -> bool:
    """Within ``NEAR_NS`` of a whole second of fio's clock."""
    phase = (now - epoch) % NS
    return phase < NEAR_NS or NS - phase <= NEAR_NS


def next_sample_ns(now: int, epoch: int | None) -> int:
    """When to read the counters next: every ``DENSE_NS`` until fio's epoch is known, then
    every ``EDGE_NS`` within ``NEAR_NS`` of a whole second of fio's clock, the first read
    of an edge ``NEAR_NS`` before it, and every ``COARSE_NS`` elsewhere."""
    if epoch is None or now < epoch - NEAR_NS:
        return now + DENSE_NS
    if near_edge(now, epoch):
        return now + EDGE_NS
    to_near = NS - (now - epoch) % NS - NEAR_NS
    return now + min(to_near, COARSE_NS)


@dataclass(frozen=True)
class TraceMeta:
    device: str
    stat_path: str
    direction: str  # "write" or "read": what the stage's IOPS count
    io_size: int  # bytes per I/O of the job (a constant block size)
    fio_epoch_ns: int | None  # fio's time 0, CLOCK_REALTIME ns (None: no status dump seen)

    def to_dict(self) -> dict[str, object]:
        return {"device": self.device, "stat_path": self.stat_path,
                "direction": self.direction, "io_size": self.io_size,
                "fio_epoch_ns": self.fio_epoch_ns,
                "epoch_from": "fio status dumps: min(timestamp_ms - job_runtime)",
                "clock": "CLOCK_REALTIME", "sector_bytes": 512}


def sampler_argv(stat: str, rows: Path, meta: Path) -> list[str]:
    """The sampler process's command line (this Python, this copy of ssdbench)."""
    return [sys.executable, "-m", "ssdbench.fio.blockstat", stat, str(rows), str(meta),
            str(os.getpid())]


def _package_root() -> str:
    """The directory that holds the ``ssdbench`` package: the sampler imports this copy
    (children get a fixed environment, so a source tree on PYTHONPATH is passed on)."""
    return str(Path(__file__).resolve().parents[2])


class BlockStatSampler:
    """Runs the sampler process for one block device while a fio stage runs.

    ``start()`` before fio starts (returns once the first row is taken),
    ``offer_epoch()`` from each status dump, ``stop()`` after fio exited (one last read).
    Never raises into the stage: a device that goes away, a results medium that fails or
    a sampler that cannot start ends the trace (``error`` says why)."""

    def __init__(self, runner: Runner, stat: str, fio_dir: Path, stage: str, *, device: str,
                 direction: str, io_size: int) -> None:
        self.runner = runner
        self.stat = stat
        self.rows_path, self.meta_path = trace_paths(fio_dir, stage)
        self.meta = TraceMeta(device, stat, direction, io_size, None)
        self.error: str | None = None
        self.samples = 0
        self._epoch: int | None = None
        self._lock = threading.Lock()
        self._proc: RunningProcess | None = None
        self._started_ns = time.time_ns()

    @property
    def pid(self) -> int | None:
        """The running sampler's process id (None before start, after stop, on a replay)."""
        pid = getattr(self._proc, "pid", None)
        return pid if isinstance(pid, int) else None

    def start(self) -> bool:
        """Write the header, start the sampler and wait for its first row; False (and
        ``error``) when it cannot."""
        self._started_ns = time.time_ns()
        try:
            fd = os.open(self.stat, os.O_RDONLY)
            try:
                fields = len(os.pread(fd, 4096, 0).split())
            finally:
                os.close(fd)
        except OSError as exc:
            self.error = f"cannot read {self.stat}: {exc.strerror or exc}"
            return False
        names = [*STAT_FIELDS[:fields], *(f"field{i + 1}" for i in range(17, fields))]
        try:
            self.rows_path.parent.mkdir(parents=True, exist_ok=True)
            # the file appears with its header (atomically): a copy of it taken at any
            # moment (the kiosk copies results to the stick as they change) is a CSV
            atomic.write_text(self.rows_path, ",".join(["time_ns", *names]) + "\n")
        except OSError as exc:
            self.error = f"cannot write {self.rows_path}: {exc.strerror or exc}"
            return False
        if not self._write_meta():
            return False
        try:
            proc = self.runner.stream(sampler_argv(self.stat, self.rows_path, self.meta_path),
                                      env={"PYTHONPATH": _package_root()})
        except CommandError as exc:
            self.error = f"cannot start the sampler: {exc.reason}"
            return False
        self._proc = proc
        said = b""
        try:
            for chunk in proc.chunks(idle_timeout=READY_TIMEOUT_S):
                said += chunk
                if b"ready\n" in said:
                    return True
        except CommandError as exc:  # hung before its first row: stopped by chunks()
            self._end(f"the sampler did not start: {exc.reason}")
            return False
        self._end(None)  # it exited before its first row: _end says why
        return False

    def offer_epoch(self, epoch_ms: int) -> None:
        """A status dump's ``timestamp_ms - job_runtime`` (the earliest one wins); the
        sampler reads it from the metadata file."""
        epoch = int(epoch_ms) * 1_000_000
        with self._lock:
            # the sampler starts before fio: an epoch before its start is not fio's job start
            # (a dump taken while the job was still being set up, a clock step)
            if epoch < self._started_ns - NS:
                return
            if self._epoch is not None and epoch >= self._epoch:
                return
            self._epoch = epoch
        self._write_meta()

    def stop(self) -> None:
        """Stop the sampler (it takes one last read) and count its rows."""
        if self._proc is None:
            return
        self._proc.terminate(grace_s=5.0)
        self._end(None)

    def _end(self, why: str | None) -> None:
        proc, self._proc = self._proc, None
        if proc is None:
            return
        rc: int | None
        try:
            result = proc.wait()
            said, rc, stderr = result.text, result.returncode, result.stderr_text
        except CommandError as exc:
            said = exc.stdout.decode("utf-8", errors="replace")
            rc, stderr = exc.returncode, exc.stderr_tail
        for line in said.splitlines():
            if line.startswith("error "):
                why = why or line.removeprefix("error ")
        if why is None and rc not in (0, None):
            tail = stderr.strip().splitlines()[-1:] or [""]
            why = f"the sampler exited with code {rc} {tail[0]}".rstrip()
        self.error = self.error or why
        try:
            with self.rows_path.open("rb") as rows:
                self.samples = max(sum(1 for _ in rows) - 1, 0)
        except OSError:
            self.samples = 0

    def _write_meta(self) -> bool:
        with self._lock:
            meta = TraceMeta(self.meta.device, self.meta.stat_path, self.meta.direction,
                             self.meta.io_size, self._epoch)
        self.meta = meta
        try:
            atomic.write_text(self.meta_path, json.dumps(meta.to_dict(), indent=1) + "\n")
        except OSError as exc:
            self.error = self.error or f"cannot write {self.meta_path}: {exc.strerror or exc}"
            return False
        return True


# ---- the sampler process ----


def _epoch_in(meta_path: str) -> int | None:
    try:
        with open(meta_path, encoding="utf-8") as meta:
            value = json.load(meta).get("fio_epoch_ns")
    except (OSError, ValueError, AttributeError):
        return None  # being replaced, or not there yet: asked again 50 ms later
    return value if isinstance(value, int) and not isinstance(value, bool) else None


class _Writer:
    """Hands the rows to the file in a thread of the sampler: a write can wait for the page
    cache (dirty-page throttling while the drive under test, or a simulated one on the
    same disk, writes hard: a read of an edge once came 7 ms late, after the window), and
    the reads must not."""

    def __init__(self, out: TextIO, path: str) -> None:
        self.out, self.path = out, path
        self.error: str | None = None
        self._rows: queue.SimpleQueue[str | None] = queue.SimpleQueue()
        self._thread = threading.Thread(target=self._run, name="rows", daemon=True)
        self._thread.start()

    def put(self, rows: list[str]) -> bool:
        """Queue rows for the file; False once a write failed (the trace ends there)."""
        self._rows.put("".join(rows))
        rows.clear()
        return self.error is None

    def close(self) -> str | None:
        """Write what is queued, close the file; the first error, if any."""
        self._rows.put(None)
        self._thread.join(timeout=30)
        if self._thread.is_alive():
            return self.error or f"cannot write {self.path}: a write did not end in 30 s"
        try:
            self.out.close()
        except OSError as exc:
            self.error = self.error or f"cannot write {self.path}: {exc.strerror or exc}"
        return self.error

    def _run(self) -> None:
        while (chunk := self._rows.get()) is not None:
            if self.error is not None:
                continue  # the trace has ended: drain the queue until close()
            try:
                self.out.write(chunk)
                self.out.flush()
            except (OSError, ValueError) as exc:
                self.error = f"cannot write {self.path}: {exc} (the trace ends here)"


def sample(stat: str, rows_path: str, meta_path: str, parent: int) -> int:
    """The sampler's loop (see the module's docstring); the exit code."""
    signal.pthread_sigmask(signal.SIG_BLOCK, _STOP_SIGNALS)  # taken by sigtimedwait below
    try:  # woken on time whatever else runs (it is busy a few µs 16 times a second)
        os.sched_setscheduler(0, os.SCHED_FIFO, os.sched_param(SAMPLER_RT_PRIORITY))
    except OSError:  # not root, or real-time is not to be had here (an RT cgroup budget)
        try:
            os.setpriority(os.PRIO_PROCESS, 0, SAMPLER_NICE)
        except OSError:
            pass  # the scheduler's default
    try:
        fd = os.open(stat, os.O_RDONLY)
        out = open(rows_path, "a", encoding="ascii")  # noqa: SIM115 (the writer closes it)
    except OSError as exc:
        print(f"error cannot open {exc.filename}: {exc.strerror or exc}", flush=True)
        return 0
    rows: list[str] = []
    error: list[str] = []

    def read() -> bool:
        # stamped before the read: the kernel formats the counters within microseconds
        now = time.time_ns()
        try:
            raw = os.pread(fd, 4096, 0)
        except OSError as exc:  # the device went away
            error.append(f"{stat}: {exc.strerror or exc} (the trace ends here)")
            return False
        fields = raw.split()
        if len(fields) < 7:
            error.append(f"{stat}: unexpected content {raw[:80]!r} (the trace ends here)")
            return False
        rows.append(f"{now}," + ",".join(f.decode("ascii") for f in fields) + "\n")
        return True

    ok = read()
    writer = _Writer(out, rows_path)
    ok = writer.put(rows) and ok
    print("ready", flush=True)
    epoch: int | None = None
    last_flush = next_meta = time.time_ns()
    while ok:
        now = time.time_ns()
        if now >= next_meta and (epoch is None or not near_edge(now, epoch)):
            epoch = _epoch_in(meta_path) or epoch
            next_meta = now + META_NS
        wait = next_sample_ns(now, epoch) - time.time_ns()
        if signal.sigtimedwait(_STOP_SIGNALS, max(wait, 0) / NS) is not None:
            break
        if os.getppid() != parent:
            error.append("ssdbench went away (the trace ends here)")
            break
        ok = read()
        if ok and time.time_ns() - last_flush >= FLUSH_NS:
            ok = writer.put(rows)
            last_flush = time.time_ns()
    if ok:
        read()  # after fio exited: the end of the last second
    writer.put(rows)
    if (failed := writer.close()) is not None:
        error.insert(0, failed)
    os.close(fd)
    if error:
        print(f"error {error[0]}", flush=True)
    return 0


def main(argv: list[str]) -> int:
    if len(argv) != 4 or not argv[3].isdigit():
        print("usage: python -m ssdbench.fio.blockstat STAT ROWS META PARENT_PID",
              file=sys.stderr)
        return 2
    return sample(argv[0], argv[1], argv[2], int(argv[3]))


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
