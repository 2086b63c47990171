"""Known answers from a simulated SSD (simdrive/, docs/simdrive.md) for ssdbench's results.

Shared by the host-path tests (tests/integration/test_simdrive_known_answers.py) and the
QEMU kiosk run on simulated drives (tests/e2e/test_kiosk_quick.py). Everything here is
computed from the model's own ground-truth log (DIR/truth.jsonl), never from ssdbench's
analysis, so a wrong ssdbench figure cannot agree with itself:

* alignment: fio's per-second seconds start at the torture's start, not on an epoch second.
  ssdbench records that start (fio's epoch, from its status dumps) with the block-layer
  trace that iops.csv comes from (:func:`recorded_epoch`); independently of it,
  The start is estimated from fio's JSON (`timestamp_ms - job_runtime`, the report is
  written right after the job ends) and then fitted in 5-ms steps within +-0.5 s against
  the model's 10-ms completion counts over the windows of fio's *raw* IOPS log (each row
  is a rate over the time since the previous row: exact counts whatever the rows' spacing);
* the model's cliff: the first torture second in which the model garbage-collected (the
  spare pool ran out), from the truth's `gc_moves`;
* SNIA steady state: the PTS rule (rounds = whole minutes, 5 rounds within 20% of their
  mean, least-squares excursion within 10%) applied to the model's per-second counts,
  implemented here independently of ssdbench.analysis.
"""

from __future__ import annotations

import csv
import json
import math
import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from simdrive import truth as truth_log
from simdrive.truth import Truth
from ssdbench.fio import logs as fio_logs

REPO = Path(__file__).resolve().parents[1]
SIMDRIVE = REPO / "scripts" / "simdrive"


@dataclass(frozen=True)
class SimDrive:
    dir: Path
    socket: Path
    loop: str | None

    def truth(self, timeout_s: float = 10.0) -> Truth:
        """The drive's log with every write it completed before this call: the drive writes
        a second once it is over and says up to where its log is complete (DIR/truth.complete,
        each tick and at shutdown), so the read waits until that is past this second. A CI
        run read the enterprise drive's log within a second of its torture's end and missed
        its last second (2026-11-28)."""
        need = math.floor(time.time()) + 1
        deadline = time.monotonic() + timeout_s
        while (got := self._complete_before()) < need:
            assert time.monotonic() < deadline, (
                f"{self.dir}: the drive's log is complete before {got}, not {need}")
            time.sleep(0.05)
        return truth_log.load(self.dir / "truth.jsonl")

    def _complete_before(self) -> float:
        try:
            return float((self.dir / "truth.complete").read_text())
        except (OSError, ValueError):  # not written yet, or a drive from before the file
            return -math.inf


def _simdrive(*args: str) -> str:
    proc = subprocess.run([str(SIMDRIVE), *args], capture_output=True, text=True,
                          check=False, timeout=120)
    assert proc.returncode == 0, f"simdrive {' '.join(args)}: {proc.stderr.strip()}"
    return proc.stdout.strip()


@contextmanager
def simulated_drive(folder: Path, preset: str, size: str, fob_iops: float, *,
                    serial: str = "SIM0001", attach: bool = True, fake: str = "",
                    real_size: str = "") -> Iterator[SimDrive]:
    """A simulated SSD the test owns: started (and attached as /dev/loopN when ``attach``),
    stopped afterwards (truth.jsonl stays in ``folder``); ``fake`` (wrap, drop) with
    ``real_size``: a counterfeit that claims ``size``."""
    extra = ("--fake", fake, "--real-size", real_size) if fake else ()
    sock = _simdrive("start", "--preset", preset, "--size", size, "--dir", str(folder),
                     "--fob-iops", str(fob_iops), "--serial", serial, *extra)
    try:
        loop = _simdrive("attach", "--dir", str(folder)) if attach else None
        yield SimDrive(folder, Path(sock), loop)
    finally:
        _simdrive("stop", "--dir", str(folder))


# ---- ssdbench's side ------------------------------------------------------------------------


def read_csv(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def iops_series(run_dir: Path) -> list[float]:
    """iops.csv's IOPS by second; an empty field (a second fio logged nothing for) is NaN."""
    return [float(r["iops"]) if r["iops"] else math.nan for r in read_csv(run_dir / "iops.csv")]


@dataclass(frozen=True)
class FioJob:
    start_estimate: float  # epoch s
    runtime_s: float
    total_ios: int
    raw: tuple[tuple[int, int], ...]  # (time_ms since start, IOPS over the row's window)


def fio_job(run_dir: Path, stage: str = "torture") -> FioJob:
    report = json.loads((run_dir / "fio" / f"{stage}.json").read_text())
    job = report["jobs"][0]
    raw = []
    for line in (run_dir / "fio" / f"{stage}_iops.1.log").read_text().splitlines():
        cols = line.split(",")
        if len(cols) >= 3 and int(cols[2]) == 1:
            raw.append((int(cols[0]), int(cols[1])))
    return FioJob((report["timestamp_ms"] - job["job_runtime"]) / 1000.0,
                  job["job_runtime"] / 1000.0, int(job["write"]["total_ios"]), tuple(raw))


def recorded_epoch(run_dir: Path, stage: str = "torture") -> float:
    """fio's time 0 (epoch s) as ssdbench recorded it for the stage's block-layer trace
    (fio/<stage>_blockstat.json, from fio's status dumps): the start of iops.csv's second 0.
    Tests check it against :func:`fit_start` (fio's own log fitted to the model)."""
    meta = json.loads((run_dir / "fio" / f"{stage}_blockstat.json").read_text())
    return int(meta["fio_epoch_ns"]) / 1e9


EPOCH_RESOLUTION_S = 0.001  # fio's timestamp_ms and job_runtime are whole milliseconds
TRUTH_SLOT_S = 0.01  # simdrive's truth log counts completions in 10-ms slots


def wide_edges(run_dir: Path, n: int, stage: str = "torture") -> set[int]:
    """The inner edges of iops.csv's ``n`` seconds (edge i: between seconds i - 1 and i) that
    ssdbench's block-layer trace bracketed wider than ``logs.WIDE_EDGE_MS``: its sampler read
    late there (a loaded VM can hold even a real-time task ~100 ms), so it cannot tell on
    which side of the edge the I/Os of that stretch fell. run.json says so: its
    ``reconciliation.<stage>.wide_edges`` counts them, and every edge returned is counted.
    At most one edge in 20 may be such: a sampler that is late all the time fails here."""
    trace = fio_logs.load_block_trace(fio_logs.StageFiles(run_dir / "fio", stage), "write")
    assert trace is not None, run_dir
    brackets = trace.edge_brackets_ms(n)
    wide = {i for i in range(1, n) if brackets[i] > fio_logs.WIDE_EDGE_MS}
    record = json.loads((run_dir / "run.json").read_text())["reconciliation"][stage]
    assert len(wide) <= (record["wide_edges"] or 0), (sorted(wide), record)
    assert len(wide) <= n // 20, (sorted(wide), record)
    return wide


def seconds_off(truth: Truth, start: float, series: Sequence[float], rel: float = 0.02,
                floor: float = 2.0, replied: bool = False,
                wide: set[int] | frozenset[int] = frozenset(),
                edge_s: float = EPOCH_RESOLUTION_S, rig_lag: bool = False
                ) -> list[tuple[int, float, float]]:
    """The seconds of ``series`` (iops.csv from ``start``) that differ from the model's by
    more than ``rel`` of the model's (at least ``floor`` I/Os), plus what the model completed
    within fio's epoch resolution (±1 ms) of the second's two edges: where a second starts
    is known to a millisecond, and a GC burst there moves writes across the edge.
    ``replied``: against when the server sent the replies, not the model's completion
    times (the host's view: a loaded host runs the server's threads late now and then).
    ``wide``: edges ssdbench itself flagged as not caught (:func:`wide_edges`); the seconds
    either side of one are held to the same rule together, as one stretch. ``edge_s``: how
    far from an edge the writes may fall on either side (fio's epoch resolution; for a
    block-layer series the sampler's widest bracket, :func:`edge_s`). ``rig_lag``: against
    the model's completions, plus the writes the server had not yet answered at each edge
    (:meth:`Truth.reply_lag`, measured by the rig): the host cannot count a write before it
    is answered, so a late server moves them across the edge for any tool.
    (second, or the stretch's first second; iops.csv; model) for each."""
    out = []
    i = 0
    while i < len(series):
        j = i + 1
        while j < len(series) and j in wide:
            j += 1
        got = sum(series[i:j])
        a, b = start + i, start + j
        want = truth.writes_between(a, b, replied)
        edge = sum(truth.writes_between(e - edge_s, e + edge_s, replied) for e in (a, b))
        if rig_lag and not replied:
            edge += sum(abs(truth.reply_lag(e)) for e in (a, b))
        if not abs(got - want) <= max(rel * want, floor) + edge:
            out.append((i, got, round(want, 1)))
        i = j
    return out


def edge_s(run_dir: Path, stage: str = "torture") -> float:
    """How far from a second's edge a block-layer series' writes may fall on the other side:
    the sampler's widest read bracket around an edge of the stage (run.json reconciliation
    ``edge_bracket_ms_max``: the count at an edge is interpolated between the reads either
    side of it), plus one slot of the model's log (10 ms: a slot the bracket touches counts
    whole, the log does not say where in it the writes fell). A CI run on a loaded host
    (2026-11-26): 9 writes of a burst that ended at an edge counted in the next second, a
    5.2-ms bracket; within 1 ms of the edge the model had 0 of them."""
    rec = json.loads((run_dir / "run.json").read_text())["reconciliation"][stage]
    bracket_ms = rec.get("edge_bracket_ms_max") or 0.0
    return max(EPOCH_RESOLUTION_S, float(bracket_ms) / 1000.0) + TRUTH_SLOT_S


def fit_start(truth: Truth, job: FioJob, search_s: float = 0.5) -> float:
    """The epoch time of fio's time 0, fitted against the truth over the raw log's windows."""
    def error(start: float) -> float:
        prev, err = 0, 0.0
        for t_ms, rate in job.raw:
            got = rate * (t_ms - prev) / 1000.0
            err += abs(got - truth.writes_between(start + prev / 1000.0, start + t_ms / 1000.0))
            prev = t_ms
        return err

    steps = int(search_s * 200)
    candidates = [job.start_estimate + k / 200.0 for k in range(-steps, steps + 1)]
    return min(candidates, key=error)


# ---- the model's answers --------------------------------------------------------------------


def model_cliff_s(truth: Truth, start: float, seconds: int) -> int | None:
    """First torture second (0-based, fio's seconds) in which the model moved pages (GC)."""
    for s in truth.seconds:
        if start - 1 < s.t < start + seconds and s.gc_moves > 0:
            return max(0, math.floor(s.t - start))
    return None


def zero_seconds(series: Sequence[float]) -> tuple[int, int]:
    """(seconds without a completed write, longest run of them)."""
    count = longest = run = 0
    for v in series:
        if v < 0.5:
            count += 1
            run += 1
            longest = max(longest, run)
        else:
            run = 0
    return count, longest


def model_zero_seconds(truth: Truth, start: float, n: int,
                       edge_s: float = 0.01) -> tuple[set[int], set[int]]:
    """The model's seconds without a completed write in the n windows from epoch ``start``, at
    its log's 10-ms resolution: (sure, unsure). Unsure: writes in the second, but none more
    than 10 ms from its edges, or none in the second but some within ``edge_s`` outside an
    edge; the log splits a slot that straddles an edge linearly, so they
    may have completed in the neighbouring second (measured: 2.2 writes of a slot at an edge
    where ssdbench's block layer counted none)."""
    sure: set[int] = set()
    unsure: set[int] = set()
    for i in range(n):
        t = start + i
        if truth.writes_between(t, t + 1) < 0.5:
            # no write, but a neighbour's within ``edge_s`` of an edge (:func:`edge_s`):
            # ssdbench may count some in this second
            near = (truth.writes_between(t - edge_s, t)
                    + truth.writes_between(t + 1, t + 1 + edge_s))
            (unsure if near >= 0.5 else sure).add(i)
        elif truth.writes_between(t + 0.01, t + 0.99) < 0.5:
            unsure.add(i)
    return sure, unsure


def snia_steady_state_s(series: Sequence[float], from_round: int = 0,
                        round_s: int = 60) -> int | None:
    """SNIA PTS steady state of a per-second series: the end (s) of the first window of 5
    whole rounds of ``round_s`` (the PTS's minute unless given) whose range is <= 20% and
    least-squares excursion <= 10% of its mean."""
    r = round_s
    rounds = [sum(series[r * k: r * k + r]) / r for k in range(len(series) // r)]
    for k in range(from_round, len(rounds) - 4):
        window = rounds[k:k + 5]
        mean = sum(window) / 5.0
        if mean <= 0:
            continue
        slope = sum((i - 2) * (v - mean) for i, v in enumerate(window)) / 10.0
        if max(window) - min(window) <= 0.20 * mean + 1e-9 and \
                abs(slope) * 4 <= 0.10 * mean + 1e-9:
            return (k + 5) * r
    return None


def window_rates(truth: Truth, job: FioJob, start: float) -> dict[int, tuple[float, float]]:
    """fio's per-second value and the model's rate over the same window, by the second of
    iops.csv the window lands in (fio/logs.py: ``round(t / 1000) - 1``): {second: (fio's
    IOPS, the model's writes in fio's window / its length)}. fio's windows are not the
    nominal seconds on a loaded host (its helper thread wakes late), so this compares like
    with like."""
    out: dict[int, tuple[float, float]] = {}
    prev = 0
    for t_ms, rate in job.raw:
        span = (t_ms - prev) / 1000.0
        if span > 0:
            model = truth.writes_between(start + prev / 1000.0, start + t_ms / 1000.0)
            out.setdefault(round(t_ms / 1000.0) - 1, (float(rate), model / span))
        prev = t_ms
    return out
