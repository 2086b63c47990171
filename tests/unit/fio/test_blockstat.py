"""The block layer's trace (fio/blockstat.py) and the exact per-second series built from it
(fio/logs.py load_block_trace)."""

from __future__ import annotations

import json
import math
import os
import sys
import time
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest

from ssdbench.fio import blockstat
from ssdbench.fio.blockstat import (
    COARSE_NS,
    DENSE_NS,
    EDGE_NS,
    NEAR_NS,
    NS,
    BlockStatSampler,
    next_sample_ns,
    sampler_argv,
    trace_paths,
)
from ssdbench.fio.logs import StageFiles, load_block_trace, write_run_csvs
from ssdbench.system import SystemRunner
from tests.unit.fio.conftest import make_run_dir

EPOCH = 1_795_433_586_030_000_000


def test_schedule_is_dense_until_fios_epoch_is_known() -> None:
    assert next_sample_ns(EPOCH, None) == EPOCH + DENSE_NS
    assert next_sample_ns(EPOCH - NS, EPOCH) == EPOCH - NS + DENSE_NS


def test_schedule_reads_every_2_ms_around_each_second_and_every_100_ms_between() -> None:
    for k in (0, 1, 37):
        edge = EPOCH + k * NS
        assert next_sample_ns(edge - NEAR_NS, EPOCH) == edge - NEAR_NS + EDGE_NS
        assert next_sample_ns(edge + NEAR_NS - 1, EPOCH) == edge + NEAR_NS - 1 + EDGE_NS
    # between edges: coarse steps, and the first read of an edge lands NEAR_NS before it
    assert next_sample_ns(EPOCH + 100_000_000, EPOCH) == EPOCH + 200_000_000
    assert next_sample_ns(EPOCH + 950_000_000, EPOCH) == EPOCH + NS - NEAR_NS
    # walking the schedule over 3 s: every edge has reads within 2 ms on both sides
    t, reads = EPOCH + 10 * NEAR_NS, []
    while t < EPOCH + 3 * NS + NEAR_NS:
        reads.append(t)
        t = next_sample_ns(t, EPOCH)
    arr = np.array(reads)
    for k in (1, 2, 3):
        edge = EPOCH + k * NS
        assert (edge - arr[arr <= edge]).min() <= EDGE_NS
        assert (arr[arr > edge] - edge).min() <= EDGE_NS
    assert len(reads) <= 3 * (2 * NEAR_NS // EDGE_NS + NS // COARSE_NS + 2)


def _trace(fio_dir: Path, rows: list[tuple[float, int]], *, io_size: int = 4096,
           epoch: int | None = EPOCH, column: int = 7) -> StageFiles:
    """A trace with (seconds after the epoch, cumulative sectors) rows in ``column``."""
    fio_dir.mkdir(parents=True, exist_ok=True)
    rows_path, meta_path = trace_paths(fio_dir, "torture")
    lines = []
    for t, sectors in rows:
        fields = [0] * 17
        fields[column - 1] = sectors
        lines.append(",".join(str(v) for v in [EPOCH + round(t * NS), *fields]))
    rows_path.write_text("\n".join(lines) + "\n")
    meta_path.write_text(json.dumps({"fio_epoch_ns": epoch, "io_size": io_size}))
    return StageFiles(fio_dir, "torture")


def test_seconds_are_exact_through_a_stall(tmp_path: Path) -> None:
    # 1000 IOPS for 2 s, a 2.5-s stall, then 1000 IOPS: 8 sectors per 4 KiB I/O
    done, rows = 0, []
    for ms in range(0, 7000, 5):
        t = ms / 1000
        stalled = 2.0 <= t < 4.5
        rows.append((t, done * 8))
        if not stalled:
            done += 5
    trace = load_block_trace(_trace(tmp_path / "fio", rows), "write")
    assert trace is not None
    iops, mib_s = trace.per_second(6)
    assert iops.tolist() == pytest.approx([1000, 1000, 0, 0, 500, 1000], abs=1e-6)
    assert mib_s[0] == pytest.approx(1000 * 4096 / 2**20)


def test_a_partial_last_second_and_seconds_the_trace_does_not_cover(tmp_path: Path) -> None:
    rows = [(t / 10, int(t / 10 * 2000 * 8)) for t in range(-2, 26)]  # -0.2 .. 2.5 s
    trace = load_block_trace(_trace(tmp_path / "fio", rows), "write")
    assert trace is not None
    iops, _ = trace.per_second(3, last_s=0.5)
    assert iops.tolist() == pytest.approx([2000, 2000, 2000])
    iops, _ = trace.per_second(4)  # the trace ends at 2.5 s: the last second is unknown
    assert iops[:2].tolist() == pytest.approx([2000, 2000])
    assert math.isnan(iops[2]) and math.isnan(iops[3])


def test_counters_going_back_end_the_trace(tmp_path: Path) -> None:
    rows = [(0.0, 0), (0.5, 8000), (1.0, 16000), (1.5, 8), (2.0, 8000)]
    trace = load_block_trace(_trace(tmp_path / "fio", rows), "write")
    assert trace is not None
    iops, _ = trace.per_second(2)
    assert iops[0] == pytest.approx(2000) and math.isnan(iops[1])


@pytest.mark.parametrize("change", ["no epoch", "no meta", "one row", "bad io size"])
def test_without_a_usable_trace_the_caller_falls_back(tmp_path: Path, change: str) -> None:
    rows = [(0.0, 0), (1.0, 8000)]
    files = _trace(tmp_path / "fio", rows[:1] if change == "one row" else rows,
                   epoch=None if change == "no epoch" else EPOCH,
                   io_size=0 if change == "bad io size" else 4096)
    if change == "no meta":
        trace_paths(files.fio_dir, "torture")[1].unlink()
    assert load_block_trace(files, "write") is None


def test_reads_use_the_sectors_read_column(tmp_path: Path) -> None:
    files = _trace(tmp_path / "fio", [(0.0, 0), (1.0, 16000)], column=3)
    trace = load_block_trace(files, "read")
    assert trace is not None
    assert trace.per_second(1)[0].tolist() == pytest.approx([2000])
    assert load_block_trace(files, "write") is not None  # a write column of zeros
    assert load_block_trace(files, "write").per_second(1)[0].tolist() == [0]  # type: ignore[union-attr]


def _sampler(tmp_path: Path, stat: Path) -> BlockStatSampler:
    return BlockStatSampler(SystemRunner(), str(stat), tmp_path / "fio", "torture",
                            device="loop9", direction="write", io_size=4096)


def _rows(tmp_path: Path) -> list[str]:
    return trace_paths(tmp_path / "fio", "torture")[0].read_text().splitlines()


def _wait_for(what: Callable[[], bool]) -> None:
    deadline = time.monotonic() + 20
    while not what() and time.monotonic() < deadline:
        os.sched_yield()


def test_sampler_writes_rows_and_fios_epoch(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("    5 0 40 1 7 0 56 2 0 3 3\n")
    sampler = _sampler(tmp_path, stat)
    assert sampler.start(), sampler.error
    # a process of its own, a real-time one when ssdbench may make it so (root)
    pid = sampler.pid
    assert pid is not None
    assert os.sched_getscheduler(pid) == (os.SCHED_FIFO if os.geteuid() == 0
                                          else os.SCHED_OTHER)
    epoch_ms = time.time_ns() // 1_000_000 + 500  # fio starts after the sampler
    sampler.offer_epoch(epoch_ms - 3 * 3600 * 1000)  # before the sampler: not fio's start
    sampler.offer_epoch(epoch_ms + 5)
    sampler.offer_epoch(epoch_ms)  # an earlier estimate wins
    sampler.offer_epoch(epoch_ms + 9)
    # rows reach the file once a second; around fio's second 1 they are 2 ms apart
    edge = (epoch_ms + 1000) * 1_000_000
    _wait_for(lambda: any(int(r.split(",")[0]) > edge + NEAR_NS
                          for r in _rows(tmp_path)[1:]))
    sampler.stop()
    assert sampler.pid is None
    rows_path, meta_path = trace_paths(tmp_path / "fio", "torture")
    meta = json.loads(meta_path.read_text())
    assert meta["fio_epoch_ns"] == epoch_ms * 1_000_000 and meta["io_size"] == 4096
    lines = rows_path.read_text().splitlines()
    # a header naming the fields the kernel prints (11 here: an older kernel), then rows
    assert lines[0] == ("time_ns,reads,reads_merged,sectors_read,ms_reading,writes,"
                        "writes_merged,sectors_written,ms_writing,in_flight,io_ticks_ms,"
                        "queue_ms")
    assert len(lines) == sampler.samples + 1 >= 5
    assert lines[1].split(",")[1:] == ["5", "0", "40", "1", "7", "0", "56", "2", "0", "3", "3"]
    # the sampler read fio's epoch from the metadata: dense reads around its second 1
    stamps = np.array([int(r.split(",")[0]) for r in lines[1:]])
    assert ((stamps > edge - NEAR_NS) & (stamps < edge + NEAR_NS)).sum() >= 3
    # what the sampler wrote reads back as a trace (the header skipped)
    trace = load_block_trace(StageFiles(tmp_path / "fio", "torture"), "write")
    assert trace is not None and trace.io_size == 4096
    assert trace.done_bytes.tolist() == [0.0] * sampler.samples
    assert sampler.error is None


def test_a_stat_file_that_fails_ends_the_trace_without_raising(tmp_path: Path) -> None:
    stat = tmp_path / "stat"
    stat.write_text("    5 0 40 1 7 0 56 2 0 3 3\n")
    sampler = _sampler(tmp_path, stat)
    assert sampler.start(), sampler.error
    _wait_for(lambda: len(_rows(tmp_path)) > 1)  # the first row is flushed at once
    # what the sampler reads no longer looks like the counters: written in place, never
    # empty (the sampler, a real-time task, read the file between write_text's truncation and
    # its write once, in a make test job at SCHED_IDLE: "unexpected content b''")
    with stat.open("r+b") as f:
        f.write(b"gone\n")
        f.truncate()
    pid = sampler.pid
    assert pid is not None
    # it ends itself (not reaped here: stop() collects what it said)
    _wait_for(lambda: os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT)
              is not None)
    sampler.stop()
    assert sampler.error and "unexpected content b'gone" in sampler.error, sampler.error
    assert "the trace ends here" in sampler.error
    rows = _rows(tmp_path)
    assert len(rows) == sampler.samples + 1 >= 2  # the rows read before it reached the file
    assert all(r.split(",")[1:] == ["5", "0", "40", "1", "7", "0", "56", "2", "0", "3", "3"]
               for r in rows[1:])
    (tmp_path / "dir").mkdir()  # opens, but cannot be read
    for path in (tmp_path / "dir", tmp_path / "nothing"):
        refused = _sampler(tmp_path, path)
        assert not refused.start() and refused.error and "cannot read" in refused.error


def test_the_sampler_ends_when_ssdbench_is_gone(tmp_path: Path) -> None:
    """A sampler whose ssdbench died (killed, power cut in a test rig) does not run on:
    run here with a parent that is not its own, it stops at its first wake-up."""
    stat = tmp_path / "stat"
    stat.write_text("    5 0 40 1 7 0 56 2 0 3 3\n")
    rows, meta = trace_paths(tmp_path, "torture")
    proc = SystemRunner().stream(
        [*sampler_argv(str(stat), rows, meta)[:-1], str(os.getpid() + 1_000_000)],
        env={"PYTHONPATH": blockstat._package_root()})  # as BlockStatSampler passes it
    result = proc.wait()
    assert result.text.splitlines() == ["ready", "error ssdbench went away (the trace ends here)"]
    assert len(rows.read_text().splitlines()) == 2  # its first and last reads


def test_a_sampler_that_cannot_start_leaves_no_trace_and_says_why(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    stat = tmp_path / "stat"
    stat.write_text("    5 0 40 1 7 0 56 2 0 3 3\n")
    monkeypatch.setattr(blockstat, "_package_root", lambda: str(tmp_path))
    monkeypatch.setattr(sys, "executable", "/nonexistent/python3")
    sampler = _sampler(tmp_path, stat)
    assert not sampler.start()
    assert sampler.error and "cannot start the sampler" in sampler.error
    assert "not installed" in sampler.error
    # Python without ssdbench (the base interpreter of the tests' venv)
    monkeypatch.setattr(sys, "executable", str(Path(sys.base_prefix) / "bin" / "python3"))
    sampler = _sampler(tmp_path, stat)
    assert not sampler.start()
    assert sampler.error and sampler.error.startswith("the sampler exited with code 1 ")
    assert "No module named 'ssdbench'" in sampler.error


def test_the_queue_fio_drains_after_its_runtime_is_counted_in_the_reconciliation_only(
        tmp_path: Path) -> None:
    """Real fio JSON (torture-3s): fio's total counts the I/Os it drained after its runtime
    (at most the queue depth); they complete after the last second, so iops.csv leaves
    them out and the reconciliation adds them back (seen in QEMU: exactly 32 each run)."""
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    report = StageFiles(run_dir / "fio", "torture").report()
    assert report is not None
    total = report.total("write")[1]
    runtime_s = report.runtime_ms / 1000
    in_time = total - 32

    def trace(missed: int) -> None:
        rows = [(t / 1000, round((in_time - missed) * t / 1000 / runtime_s) * 8)
                for t in range(0, int(runtime_s * 1000) + 1, 5)]
        rows.append((runtime_s + 0.1, (total - missed) * 8))  # the drain, then fio exits
        _trace(run_dir / "fio", rows)

    trace(0)
    check = write_run_csvs(run_dir)["torture"]
    assert check.source == "block-layer"
    assert check.series_total == pytest.approx(in_time, abs=1)
    assert check.after_end == pytest.approx(32, abs=1)
    assert check.ok and check.relative_gap is not None and abs(check.relative_gap) < 1e-4
    assert check.to_dict()["after_end_ios"] == pytest.approx(32, abs=1)
    table = (run_dir / "iops.csv").read_text().splitlines()[1:]
    assert [float(r.split(",")[1]) for r in table] == pytest.approx(
        [in_time / runtime_s] * 3, rel=1e-3)
    # a trace that missed I/O is flagged, the drain named
    trace(5000)
    check = write_run_csvs(run_dir)["torture"]
    assert not check.ok
    assert "(+32 completed after its last second)" in (check.warning() or "")


def test_interpolation_uses_the_reads_around_each_edge(tmp_path: Path) -> None:
    # reads 1.5 ms either side of each edge, 1000 IOPS before 1.0 s and 3000 after:
    # the count at 1.0 s lies between the reads around it, not at the nearest read
    rows, done = [], 0.0
    for t in (-0.0015, 0.0015, 0.5, 0.9985, 1.0015, 1.5, 1.9985, 2.0015):
        done = 1000 * min(t, 1.0) + 3000 * max(t - 1.0, 0.0)
        rows.append((t, round(done * 8)))
    header = "time_ns,reads,reads_merged,sectors_read\n"  # narrower than the rows
    files = _trace(tmp_path / "fio", rows)
    path = trace_paths(files.fio_dir, "torture")[0]
    path.write_text(header + path.read_text())
    trace = load_block_trace(files, "write")
    assert trace is not None
    iops, _ = trace.per_second(2)
    # linear between the reads bracketing 1.0 s (998.5 and 1004.5 I/Os): 1001.5, so the
    # seconds are 1001.5 and 2998.5, within the 3-ms bracket's 1.5 I/Os of the truth
    # (the nearest read would give 998.5 or 1004.5)
    assert iops.tolist() == pytest.approx([1001.5, 2998.5], abs=0.01)
    assert trace.edge_brackets_ms(2).tolist() == pytest.approx([3.0, 3.0, 3.0], abs=1e-3)
    assert math.isnan(trace.edge_brackets_ms(3)[3])  # past the trace's end


def test_run_json_says_how_widely_the_edges_were_bracketed(tmp_path: Path) -> None:
    """A sampler that read late around an edge (90 ms before to 4 ms after it, as a thread
    of ssdbench once did on a loaded host) is named in the reconciliation."""
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    report = StageFiles(run_dir / "fio", "torture").report()
    assert report is not None
    total, runtime_ms = report.total("write")[1], report.runtime_ms

    def done(t_ms: int) -> int:  # a steady rate, all of fio's I/O within its runtime
        return round(total * min(max(t_ms, 0), runtime_ms) / runtime_ms) * 8

    late = [t for t in range(-6, runtime_ms + 8, 2) if not -90 < t - 1000 < 4]
    _trace(run_dir / "fio", [(t / 1000, done(t)) for t in late])
    entry = write_run_csvs(run_dir)["torture"].to_dict()
    assert entry["source"] == "block-layer", entry
    assert entry["edge_bracket_ms_max"] == pytest.approx(94.0, abs=0.01)
    assert entry["wide_edges"] == 1
    _trace(run_dir / "fio", [(t / 1000, done(t)) for t in range(-6, runtime_ms + 8, 2)])
    entry = write_run_csvs(run_dir)["torture"].to_dict()
    assert entry["edge_bracket_ms_max"] == pytest.approx(2.0, abs=0.01)
    assert entry["wide_edges"] == 0


def test_a_trace_that_does_not_see_fios_io_gives_way_to_fios_log(tmp_path: Path) -> None:
    """A device whose statistics stay at zero (queue/iostats off, a multipath head): the
    series comes from fio's log and the reconciliation says why."""
    run_dir = make_run_dir(tmp_path, "torture-3s", "torture")
    _trace(run_dir / "fio", [(t / 10, 0) for t in range(-5, 40)])
    check = write_run_csvs(run_dir)["torture"]
    assert check.source == "fio-log"
    assert check.trace_rejected and "do not see fio's I/O" in check.trace_rejected
    assert check.to_dict()["trace_rejected"] == check.trace_rejected
    assert check.after_end == 0.0
