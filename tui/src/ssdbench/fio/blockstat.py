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

So while a time-based IOPS stage runs (the torture, the random read), a thread reads the
target's ``/sys/class/block/<dev>/stat`` (the kernel's completed-I/O counters: sectors are
counted as requests complete) with the wall-clock time of each read, densely around each
second of fio's clock and every 100 ms in between, into ``fio/<stage>_blockstat.csv``.
fio's time 0 (its job epoch) comes from its status dumps: ``timestamp_ms - job_runtime``
(the smallest over the dumps: a dump is printed after its snapshot). ``fio/logs.py`` then
interpolates the cumulative counts at the whole seconds of that epoch: exact seconds,
whatever fio's helper thread did, and a stall is a stall.

Files (written as the stage runs: rows reach the file about once a second, not fsynced;
in kiosk mode the results live in RAM and reach the stick when a stage starts or ends):

* ``fio/<stage>_blockstat.csv``: a header line, then ``time_ns`` (CLOCK_REALTIME) and the
  stat file's fields as the kernel prints them (Documentation/block/stat.rst: reads, reads
  merged, sectors read, ms reading, writes, writes merged, sectors written, …; sectors are
  512 bytes; the header names as many fields as the kernel prints);
* ``fio/<stage>_blockstat.json``: the device, the stat path, the I/O size of the job,
  fio's epoch (``fio_epoch_ns``) and how it was found.

Reading the stat file costs a few microseconds; about 16 reads a second.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from ssdbench.results import atomic

NS = 1_000_000_000
DENSE_NS = 5_000_000  # before fio's epoch is known: every 5 ms
EDGE_NS = 2_000_000  # around a second's edge: every 2 ms ...
NEAR_NS = 6_000_000  # ... from 6 ms before it to 6 ms after it
COARSE_NS = 100_000_000  # elsewhere every 100 ms
FLUSH_NS = NS  # rows reach the file about once a second
# the stat file's fields (Documentation/block/stat.rst; older kernels print fewer)
STAT_FIELDS = ("reads", "reads_merged", "sectors_read", "ms_reading", "writes",
               "writes_merged", "sectors_written", "ms_writing", "in_flight", "io_ticks_ms",
               "queue_ms", "discards", "discards_merged", "sectors_discarded",
               "ms_discarding", "flushes", "ms_flushing")
HEADER_START = b"time_ns,"


def stat_path(kernel_name: str) -> str:
    return f"/sys/class/block/{kernel_name}/stat"


def trace_paths(fio_dir: Path, stage: str) -> tuple[Path, Path]:
    """(rows, metadata) of a stage's block-layer trace."""
    return fio_dir / f"{stage}_blockstat.csv", fio_dir / f"{stage}_blockstat.json"


def next_sample_ns(now: int, epoch: int | None) -> int:
    """When to read the counters next: every ``DENSE_NS`` until fio's epoch is known, then
    every ``EDGE_NS`` within ``NEAR_NS`` of a whole second of fio's clock, the first read
    of an edge ``NEAR_NS`` before it, and every ``COARSE_NS`` elsewhere."""
    if epoch is None or now < epoch - NEAR_NS:
        return now + DENSE_NS
    phase = (now - epoch) % NS
    if phase < NEAR_NS or NS - phase <= NEAR_NS:
        return now + EDGE_NS
    to_near = NS - phase - NEAR_NS
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


class BlockStatSampler:
    """Samples one block device's stat file in a thread while a fio stage runs.

    ``start()`` before fio starts, ``offer_epoch()`` from each status dump, ``stop()`` after
    fio exited (one last read). Never raises into the stage: a device that goes away or a
    results medium that fails ends the trace (``error`` says why)."""

    def __init__(self, stat: str, fio_dir: Path, stage: str, *, device: str,
                 direction: str, io_size: int) -> None:
        self.stat = stat
        self.rows_path, self.meta_path = trace_paths(fio_dir, stage)
        self.meta = TraceMeta(device, stat, direction, io_size, None)
        self.error: str | None = None
        self.samples = 0
        self._epoch: int | None = None
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread: threading.Thread | None = None
        self._started_ns = time.time_ns()

    def start(self) -> bool:
        """Open the stat file and start sampling; False (and ``error``) when it cannot."""
        self._started_ns = time.time_ns()
        try:
            self._fd = os.open(self.stat, os.O_RDONLY)
        except OSError as exc:
            self.error = f"cannot read {self.stat}: {exc.strerror or exc}"
            return False
        try:
            fields = len(os.pread(self._fd, 4096, 0).split())
        except OSError as exc:
            os.close(self._fd)
            self.error = f"cannot read {self.stat}: {exc.strerror or exc}"
            return False
        names = [*STAT_FIELDS[:fields], *(f"field{i + 1}" for i in range(17, fields))]
        try:
            self.rows_path.parent.mkdir(parents=True, exist_ok=True)
            # the file appears with its header (atomically): a copy of it taken at any
            # moment (the kiosk copies results to the stick as they change) is a CSV
            atomic.write_text(self.rows_path, ",".join(["time_ns", *names]) + "\n")
            self._out = self.rows_path.open("a", encoding="ascii")
            self._write_meta()
        except OSError as exc:
            os.close(self._fd)
            self.error = f"cannot write {self.rows_path}: {exc.strerror or exc}"
            return False
        thread = threading.Thread(target=self._run, name=f"blockstat-{self.stat}", daemon=True)
        try:
            thread.start()
        except RuntimeError as exc:  # no thread to be had: no trace, the stage goes on
            self._out.close()
            os.close(self._fd)
            self.error = f"cannot start the sampling thread: {exc}"
            return False
        self._thread = thread
        return True

    def offer_epoch(self, epoch_ms: int) -> None:
        """A status dump's ``timestamp_ms - job_runtime`` (the earliest one wins)."""
        epoch = int(epoch_ms) * 1_000_000
        with self._lock:
            # the sampler starts before fio: an epoch before its start is not fio's job start
            # (a dump taken while the job was still being set up, a clock step)
            if epoch < self._started_ns - NS:
                return
            if self._epoch is not None and epoch >= self._epoch:
                return
            first = self._epoch is None
            self._epoch = epoch
        if first:
            self._write_meta()

    def stop(self) -> None:
        if self._thread is None:
            return
        self._stop.set()
        self._thread.join(timeout=10)
        if self._thread.is_alive():
            self.error = self.error or "the sampling thread did not stop within 10 s"
        self._thread = None
        self._write_meta()

    # ---- the thread ----

    def _write_meta(self) -> None:
        with self._lock:
            meta = TraceMeta(self.meta.device, self.meta.stat_path, self.meta.direction,
                             self.meta.io_size, self._epoch)
        self.meta = meta
        try:
            atomic.write_text(self.meta_path, json.dumps(meta.to_dict(), indent=1) + "\n")
        except OSError as exc:
            self.error = self.error or f"cannot write {self.meta_path}: {exc.strerror or exc}"

    def _sample(self, buf: list[str]) -> bool:
        # stamped before the read: the kernel formats the counters within microseconds of
        # the call, while taking the GIL back after it can take milliseconds
        now = time.time_ns()
        try:
            raw = os.pread(self._fd, 4096, 0)
        except OSError as exc:  # the device went away
            self.error = f"{self.stat}: {exc.strerror or exc} (the trace ends here)"
            return False
        fields = raw.split()
        if len(fields) < 7:
            self.error = f"{self.stat}: unexpected content {raw[:80]!r} (the trace ends here)"
            return False
        buf.append(f"{now}," + ",".join(f.decode("ascii") for f in fields) + "\n")
        self.samples += 1
        return True

    def _flush(self, buf: list[str]) -> bool:
        try:
            self._out.write("".join(buf))
            self._out.flush()
        except (OSError, ValueError) as exc:
            self.error = f"cannot write {self.rows_path}: {exc} (the trace ends here)"
            return False
        buf.clear()
        return True

    def _run(self) -> None:
        buf: list[str] = []
        last_flush = time.time_ns()
        try:
            ok = self._sample(buf)
            while ok and not self._stop.is_set():
                with self._lock:
                    epoch = self._epoch
                now = time.time_ns()
                wait = next_sample_ns(now, epoch) - now
                if self._stop.wait(max(wait, 0) / NS):
                    break
                ok = self._sample(buf)
                if ok and time.time_ns() - last_flush >= FLUSH_NS:
                    ok = self._flush(buf)
                    last_flush = time.time_ns()
            if ok:
                self._sample(buf)  # after fio exited: the end of the last second
            self._flush(buf)
        finally:
            try:
                self._out.close()
            except OSError:
                pass
            os.close(self._fd)
