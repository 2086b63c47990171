"""The ground-truth log: records written by the model, read back, compared with fio-shaped
per-second logs whose windows are neither epoch-aligned nor regular."""

from __future__ import annotations

import json

import pytest

from simdrive import truth
from simdrive.ftl import FTL, PAGE, Personality, record


def model_log() -> tuple[str, FTL]:
    """A drive paced at 1000 IOPS: writes from epoch 1000.3 to 1004.3, then a gap, then
    one second more from 1010.5."""
    p = Personality("t", "test", spare=0.5, pages_per_block=16, low=1)
    ftl = FTL(p, 64 * 2**20, 1000.0)
    for i in range(4000):
        ftl.write(1000.3005, i * PAGE, PAGE)
    for i in range(1000):
        ftl.write(1010.5, i * PAGE, PAGE)
    lines = [json.dumps({"event": "start", "time": 1000.0, "preset": "t"})]
    lines += [json.dumps(record(s, row, 0)) for s, row in ftl.final_bins(2000.0)]
    return "\n".join(lines) + "\n", ftl


def test_records_round_trip_and_window_counts() -> None:
    text, _ = model_log()
    log = truth.parse(text)
    assert log.start["preset"] == "t"
    assert [s.t for s in log.seconds] == [1000, 1001, 1002, 1003, 1004, 1010, 1011]
    assert sum(s.host_writes for s in log.seconds) == 5000
    assert log.iops(1000, 1005) == {1000: 699, 1001: 1000, 1002: 1000, 1003: 1000, 1004: 301}
    assert log.iops(1000, 1012)[1007] == 0  # a second without a record is 0
    assert log.writes_between(1001.3, 1002.3) == pytest.approx(1000, abs=1)
    assert log.resample(1000.3, 4) == pytest.approx([1000] * 4, abs=1)
    assert log.zero_seconds() == []  # idle seconds are not stalls
    assert log.writes_between(1000, 1012, replied=True) == 0  # no server: no replies


def test_replies_are_counted_apart_from_the_models_completions() -> None:
    """A served drive logs when each reply went out as well: a reply 15 ms after the
    model's completion moves that write across the edge in the host's view only."""
    p = Personality("t", "test", spare=0.5, pages_per_block=16, low=1)
    ftl = FTL(p, 64 * 2**20, 1000.0)
    dones = [ftl.write(1000.9900 + i * 0.0001, i * PAGE, PAGE) for i in range(5)]
    for d in dones:
        ftl.replied(d + 0.015)
    log = truth.parse("\n".join(json.dumps(record(s, row, 0))
                                for s, row in ftl.final_bins(2000.0)))
    assert log.writes_between(1000, 1001) == 5
    assert log.writes_between(1000, 1001, replied=True) == 0
    assert log.writes_between(1001, 1002, replied=True) == 5
    assert [s.t for s in log.seconds] == [1000, 1001]
    assert log.seconds[1].host_writes == 0 and sum(log.seconds[1].r10ms) == 5
    # at the edge all five were done and none answered; 20 ms on, all answered
    assert log.reply_lag(1001.0) == pytest.approx(5)
    assert log.reply_lag(1001.02) == pytest.approx(0)


def test_reads_are_counted_per_10_ms_apart_from_writes() -> None:
    """A QD1 read job split into the drive's service and the host's gaps: reads of 12.5 ms
    each (FOB 10, read_cost 0.125) arriving 2.5 ms after the previous completion, from
    epoch 1000.5 to 1003.5; then two reads that overlap (not solo), a write and a read of
    8 pages, which the page-read counts leave alone."""
    p = Personality("t", "test", spare=0.5, pages_per_block=16, low=1, read_cost=0.125)
    ftl = FTL(p, 64 * 2**20, 10.0)
    t = 1000.5
    while t < 1003.5:
        t = ftl.read(t, 0, PAGE) + 0.0025
    ftl.read(1003.6, 0, PAGE)
    ftl.read(1003.605, 0, PAGE)  # arrives while the one before is served: neither is solo
    ftl.write(1004.0, 0, PAGE)
    ftl.read(1004.5, 0, 8 * PAGE)  # a buffered probe's readahead: not a page read
    log = truth.parse("\n".join(json.dumps(record(s, row, 0))
                                for s, row in ftl.final_bins(2000.0)))
    assert log.page_reads_between(1000, 1003.55) == 200  # 3 s over 15 ms a read
    assert log.page_reads_between(1000, 1005) == 202
    assert log.page_reads_between(1000, 1005, solo=True) == 200
    assert log.page_reads_between(1001, 1002) == pytest.approx(1000 / 15, abs=1)
    assert log.writes_between(1000, 1005) == 1 and log.seconds[-1].rd10ms == ()
    assert log.seconds[-1].host_reads == 1 and log.seconds[-1].read_pages == 8
    assert log.last_page_read_end() == pytest.approx(1003.63)  # its read: done 1003.625
    end = log.last_page_read_end(before=1003.55)
    assert end == pytest.approx(1003.5)  # the slot of the 200th read's completion, 1003.4975
    assert log.last_page_read_end(before=1001.0) == pytest.approx(1001.0)
    assert log.last_page_read_end(before=1000.4) is None
    busy = sum(s.busy_ms for s in log.window(1001, 1003)) / 1000
    assert busy / log.page_reads_between(1001, 1003) == pytest.approx(0.0125, rel=0.01)


def test_align_finds_the_phase_of_a_per_second_series() -> None:
    log = truth.parse(model_log()[0])
    # a series that starts at 1009.8: 0.7 s idle + 0.3 s of writes, then 700
    series = [300.0, 700.0]
    assert log.align(series, near=1010.3, search_s=1.0) == pytest.approx(1009.8, abs=0.011)


def test_fio_windows_follow_fios_irregular_windows() -> None:
    log = truth.parse(model_log()[0])
    # fio's time 0 at epoch 1000.3; windows of 1 s, 1.5 s, 1.5 s (fio closes a window at a
    # completion, so a stall stretches one), values are I/Os per second of the window
    rows = [(1000, 1000.0), (2500, 1000.0), (4000, 1000.0)]
    got = log.fio_windows(rows, 1000.3)
    assert [round(f) for _, f, _ in got] == [1000, 1500, 1500]
    assert [m for *_, m in got] == pytest.approx([1000, 1500, 1500], abs=2)
    assert log.align_fio(rows, near=1000.0, search_s=0.5) == pytest.approx(1000.3, abs=0.011)


def test_bad_log_line_is_named() -> None:
    with pytest.raises(ValueError, match="line 2"):
        truth.parse('{"event": "start", "time": 1}\n{not json\n')
