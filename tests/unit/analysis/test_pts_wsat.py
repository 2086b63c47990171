"""analysis/pts.py: the WSAT view (IOPS against gigabytes written from the purge) on series
whose answers are known: the cliff in gigabytes written, what ended the run, the rounds."""

from __future__ import annotations

import numpy as np
import pytest

from ssdbench.analysis import analyse_iops
from ssdbench.analysis.pts import last_second_fraction, written_gb, wsat

SPAN = 1_000_204_886_016  # a 1 TB drive's IDEMA capacity (1953525168 sectors)


def _drive_series() -> np.ndarray:
    # 100K IOPS fresh out of box for 30 s, then 20K: 4 KiB writes
    return np.asarray(np.r_[np.full(30, 100_000.0), np.full(150, 20_000.0)], dtype=float)


def test_written_gb_counts_each_second_and_a_cut_last_one_in_part():
    curve = written_gb([1000.0, np.nan, 1000.0], 4096)
    assert curve.tolist() == pytest.approx([4.096e-3, 4.096e-3, 8.192e-3])
    assert written_gb([1000.0, 1000.0], 4096, 0.25)[-1] == pytest.approx(1.25 * 4.096e-3)
    assert last_second_fraction(10, 9.18) == pytest.approx(0.18)
    assert last_second_fraction(10, 10.0) == 1.0 and last_second_fraction(10, None) == 1.0


def test_the_cliff_in_gigabytes_written_and_the_final_level():
    iops = _drive_series()
    it = analyse_iops(iops, round_s=10)
    w = wsat(iops, it, span_bytes=SPAN, io_bytes=4096, goal_multiple=4.0)
    assert it.cliff.at_s == 30
    assert w.cliff_at_s == 30
    assert w.cliff_written_gb == pytest.approx(30 * 100_000 * 4096 / 1e9)  # 12.288 GB
    assert w.cliff_capacity == pytest.approx(12.288e9 / SPAN)
    assert w.fob_iops == pytest.approx(100_000) and w.final_iops == pytest.approx(20_000)
    assert w.steady_iops == pytest.approx(20_000) and w.round_s == 10
    assert len(w.rounds) == 18 and w.rounds[2].end_s == 30
    assert w.rounds[2].written_gb == pytest.approx(12.288)
    # 24.6 GB of a 4-TB goal: the time limit ended it, and the note says how far it got
    assert w.ended_by == "time" and w.note is not None and "4,000.82 GB goal" in w.note
    assert w.to_dict()["rounds"][0]["iops"] == pytest.approx(100_000)


def test_what_ended_the_run_comes_from_fio_when_the_run_recorded_it():
    iops = _drive_series()
    it = analyse_iops(iops, round_s=10)
    span = 6_000_000_000  # 24.6 GB written: four of these, within the last second
    assert wsat(iops, it, span_bytes=span, io_bytes=4096, goal_multiple=4.1).ended_by \
        == "capacity"
    w = wsat(iops, it, span_bytes=span, io_bytes=4096, goal_multiple=4.0,
             fio_bytes=24_000_000_000, reached=True, runtime_s=179.5)
    assert w.ended_by == "capacity" and w.written_gb == 24.0 and w.note is None
    assert w.capacity_written == pytest.approx(4.0) and w.last_fraction == pytest.approx(0.5)
    assert wsat(iops, it, span_bytes=span, io_bytes=4096, goal_multiple=None).ended_by \
        == "unknown"


def test_a_run_shorter_than_a_round_and_bad_shapes():
    it = analyse_iops(np.full(5, 1000.0), round_s=10)
    w = wsat(np.full(5, 1000.0), it, span_bytes=SPAN, io_bytes=4096, goal_multiple=4.0)
    assert w.rounds == () and w.fob_iops is None and w.final_iops is None
    with pytest.raises(ValueError, match="span"):
        wsat(np.full(5, 1000.0), it, span_bytes=0, io_bytes=4096, goal_multiple=4.0)
