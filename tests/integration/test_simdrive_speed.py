"""Known answers of the speed plan on the host path (root): `ssdbench run --plan speed` on
simulated SSDs (tests/simknown.py: nbdkit model -> nbdfuse -> loop device), each corner's
figure within 10% of the model's service rate (simdrive/ftl.py: a read costs
``pages × read_cost / FOB`` seconds of the drive's one server, mapped or not, so the drive
needs no fill: docs/plans.md "Speed").

Two drives, because one rig cannot resolve all four corners at one rate: the 1 MiB corners
cost 256 pages a read, and fio's time-based figures lose about one queue's worth of I/O
(QD × latency) at the ramp's end, so those need a fast drive (FOB 500: 64 ms a 1 MiB read),
judged net of the time the host left the drive idle (:func:`deep_off`);
at a QD1 4 KiB read the host's own round trip (nbdkit, nbdfuse, the loop device, fio's
wake-ups) and any other process's reads of the drive (a kiosk test's `blkid` probing every
device) add to the model's service time: 0.5-1.3 ms a read on a quiet or CPU-loaded host,
~9-10 ms beside other tests (45.5 IOPS of the model's 80), so that corner runs on a slow
drive (FOB 10: 12.5 ms a read) and is judged in the model's time. The drive logs its
one-page reads per 10 ms, and of them the solo ones no other request overlapped
(truth.jsonl ``rd10ms``, ``solo10ms``); over fio's measuring window (1) the drive was busy
the model's service time a read, (2) at most 10% of its reads there overlapped another
request, (3) ssdbench's IOPS × runtime lies between the solo reads and all of them (the
measurement is right, within 2%), (4) with the host's share of each read taken out (the
window over the drive's reads, less the service time) ssdbench's figure is the model's
service rate within 10%, (5) its mean latency lies between the service time and the
period of a read. A figure 20% off fails (3) and (4) whatever the host's load. The slow
drive's sequential corners are recorded, not checked."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path

import pytest

from simdrive import presets
from simdrive.truth import Truth
from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import require_root
from tests.simknown import simulated_drive

pytestmark = [pytest.mark.root, pytest.mark.slow]

PRESET = "enterprise"
PAGE = 4096
TOLERANCE = 0.10
# the QD1 4 KiB corner's drive: 12.5 ms a read, so the rig's round trip is a small part of it
SLOW_FOB = 10
# ssdbench's QD1 figure against the drive's count of reads in fio's window (measured: within
# 0.1% quiet and under `stress-ng --cpu 2`; the window's edges are the drive's 10-ms slots)
COUNT_TOLERANCE = 0.02
QD1 = "rnd4k_q1t1"
# at most this share of the window's reads may overlap another request (another process's
# probe of the drive): up to it, a figure 20% off is outside the reads' bracket (check 3,
# COUNT_TOLERANCE included); measured: 0-2.2% (docs/plans.md "Speed")
ATTRIBUTION = 0.10
# ... and when more did (measured: 2 runs in 10 beside other helpers' tests, a process reading
# the drive 4 KiB at a time at 80 IOPS through the corner), the slow drive's run is done again
QD1_TRIES = 3


def expected_iops(fob_iops: float, block_bytes: int) -> float:
    """The model's service rate of reads of ``block_bytes`` (one server: queue depth and
    threads do not change it)."""
    return fob_iops / (block_bytes // PAGE * presets.get(PRESET).read_cost)


@dataclass(frozen=True)
class SpeedRun:
    corners: dict[str, dict[str, object]]
    run_dir: Path
    truth: Truth


def speed_run(folder: Path, fob_iops: float, seconds: int) -> SpeedRun:
    """The speed plan on a fresh simulated drive: its corners by key, its run and the
    drive's log."""
    with simulated_drive(folder / "drive", PRESET, "131075s", fob_iops) as drive:
        assert drive.loop
        results = folder / "results"
        code = main(["run", drive.loop, "--plan", "speed", "--results", str(results),
                     "--quiet", "--no-svg", "--set", f"speed_seconds={seconds}",
                     "--set", "speed_ramp_seconds=1", "--set", "speed_gib=0.0625"])
        assert code == ExitCode.OK
    (run_dir,) = results.glob("*/speed")
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done"
    return SpeedRun({c["key"]: c for c in record["speed"]["corners"]}, run_dir,
                    drive.truth())


def check(corner: dict[str, object], fob_iops: float) -> tuple[str, float, float]:
    block = 2**20 if corner["block_size"] == "1m" else PAGE
    want = expected_iops(fob_iops, block)
    got = float(corner["iops"])  # type: ignore[arg-type]
    mb_s = float(corner["mb_s"])  # type: ignore[arg-type]
    assert abs(mb_s - got * block / 1e6) <= 0.01 * mb_s + 0.002, corner  # one figure, two units
    return str(corner["label"]), got, want


def busy_share(run: SpeedRun, key: str) -> float:
    """The share of a corner's measuring window the drive was busy, over the window's whole
    seconds (fio/<stage>.json: ``runtime`` up to the report's ``timestamp_ms``, written
    tens of ms after the last I/O): the rest the host left it idle."""
    report = json.loads((run.run_dir / "fio" / f"speed-{key}-read.json").read_text())
    end = report["timestamp_ms"] / 1000.0
    inner = run.truth.window(math.ceil(end - report["jobs"][0]["read"]["runtime"] / 1000.0),
                             math.floor(end))
    assert inner, (key, end)
    return sum(s.busy_ms for s in inner) / 1000.0 / len(inner)


def deep_off(run: SpeedRun, fob_iops: float) -> list[tuple[str, float, float, float]]:
    """The fast drive's three corners whose figure, net of the time the host left the drive
    idle (:func:`busy_share`), is beyond 10% of the model's rate: (label, IOPS, busy share,
    model). A loaded host does not keep even 512 reads in flight (CPU hogs beside the
    test: the drive busy 88% of an RND4K Q32T16 window, 3558 IOPS of the model's 4000)."""
    off = []
    for key in ("seq1m_q8t1", "seq1m_q1t1", "rnd4k_q32t16"):
        label, got, want = check(run.corners[key], fob_iops)
        busy = busy_share(run, key)
        if not (busy > 0 and abs(got / busy - want) <= TOLERANCE * want):
            off.append((label, got, round(busy, 3), want))
    return off


@dataclass(frozen=True)
class Qd1:
    """The QD1 4 KiB corner in the model's time."""

    got: float  # ssdbench's IOPS
    model: float  # the model's service rate
    reads: float  # the drive's one-page reads completed in fio's measuring window
    solo: float  # ... of which no other request overlapped (each of the corner's, nearly)
    window_s: float  # fio's measuring window (the ramp left out)
    busy_s: float  # the drive's busy time in the window's whole seconds of one-page reads
    busy_reads: int  # ... and the reads it completed in them (0: no such second)
    latency_s: float  # ssdbench's mean latency

    @property
    def told_apart(self) -> bool:
        """Few enough of the window's reads overlapped another request (ATTRIBUTION)."""
        return self.solo >= 1 and self.reads - self.solo <= ATTRIBUTION * self.solo

    @property
    def counted(self) -> float:
        """The reads ssdbench's figure stands for."""
        return self.got * self.window_s

    def host_gap_s(self, reads: float) -> float:
        """The host's share of each of ``reads`` reads over the window (from one completion
        to the next arrival, and any other process's reads of the drive between)."""
        return self.window_s / reads - 1.0 / self.model

    def seen(self, reads: float) -> float:
        """ssdbench's figure with the host's share of each read taken out."""
        per_read = 1.0 / self.got - self.host_gap_s(reads)
        return 1.0 / per_read if per_read > 0 else math.inf


def qd1_in_model_time(run: SpeedRun, fob_iops: float) -> Qd1:
    """The QD1 corner against the drive's log over fio's measuring window: it ends where
    the drive completed the corner's last 4 KiB read (the last 10-ms slot with a one-page
    read before fio wrote its report, fio/<stage>.json ``timestamp_ms``) and lasts fio's
    ``runtime``. The drive counts one-page reads apart (``rd10ms``): another process's
    buffered probe of the device (readahead, 16-128 pages a read; measured beside other
    helpers' tests, every ~2.5 s) is not the corner's, though its busy time slows it as
    the host's gaps do."""
    corner = run.corners[QD1]
    _, got, model = check(corner, fob_iops)
    report = json.loads((run.run_dir / "fio" / "speed-rnd4k_q1t1-read.json").read_text())
    window_s = report["jobs"][0]["read"]["runtime"] / 1000.0
    end = run.truth.last_page_read_end(report["timestamp_ms"] / 1000.0)
    assert end is not None, "the drive's log has no 4 KiB read before fio's report"
    # the drive's service: over the window's whole seconds in which, and in the two after
    # which (a read straddles an edge, up to 1.6 s for 128 pages), it served only one-page
    # reads, so its busy time there is theirs
    clean = [s for s in run.truth.window(math.ceil(end - window_s), math.floor(end))
             if all(n.read_pages == n.host_reads for n in run.truth.window(s.t, s.t + 3))]
    latency_s = float(corner["mean_latency_us"]) / 1e6  # type: ignore[arg-type]
    return Qd1(got, model, run.truth.page_reads_between(end - window_s, end),
               run.truth.page_reads_between(end - window_s, end, solo=True), window_s,
               sum(s.busy_ms for s in clean) / 1000.0, sum(s.host_reads for s in clean),
               latency_s)


def qd1_off(q: Qd1) -> list[str]:
    """What of the QD1 corner's known answer does not hold (empty: all of it)."""
    off = []
    # a read that straddles an edge of the whole seconds is busy on both sides of it
    if q.busy_reads and abs(q.busy_s * q.model - q.busy_reads) > 2.0:
        off.append(f"the drive was busy {q.busy_s:.3f} s for {q.busy_reads} reads, "
                   f"not the model's {1e3 / q.model:.2f} ms a read")
    if not q.told_apart:
        return [*off, f"{q.reads - q.solo:.0f} of the drive's {q.reads:.0f} reads in the "
                "window overlapped another request: the corner's reads are not told apart"]
    if not (1 - COUNT_TOLERANCE) * q.solo - 1 <= q.counted <= (1 + COUNT_TOLERANCE) * q.reads + 1:
        off.append(f"ssdbench's {q.got} IOPS stand for {q.counted:.1f} reads, the drive "
                   f"completed {q.solo:.1f} (solo) to {q.reads:.1f} in fio's window")
    if not (q.seen(q.reads) <= (1 + TOLERANCE) * q.model
            and q.seen(q.solo) >= (1 - TOLERANCE) * q.model):
        off.append(f"the host's {q.host_gap_s(q.reads) * 1e3:.2f}..{q.host_gap_s(q.solo) * 1e3:.2f}"
                   f" ms a read taken out, ssdbench's figure is {q.seen(q.reads):.1f}.."
                   f"{q.seen(q.solo):.1f} IOPS, not within 10% of the model's {q.model}")
    if not 0.97 / q.model <= q.latency_s <= 1.02 * q.window_s / q.solo:
        off.append(f"mean latency {q.latency_s * 1e3:.2f} ms outside the service time and "
                   f"the period of a read ({1e3 / q.model:.2f}..{q.window_s / q.solo * 1e3:.2f})")
    return off


def test_speed_corners_match_the_models_service_rates(tmp_path: Path) -> None:
    require_root()
    fast = speed_run(tmp_path / "fast", 500, 8)
    qd1s = []
    for attempt in range(QD1_TRIES):
        slow = speed_run(tmp_path / f"slow{attempt}", SLOW_FOB, 4)
        qd1s.append(qd1_in_model_time(slow, SLOW_FOB))
        if qd1s[-1].told_apart:
            break
    off = deep_off(fast, 500)
    assert not off, f"corners beyond 10% of the model's rate (label, IOPS, busy, model): {off}"
    # The QD1 corner: one read at a time, so every millisecond the host takes to pass a
    # request on is the corner's too (CI, beside three other light jobs' real-time drives:
    # 45.7 IOPS against the model's 80). Judged in the model's time (the docstring).
    # Run again only when another process read the drive beside the corner (check 2): a
    # condition on the drive's log alone, never on ssdbench's figure.
    qd1 = qd1s[-1]
    assert not qd1_off(qd1), (qd1_off(qd1), qd1s)
