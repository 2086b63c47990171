"""fio's per-second logs (and the block layer's trace) → the per-second CSV files of a run.

The IOPS series of a time-based stage (``iops.csv``, ``randread.csv``) come from the block
layer's trace when the stage has one (``fio/<stage>_blockstat.csv``, fio/blockstat.py):
the kernel's cumulative completed sectors, read densely around each whole second of fio's
clock, interpolated at those seconds — exact seconds, stalls included, the last second
too. Without a trace (a regular file, an old results folder, no stat file) they come from
fio's averaged IOPS log as below; ``Series.source`` and run.json ``reconciliation`` say
which. Latency columns always come from fio's logs.

fio writes ``<prefix>_{iops,bw,lat}.1.log`` (``log_avg_msec=1000``: one averaged row per
window; columns ``time_ms, value, ddir, bs, offset[, prio[, issue_time]]`` — newer fio adds
columns, only the first three are used) and ``<prefix>_clat_hist.1.log`` (``log_hist_msec``:
``time_ms, ddir, bs, bin0, bin1, …`` with per-interval counts). Their quirks, handled here:

* the last second is often missing (fio 3.33 never logs a final window shorter than
  ``log_avg_msec``). In the IOPS series (``iops.csv``, ``randread.csv``) it stays empty: a
  missing second is never invented. The bandwidth series (fill, probes, read scan) give the
  unlogged time the bytes fio's final JSON counts beyond the log, so ``fill.csv`` ends at
  the bytes fio wrote (docs/engine.md);
* windows stretch and stamps drift under load (1000, …, 40432, 41503): IOPS and bandwidth
  rows are rates over the window since the previous row, and :func:`resample` spreads each
  row's amount over the seconds its window overlaps (no false zero second, nothing
  dropped); a duplicate stamp is summed over the previous row's window;
* latency means are placed by ``round(t/1000) - 1`` (the first row of a second wins);
* a second inside the log with no I/O is zero (fio logs rate 0 rows), never a gap.

:func:`reconcile` compares each series with fio's own totals (run.json ``reconciliation``).

Every second of a stage has exactly one CSV row: ``ceil((job_runtime_ms - 100) / 1000)``
rows (at least one), the last one possibly a partial second.
Parsing is vectorized (numpy); the histogram log has its own reader (histlog.py).
"""

from __future__ import annotations

import csv
import io
import json
import math
import warnings
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

import numpy as np
import numpy.typing as npt

from ssdbench.fio.blockstat import HEADER_START, trace_paths
from ssdbench.fio.histlog import SparseLog, parse_sparse
from ssdbench.fio.jobs import HIST_BINS
from ssdbench.fio.status import FioReport, parse_report
from ssdbench.results import atomic

F64 = npt.NDArray[np.float64]
I64 = npt.NDArray[np.int64]

DDIR = {"read": 0, "write": 1, "trim": 2}
MIB = 1024.0 * 1024.0
GIB = 1024.0**3
TAIL_SLACK_MS = 100
EPSILON = 1e-9  # a cumulative count equal to a percentile's target reaches it


class LogError(ValueError):
    """A fio log that cannot be read as one."""


def load_log(path: Path, min_cols: int = 3, *, header: bytes | None = None) -> F64:
    """A fio log as a float array (rows × columns); a torn last line is dropped, and a first
    line starting with ``header`` (a CSV header) is skipped."""
    data = path.read_bytes()
    if header is not None and data.startswith(header):
        data = data[data.find(b"\n") + 1:] if b"\n" in data else b""
    if not data.strip():
        return np.zeros((0, min_cols))
    cut = data.rfind(b"\n")
    if not data.endswith(b"\n"):
        data = data[: cut + 1] if cut >= 0 else b""
    first = data[: data.find(b"\n")]
    ncols = first.count(b",") + 1
    nrows = data.count(b"\n")
    if ncols < min_cols:
        raise LogError(f"{path}: expected at least {min_cols} columns, got {ncols}")
    joined = data.replace(b"\n", b",")
    # fio prints integers; parsing them as such is several times faster than as floats.
    # A value with a decimal point stops the integer parse early: then parse as floats.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        flat = np.fromstring(joined, dtype=np.int64, sep=",")
        if flat.size == nrows * ncols:
            return np.asarray(flat.reshape(nrows, ncols), dtype=np.float64)
        flat = np.fromstring(joined, dtype=np.float64, sep=",")
    if flat.size == nrows * ncols:
        return np.asarray(flat.reshape(nrows, ncols), dtype=np.float64)
    # Rows of different widths (a torn or foreign line): keep the rows of the first width.
    rows = []
    for line in data.decode("ascii", errors="replace").splitlines():
        parts = line.split(",")
        if len(parts) != ncols:
            continue
        try:
            rows.append([float(p) for p in parts])
        except ValueError:
            continue
    if not rows:
        raise LogError(f"{path}: no readable rows")
    return np.asarray(rows, dtype=np.float64)


def second_index(t_ms: F64) -> I64:
    """The 0-based second a log row closes (rows are stamped at the end of their window)."""
    return np.maximum(np.rint(t_ms / 1000.0).astype(np.int64) - 1, 0)


def per_second(t_ms: F64, values: F64, n: int) -> tuple[F64, npt.NDArray[np.bool_]]:
    """Place rows into n one-second slots (latency means: the first row of a second wins);
    (values, present)."""
    out = np.zeros(n, dtype=np.float64)
    present = np.zeros(n, dtype=bool)
    if n == 0 or t_ms.size == 0:
        return out, present
    sec = second_index(t_ms)
    keep = sec < n
    sec, vals = sec[keep], values[keep]
    uniq, first = np.unique(sec, return_index=True)
    out[uniq] = vals[first]
    present[uniq] = True
    return out, present


def second_durations(n: int, last_s: float = 1.0) -> F64:
    """How long each of a stage's n one-second rows lasts: 1 s, the last ``last_s``."""
    duration = np.ones(n)
    if n:
        duration[-1] = last_s
    return duration


MIN_COVER_S = 0.5  # a second has a value when fio's log covers at least half of it
STALL_WINDOW_S = 1.5  # a log window longer than this spans a stall (no completions)


@dataclass(frozen=True)
class Resampled:
    """An IOPS or bandwidth log on the one-second grid of a stage."""

    amount: F64  # I/Os (or KiB) the log holds for each second
    covered_s: F64  # how much of each second the log's windows cover
    duration_s: F64  # how long each second lasted (the last one possibly less)
    logged_total: float  # every amount the log holds (also past the grid)
    logged_until_s: float  # end of the log's last window

    def rates(self) -> F64:
        """Per-second rates over the covered part of each second; a second covered less
        than half (or not at all: fio did not log it) is missing (NaN), never invented."""
        need = np.minimum(MIN_COVER_S, self.duration_s)
        ok = self.covered_s >= need - 1e-9
        out = np.full(self.amount.size, np.nan)
        out[ok] = self.amount[ok] / self.covered_s[ok]
        return out

    def with_tail(self, total: float, runtime_s: float) -> F64:
        """Per-second rates where the time after the log's last window gets what fio's total
        counts beyond the log, as an even rate (the bandwidth series). The part of that time
        past the grid's end (a runtime's last part shorter than ``TAIL_SLACK_MS`` is no row
        of its own: it belongs to the last row) goes to the last row, so the series adds up
        to fio's total: the demo's NVMe fill lost 0.1 s of its tail (942 KB, -0.38%; a
        slower run -0.69%, over the 0.5% tolerance) when only the grid's part was kept."""
        tail_s = max(runtime_s - self.logged_until_s, 0.0)
        residual = max(total - self.logged_total, 0.0)
        gap = np.maximum(self.duration_s - self.covered_s, 0.0)
        rate = residual / tail_s if tail_s > 0 else 0.0
        extra = gap * rate
        if extra.size:
            grid_end = float(self.duration_s.sum())
            extra[-1] += max(runtime_s - max(grid_end, self.logged_until_s), 0.0) * rate
        out = (self.amount + extra) / self.duration_s
        return np.asarray(out, dtype=np.float64)


def resample(t_ms: F64, rates: F64, n: int, last_s: float = 1.0) -> Resampled:
    """Put an IOPS or bandwidth log on the stage's one-second grid.

    Each row is a rate over its window, from the previous row's stamp to its own (fio's
    helper samples about once per ``log_avg_msec``, and under load its windows stretch and
    drift: 1000, 2000, …, 41503, 42506). A row's amount (``rate × window``) is spread over
    the seconds its window overlaps, so nothing is dropped and a drifting stamp never
    leaves a false zero second. fio takes a sample at an I/O completion once the window is
    due, so a window longer than ``STALL_WINDOW_S`` spans a stall: its I/Os completed in its
    first second and the rest of it is zero (a stall stays a stall). A row with the same
    stamp as the previous one (a duplicate) is summed over the previous row's window."""
    duration = second_durations(n, last_s)
    if t_ms.size == 0 or n == 0:
        return Resampled(np.zeros(n), np.zeros(n), duration, 0.0, 0.0)
    t = t_ms / 1000.0
    width = np.diff(np.concatenate(([0.0], t)))
    # a duplicate stamp (width 0) is a rate over the previous row's window
    real = width > 0
    idx = np.where(real, np.arange(width.size), 0)
    np.maximum.accumulate(idx, out=idx)
    counted = rates * width[idx]
    stamps, inverse = np.unique(t, return_inverse=True)
    per_stamp = np.bincount(inverse, weights=counted)
    done_by = np.cumsum(per_stamp)  # I/Os done by each stamp
    # fio samples at a completion once a window is due: a window much longer than one
    # (STALL_WINDOW_S) means no I/O completed after its first second (a stall), so its
    # I/Os go to that first second and the rest of the window is zero
    begin = np.concatenate(([0.0], stamps[:-1]))
    active_end = np.where(stamps - begin > STALL_WINDOW_S, begin + 1.0, stamps)
    xp = np.column_stack((begin, active_end)).ravel()
    fp = np.column_stack((np.concatenate(([0.0], done_by[:-1])), done_by)).ravel()
    edges = np.concatenate((np.arange(n, dtype=np.float64), [n - 1 + last_s]))
    done = np.interp(edges, xp, fp)  # even rate within each active part
    amount = np.diff(done)
    covered = np.clip(np.minimum(edges[1:], stamps[-1]) - edges[:-1], 0.0, duration)
    return Resampled(amount, covered, duration, float(fp[-1]), float(stamps[-1]))


# ---- latency histogram bins (fio stat.h: FIO_IO_U_PLAT_BITS=6, FIO_IO_U_PLAT_VAL=64) ----

def _fine_lower_ns(index: I64) -> I64:
    """Lower latency bound (ns) of fio's fine-grained histogram bin ``index``.

    Bins below 128 are one nanosecond wide; above, each group of 64 bins covers a power
    of two, so the width doubles every 64 bins.
    """
    index = np.asarray(index, dtype=np.int64)
    group = np.maximum((index >> 6) - 1, 0)
    base = np.left_shift(np.int64(1), group + 6)
    lower = base + (index & 63) * np.left_shift(np.int64(1), group)
    return np.where(index < 128, index, lower)


def bin_edges_ns(nbins: int) -> tuple[F64, F64]:
    """(lower, upper) bounds in ns of each bin of a log with ``nbins`` (coarse) bins."""
    if nbins <= 0 or HIST_BINS % nbins:
        raise LogError(f"a fio histogram has {HIST_BINS}/2^k bins, not {nbins}")
    stride = HIST_BINS // nbins
    idx = np.arange(nbins, dtype=np.int64) * stride
    lower = _fine_lower_ns(idx).astype(np.float64)
    upper = _fine_lower_ns(idx + stride).astype(np.float64)
    return lower, upper


def load_hist_log(path: Path) -> SparseLog:
    """A latency histogram log's non-zero counts (fast path for fio's own layout)."""
    sparse = parse_sparse(path.read_bytes())
    return sparse if sparse is not None else SparseLog.from_dense(load_log(path, min_cols=4))


def hist_percentiles(log: SparseLog, ddir: int, n: int,
                     percentiles: Sequence[float]) -> tuple[F64, F64]:
    """Per-second latency percentiles and max (µs) of one direction, n seconds long, from
    a histogram log's non-zero counts (NaN for a second without samples).

    A percentile is the midpoint of the first bin whose cumulative count reaches it (as fio
    reports them); max is the midpoint of the highest non-empty bin. The dense rows are never
    built: a row's counts are consecutive entries in bin order, so a running sum over all
    entries and one search per row find the first bin that reaches each percentile.
    """
    pct = np.full((n, len(percentiles)), np.nan)
    mx = np.full(n, np.nan)
    nbins = log.ncols - 3
    if log.nrows == 0 or nbins < 1:
        return pct, mx
    seconds, slots, bins, values = _hist_slots(log, ddir, n)
    lower, upper = bin_edges_ns(nbins)
    mid_us = (lower + upper) / 2.0 / 1000.0
    m = seconds.size
    per_row = np.bincount(slots, minlength=m)
    end = np.cumsum(per_row)
    begin = end - per_row
    has = end > begin
    running = np.cumsum(values)
    running0 = np.concatenate(([0.0], running))  # running0[k]: the sum before entry k
    before = running0[begin]
    total = running0[end] - before
    out = np.full((m, len(percentiles)), np.nan)
    for j, p in enumerate(percentiles):
        idx = np.searchsorted(running, before + total * (p / 100.0) - EPSILON)
        idx = np.clip(idx, begin, np.maximum(end - 1, begin))
        out[has, j] = mid_us[bins[idx[has]]]
    top = np.full(m, np.nan)
    top[has] = mid_us[bins[end[has] - 1]]
    pct[seconds], mx[seconds] = out, top
    return pct, mx


def _hist_slots(log: SparseLog, ddir: int, n: int) -> tuple[I64, I64, I64, F64]:
    """The rows of direction ``ddir`` in the first ``n`` seconds, one per second (the first
    of a second wins): (the second of each slot, and per non-zero count: its slot, bin and
    value, in slot then bin order)."""
    head = log.cols < 3
    time_ms, direction = np.zeros(log.nrows), np.zeros(log.nrows)
    for out, col in ((time_ms, 0), (direction, 1)):
        pick = head & (log.cols == col)
        out[log.rows[pick]] = log.values[pick]
    mine = np.flatnonzero(direction == ddir)
    sec = second_index(time_ms[mine])
    keep = sec < n
    seconds, first = np.unique(sec[keep], return_index=True)
    chosen = mine[keep][first]  # log rows, one per second (the first of a second wins)
    counted = ~head & (log.values > 0)
    if np.array_equal(chosen, np.arange(log.nrows)):  # the usual log: every row, in order
        slots, bins, values = log.rows[counted], log.cols[counted] - 3, log.values[counted]
    else:
        slot_of = np.full(log.nrows, -1, dtype=np.int64)
        slot_of[chosen] = np.arange(chosen.size)
        counted &= slot_of[log.rows] >= 0
        slots = slot_of[log.rows[counted]]
        order = np.argsort(slots, kind="stable")  # bins stay in order within a row
        slots, bins = slots[order], (log.cols[counted] - 3)[order]
        values = log.values[counted][order]
    return seconds, slots, bins, values


def hist_counts(log: SparseLog, ddir: int, n: int) -> tuple[I64, I64, F64, F64]:
    """The non-zero counts of a histogram log's direction ``ddir`` in its first ``n``
    seconds (the first row of a second wins, as in :func:`hist_percentiles`): (second, bin,
    count) per entry, and each bin's midpoint in µs (the latency fio reports for it)."""
    nbins = log.ncols - 3
    if log.nrows == 0 or nbins < 1:
        empty = np.empty(0, dtype=np.int64)
        return empty, empty, np.empty(0), np.empty(0)
    seconds, slots, bins, values = _hist_slots(log, ddir, n)
    lower, upper = bin_edges_ns(nbins)
    return seconds[slots], bins, values, (lower + upper) / 2.0 / 1000.0


# ---- stage files → series ----

@dataclass(frozen=True)
class StageFiles:
    fio_dir: Path
    stage: str

    def log(self, kind: str) -> Path:
        return self.fio_dir / f"{self.stage}_{kind}.1.log"

    @property
    def json(self) -> Path:
        return self.fio_dir / f"{self.stage}.json"

    def report(self) -> FioReport | None:
        try:
            return parse_report(json.loads(self.json.read_text(encoding="utf-8")))
        except (OSError, ValueError):
            return None


def _rows(path: Path, ddir: int) -> F64:
    if not path.exists():
        return np.zeros((0, 3))
    arr = load_log(path)
    return arr[arr[:, 2] == ddir] if arr.shape[0] else arr


def stage_seconds(files: StageFiles, report: FioReport | None) -> int:
    """How many one-second rows the stage has: its runtime, rounded."""
    if report is not None and report.runtime_ms > 0:
        # A trailing part of a second shorter than 100 ms is not a row of its own (fio's
        # time_based runtime overshoots by a few ms); any longer part is the last row.
        n = max(math.ceil((report.runtime_ms - TAIL_SLACK_MS) / 1000.0), 1)
        planned = report.planned_runtime_s
        # A time_based job that ran its course overshoots while draining: N s → N rows.
        return min(n, planned) if planned else n
    last = 0
    for kind in ("iops", "bw"):
        path = files.log(kind)
        if path.exists():
            arr = load_log(path)
            if arr.shape[0]:
                last = max(last, int(second_index(arr[:, 0]).max()) + 1)
    return last


@dataclass(frozen=True)
class Series:
    """Per-second values of one stage; latency in µs (NaN when unknown)."""

    iops: F64
    mib_s: F64
    lat_mean_us: F64
    lat_p99_us: F64
    lat_p9999_us: F64
    lat_max_us: F64
    last_second_s: float = 1.0  # how long the last row lasted (a partial final second)
    source: str = "fio-log"  # where iops and mib_s come from: "fio-log" or "block-layer"
    # block layer: I/Os that completed after the stage's last second (fio's drain of the
    # queue once its runtime is over; fio's total counts them, the seconds do not)
    after_end_ios: float = 0.0
    trace_rejected: str | None = None  # why a block-layer trace was not used (fio's log was)
    # block layer: the widest bracket of reads around a second's edge (ms), and how many
    # edges were bracketed wider than WIDE_EDGE_MS (None: no trace used)
    edge_bracket_ms_max: float | None = None
    wide_edges: int | None = None

    def seconds(self) -> F64:
        """Duration of each row: 1 s, the last one possibly shorter."""
        return second_durations(self.mib_s.size, self.last_second_s)


def _edges(n: int, last_s: float) -> F64:
    """The n + 1 edges of n seconds on fio's clock, the last second ``last_s`` long."""
    return np.concatenate((np.arange(n, dtype=np.float64), [n - 1 + last_s]))


SECTOR = 512
WIDE_EDGE_MS = 20.0  # a trace's edge bracketed wider than this is counted in run.json
_SECTOR_COLUMN = {"read": 3, "write": 7}  # time_ns, then the stat file's fields


@dataclass(frozen=True)
class BlockTrace:
    """A stage's block-layer trace on fio's clock: cumulative bytes of one direction."""

    t_s: F64  # seconds since fio's epoch, increasing
    done_bytes: F64  # bytes completed by then (since the trace began)
    io_size: int

    def per_second(self, n: int, last_s: float = 1.0) -> tuple[F64, F64]:
        """(IOPS, MiB/s) for the n seconds of the stage (the last one ``last_s`` long);
        a second the trace does not cover from edge to edge is NaN."""
        if n == 0:
            return np.zeros(0), np.zeros(0)
        edges = _edges(n, last_s)
        done = np.interp(edges, self.t_s, self.done_bytes)
        # the stamps are ns read through float64 (about 0.3 µs apart at today's epoch)
        inside = (edges >= self.t_s[0] - 1e-6) & (edges <= self.t_s[-1] + 1e-6)
        ok = inside[:-1] & inside[1:]
        duration = np.diff(edges)
        moved = np.where(ok, np.diff(done), np.nan)
        return moved / self.io_size / duration, moved / MIB / duration

    def edge_brackets_ms(self, n: int, last_s: float = 1.0) -> F64:
        """For each edge of the n seconds (n + 1 of them), the time between the reads
        either side of it in ms (NaN outside the trace): how far the count at the edge is
        interpolated. The sampler reads 2 ms apart around edges; a wide bracket is a late
        sampler, which spreads the I/O of that stretch over the seconds beside the edge."""
        if n == 0:
            return np.zeros(0)
        edges = _edges(n, last_s)
        after = np.searchsorted(self.t_s, edges, side="right")
        inside = (after > 0) & (after < self.t_s.size)
        hi = self.t_s[np.clip(after, 0, self.t_s.size - 1)]
        lo = self.t_s[np.clip(after - 1, 0, self.t_s.size - 1)]
        return np.where(inside, (hi - lo) * 1000.0, np.nan)

    def ios_after(self, t_s: float) -> float:
        """I/Os completed after ``t_s`` until the trace ends (0 when it ends before)."""
        end = float(self.done_bytes[-1])
        return max(end - float(np.interp(t_s, self.t_s, self.done_bytes)), 0.0) / self.io_size


def load_block_trace(files: StageFiles, direction: str) -> BlockTrace | None:
    """The stage's block-layer trace (None without one, without fio's epoch, or when it is
    unreadable: the caller falls back to fio's log). Counters that go backwards (the
    device was replaced) end the trace there."""
    rows_path, meta_path = trace_paths(files.fio_dir, files.stage)
    column = _SECTOR_COLUMN.get(direction)
    if column is None or not rows_path.exists() or not meta_path.exists():
        return None
    try:
        meta = json.loads(meta_path.read_text(encoding="utf-8"))
        epoch_ns = int(meta["fio_epoch_ns"])
        io_size = int(meta["io_size"])
        arr = load_log(rows_path, min_cols=column + 1, header=HEADER_START)
    except (OSError, ValueError, KeyError, TypeError, LogError):
        return None
    if io_size <= 0 or arr.shape[0] < 2:
        return None
    t_s = (arr[:, 0] - float(epoch_ns)) / 1e9
    done = arr[:, column] * SECTOR
    steps_back = np.flatnonzero((np.diff(done) < 0) | (np.diff(t_s) <= 0))
    if steps_back.size:
        cut = int(steps_back[0]) + 1
        t_s, done = t_s[:cut], done[:cut]
    if t_s.size < 2:
        return None
    return BlockTrace(t_s, done - done[0], io_size)


TRACE_TRUST = 0.05  # a trace further than this from fio's own total is not used


def _trace_disagrees(iops: F64, last_s: float, after_end: float,
                     fio_total: float | None) -> str | None:
    """Why the block layer's counts cannot stand for the stage's I/O (None: they can). The
    stat file may not count what fio did: ``queue/iostats`` off, a multipath head without
    statistics, a stacked device that counts at submission. Then fio's log is used."""
    if fio_total is None or fio_total <= 0:
        return None
    if np.isnan(iops).all():
        return "the trace covers none of the stage's seconds"
    counted = float(np.nansum(iops * second_durations(iops.size, last_s))) + after_end
    gap = (counted - fio_total) / fio_total
    if abs(gap) > TRACE_TRUST:
        return (f"the block layer counted {counted:,.0f} I/Os, fio {fio_total:,.0f} "
                f"({gap:+.1%}): the device's statistics do not see fio's I/O")
    return None


def stage_series(files: StageFiles, direction: str, *, latency: bool = True,
                 recover_tail: bool = False) -> Series:
    """The per-second series of a stage. ``recover_tail`` (bandwidth series): trailing
    seconds without a log row get what fio's final JSON counts beyond the log; otherwise
    (IOPS series) they stay missing (NaN)."""
    report = files.report()
    n = stage_seconds(files, report)
    ddir = DDIR[direction]
    runtime_s = report.runtime_ms / 1000.0 if report else float(n)
    total_bytes, total_ios = report.total(direction) if report else (0, 0)
    last = min(max(runtime_s - (n - 1), 0.0), 1.0) if n else 1.0
    last = last or 1.0

    def series(kind: str, total: float) -> F64:
        rows = _rows(files.log(kind), ddir)
        grid = resample(rows[:, 0], rows[:, 1], n, last)
        if recover_tail and report:
            return grid.with_tail(total, runtime_s)
        return grid.rates()

    trace = load_block_trace(files, direction) if latency else None
    after_end = 0.0
    rejected: str | None = None
    bracket_max: float | None = None
    wide: int | None = None
    if trace is not None:
        iops, mib_s = trace.per_second(n, last)
        after_end = trace.ios_after(n - 1 + last) if n else 0.0
        rejected = _trace_disagrees(iops, last, after_end, float(total_ios) if report else None)
        source = "block-layer"
        brackets = trace.edge_brackets_ms(n, last)
        if np.isfinite(brackets).any():
            bracket_max = round(float(np.nanmax(brackets)), 3)
            wide = int((brackets > WIDE_EDGE_MS).sum())
    if trace is None or rejected is not None:
        iops = series("iops", float(total_ios))
        mib_s = series("bw", total_bytes / 1024.0) / 1024.0
        source, after_end = "fio-log", 0.0
        bracket_max = wide = None
    nan = np.full(n, np.nan)
    lat_mean, p99, p9999, lmax = nan, nan, nan, nan
    if latency:
        lat_rows = _rows(files.log("lat"), ddir)
        lat_ns, lat_present = per_second(lat_rows[:, 0], lat_rows[:, 1], n)
        lat_mean = np.where(lat_present, lat_ns / 1000.0, np.nan)
        hist_path = files.log("clat_hist")
        if hist_path.exists():
            pct, lmax = hist_percentiles(load_hist_log(hist_path), ddir, n, (99.0, 99.99))
            p99, p9999 = pct[:, 0], pct[:, 1]
    idle = iops <= 0
    lat = [np.where(idle, np.nan, a) for a in (lat_mean, p99, p9999, lmax)]
    return Series(iops, mib_s, lat[0], lat[1], lat[2], lat[3], last, source, after_end,
                  rejected, bracket_max, wide)


TOLERANCE = 0.005  # the per-second series must add up to fio's total within 0.5%


@dataclass(frozen=True)
class Reconciliation:
    """A stage's per-second series summed (value × duration of each second) against the
    totals of fio's final JSON: I/Os for the IOPS series, bytes for the bandwidth series."""

    stage: str
    csv: str
    quantity: str  # "ios" or "bytes"
    series_total: float
    fio_total: int
    # (series + after_end − fio) / fio; None when fio moved nothing
    relative_gap: float | None
    missing_seconds: int  # seconds of the series without a value (fio logged none)
    recovered_tail: bool  # bandwidth series: trailing seconds from fio's total
    tolerance: float = TOLERANCE
    source: str = "fio-log"  # the series' source: "fio-log" or "block-layer"
    after_end: float = 0.0  # block layer: I/Os completed after the last second (counted)
    trace_rejected: str | None = None  # a block-layer trace that was not used, and why
    edge_bracket_ms_max: float | None = None  # Series.edge_bracket_ms_max
    wide_edges: int | None = None  # Series.wide_edges

    @property
    def ok(self) -> bool:
        return self.relative_gap is not None and abs(self.relative_gap) <= self.tolerance

    def to_dict(self) -> dict[str, object]:
        gap = None if self.relative_gap is None else round(self.relative_gap, 6)
        return {"csv": self.csv, "quantity": self.quantity,
                "series_total": round(self.series_total, 1), "fio_total": self.fio_total,
                "relative_gap": gap, "tolerance": self.tolerance, "within_tolerance": self.ok,
                "missing_seconds": self.missing_seconds, "recovered_tail": self.recovered_tail,
                "source": self.source, "after_end_ios": round(self.after_end, 1),
                "trace_rejected": self.trace_rejected,
                "edge_bracket_ms_max": self.edge_bracket_ms_max, "wide_edges": self.wide_edges}

    def warning(self) -> str | None:
        """The run.json warning for a gap beyond the tolerance (None when within)."""
        if self.ok:
            return None
        unit = "I/Os" if self.quantity == "ios" else "bytes"
        gap = "no total" if self.relative_gap is None else f"{self.relative_gap:+.2%}"
        who = "the block layer's trace has" if self.source == "block-layer" else "fio logged"
        why = (f"; {who} no value for {self.missing_seconds} s of it"
               if self.missing_seconds else "")
        drained = (f" (+{self.after_end:,.0f} completed after its last second)"
                   if self.after_end >= 0.5 else "")
        return (f"{self.csv}: the per-second series sums to {self.series_total:,.0f} {unit}"
                f"{drained}, "
                f"fio's own total is {self.fio_total:,} ({gap}, more than "
                f"{self.tolerance:.1%}){why}")


def reconcile(stage: str, csv_name: str, series: Series, report: FioReport | None,
              direction: str, *, recovered_tail: bool = False) -> Reconciliation | None:
    """Compare one stage's series with fio's final JSON (None without a final JSON)."""
    if report is None:
        return None
    nbytes, ios = report.total(direction)
    dur = series.seconds()
    if recovered_tail:
        quantity, total = "bytes", nbytes
        summed = float(np.nansum(series.mib_s * dur)) * MIB
        missing = int(np.isnan(series.mib_s).sum())
    else:
        quantity, total = "ios", ios
        summed = float(np.nansum(series.iops * dur))
        missing = int(np.isnan(series.iops).sum())
    # fio's total includes the I/Os it drained after its runtime; the block layer saw them
    # complete after the last second: like is compared with like
    counted = summed + series.after_end_ios
    gap = (counted - total) / total if total else (0.0 if counted == 0 else None)
    return Reconciliation(stage, csv_name, quantity, summed, total, gap, missing,
                          recovered_tail, source=series.source,
                          after_end=series.after_end_ios,
                          trace_rejected=series.trace_rejected,
                          edge_bracket_ms_max=series.edge_bracket_ms_max,
                          wide_edges=series.wide_edges)


# ---- CSV writing ----

def _fmt(value: float, digits: int) -> str:
    return "" if math.isnan(value) else f"{value:.{digits}f}"


def _csv_text(header: str, rows: Iterable[Sequence[object]]) -> str:
    """A CSV file's text, through the csv module (#42: every CSV is; these cells are numbers
    and the phase names ssdbench chose, but a cell never joins another by hand)."""
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(header.split(","))
    writer.writerows(rows)
    return out.getvalue()


def _csv(header: str, columns: Sequence[tuple[F64, int]]) -> str:
    lists = [col.tolist() for col, _ in columns]
    digits = [d for _, d in columns]
    return _csv_text(header, ([str(t), *(_fmt(v, d) for v, d in zip(row, digits, strict=True))]
                              for t, row in enumerate(zip(*lists, strict=True))))


def iops_csv(series: Series) -> str:
    return _csv(
        "time_s,iops,mib_s,lat_mean_us,lat_p99_us,lat_p9999_us,lat_max_us",
        [(series.iops, 1), (series.mib_s, 3), (series.lat_mean_us, 1),
         (series.lat_p99_us, 1), (series.lat_p9999_us, 1), (series.lat_max_us, 1)],
    )


def fill_csv(series: Series) -> str:
    gib = np.cumsum(series.mib_s * series.seconds()) / 1024.0
    return _csv("time_s,mib_s,gib_written", [(series.mib_s, 3), (gib, 6)])


def probe_csv(series: Series) -> str:
    return _csv("time_s,mib_s", [(series.mib_s, 3)])


def readscan_csv(series: Series) -> str:
    offset = np.concatenate(([0.0], np.cumsum(series.mib_s)[:-1])) / 1024.0
    if series.mib_s.size == 0:
        offset = np.zeros(0)
    return _csv("time_s,offset_gib,mib_s", [(offset, 4), (series.mib_s, 3)])


PROBE_PHASES = ("clean", "after_torture", "after_trim")


def probe_stages(fio_dir: Path, phase: str) -> list[str]:
    """A TRIM probe's fio stages: ``probe-<phase>``, then the extensions written while its
    verdict could not answer (``probe-<phase>-ext1``, ``-ext2``, ...: stages/probe.py), each
    as long as its final JSON exists."""
    stages = [f"probe-{phase}"]
    while StageFiles(fio_dir, f"probe-{phase}-ext{len(stages)}").json.exists():
        stages.append(f"probe-{phase}-ext{len(stages)}")
    return stages


def probe_totals(fio_dir: Path, phase: str) -> tuple[int, float, int | None] | None:
    """(bytes, seconds, offset of the window) of a probe and its extensions, from their
    final JSON; None without the probe's own."""
    total_bytes, ms, offset = 0, 0, None
    for k, stage in enumerate(probe_stages(fio_dir, phase)):
        report = StageFiles(fio_dir, stage).report()
        if report is None:
            if k == 0:
                return None
            continue
        total_bytes += report.total("write")[0]
        ms += max((j.write.runtime_ms for j in report.jobs), default=0)
        if k == 0:
            offsets = {j.offset_bytes for j in report.jobs}
            offset = offsets.pop() if len(offsets) == 1 else None
    return total_bytes, ms / 1000.0, offset


def probe_series(fio_dir: Path, phase: str) -> tuple[F64, list[tuple[str, Series]]]:
    """A probe's MiB/s per second (probe-<phase>.csv) and each fio stage's series. An
    extended probe's seconds are each part's whole seconds, one part after the other (a
    part's last, partial second is left out: it is not a second of the probe's speed)."""
    parts = [(stage, stage_series(StageFiles(fio_dir, stage), "write", latency=False,
                                  recover_tail=True))
             for stage in probe_stages(fio_dir, phase)]
    if len(parts) == 1:
        return parts[0][1].mib_s, parts
    return np.concatenate([s.mib_s[s.seconds() >= 1.0 - 1e-9] for _, s in parts]), parts


def probes_csv(fio_dir: Path) -> str | None:
    """probes.csv rows (phase, mean MiB/s, seconds, bytes, offset_bytes: where the probe's
    window starts) from the probes' final JSON (an extended probe: all its parts)."""
    rows: list[list[object]] = []
    for phase in PROBE_PHASES:
        totals = probe_totals(fio_dir, phase)
        if totals is None:
            continue
        total_bytes, seconds, offset = totals
        mib_s = total_bytes / seconds / MIB if seconds > 0 else float("nan")
        rows.append([phase, _fmt(mib_s, 3), f"{seconds:.3f}", total_bytes,
                     "" if offset is None else offset])
    return _csv_text("phase,mib_s,seconds,bytes,offset_bytes", rows) if rows else None


def write_run_csvs(run_dir: Path) -> dict[str, Reconciliation]:
    """(Re)create iops.csv, fill.csv, probe-<phase>.csv, probes.csv, readscan.csv,
    randread.csv and hir-<idle|base>-<s>.csv of a run from ``run_dir/fio/*`` (only those
    whose fio files exist); return each stage's reconciliation with fio's totals (stages
    with a final JSON)."""
    fio_dir = Path(run_dir) / "fio"
    checks: dict[str, Reconciliation] = {}
    if not fio_dir.is_dir():
        return checks

    def has(stage: str) -> StageFiles | None:
        files = StageFiles(fio_dir, stage)
        if files.json.exists() or files.log("bw").exists() or files.log("iops").exists():
            return files
        return None

    def write(files: StageFiles, name: str, direction: str,
              render: Callable[[Series], str], iops: bool) -> None:
        series = stage_series(files, direction, latency=iops, recover_tail=not iops)
        atomic.write_text(run_dir / name, render(series))
        check = reconcile(files.stage, name, series, files.report(), direction,
                          recovered_tail=not iops)
        if check is not None:
            checks[files.stage] = check

    if files := has("torture") or has("wsat"):  # a WSAT run's writes are its torture
        write(files, "iops.csv", "write", iops_csv, True)
    hir = {p.name.split("_")[0].removesuffix(".json") for p in fio_dir.glob("hir-*")}
    for stage in sorted(hir):  # a HIR run's idle periods and returns to the baseline
        if files := has(stage):
            write(files, f"{stage}.csv", "write", iops_csv, True)
    if files := has("fill"):
        write(files, "fill.csv", "write", fill_csv, False)
    for phase in PROBE_PHASES:
        if (files := has(f"probe-{phase}")) and len(probe_stages(fio_dir, phase)) == 1:
            write(files, f"probe-{phase}.csv", "write", probe_csv, False)
        elif files:  # an extended probe (stages/probe.py): its parts' seconds, in turn
            merged, parts = probe_series(fio_dir, phase)
            atomic.write_text(run_dir / f"probe-{phase}.csv",
                              _csv("time_s,mib_s", [(merged, 3)]))
            for stage, part in parts:
                check = reconcile(stage, f"probe-{phase}.csv", part,
                                  StageFiles(fio_dir, stage).report(), "write",
                                  recovered_tail=True)
                if check is not None:
                    checks[stage] = check
    if (text := probes_csv(fio_dir)) is not None:
        atomic.write_text(run_dir / "probes.csv", text)
    if files := has("readscan"):
        write(files, "readscan.csv", "read", readscan_csv, False)
    if files := has("randread"):
        write(files, "randread.csv", "read", iops_csv, True)
    return checks
