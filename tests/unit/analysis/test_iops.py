"""Per-second IOPS analysis on synthetic series whose answers are known."""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import pytest

from ssdbench.analysis import (
    analyse_iops,
    default_steady_start,
    minute_rounds,
    series_stats,
    snia_steady_state,
    spare_area_cliff,
    stalls,
    steady_window_start,
)
from ssdbench.analysis.events import find_events


def test_default_steady_start_is_1400_for_the_review_run_else_70_percent():
    assert default_steady_start(2000) == 1400
    assert default_steady_start(1000) == 700
    assert default_steady_start(60) == pytest.approx(42)


def test_series_stats_known_values():
    st = series_stats(np.arange(1, 101, dtype=float))  # 1..100
    assert st.seconds == 100
    assert st.mean == pytest.approx(50.5)
    assert st.stddev == pytest.approx(math.sqrt((100**2 - 1) / 12))  # population
    assert (st.min, st.max) == (1, 100)
    assert st.p50 == pytest.approx(50.5)
    assert st.p1 == pytest.approx(1.99)  # numpy linear: 1 + 0.01 * 99
    assert st.p99 == pytest.approx(99.01)


def test_series_stats_empty_and_all_nan_give_none_not_a_crash():
    for values in ([], [math.nan, math.nan]):
        st = series_stats(values)
        assert st.seconds == 0
        assert st.mean is None and st.p1 is None and st.stddev is None
    assert series_stats([5.0]).stddev == 0.0


def test_steady_window_uses_seconds_at_or_after_the_start():
    iops = np.r_[np.full(1400, 100.0), np.full(600, 10.0)]
    a = analyse_iops(iops)
    assert a.steady_start_s == 1400
    assert a.steady.seconds == 600
    assert a.steady.mean == 10
    assert a.whole.seconds == 2000
    assert a.whole.mean == pytest.approx((1400 * 100 + 600 * 10) / 2000)
    b = analyse_iops(np.full(1000, 5.0))  # other durations: 70%
    assert b.steady_start_s == 700 and b.steady.seconds == 300
    c = analyse_iops(iops, steady_start_s=1999.5)  # fractional start: from second 2000
    assert c.steady.seconds == 0 and c.steady.mean is None


def test_stalls_count_zero_seconds_and_the_longest_run():
    iops = np.full(2000, 10_000.0)
    iops[[100, 500, 1500]] = 0  # isolated stalls
    iops[1600:1617] = 0  # 17 consecutive zero seconds
    iops[1700:1712] = 0  # 12
    iops[1800] = 500  # below 10% of the steady mean, not zero
    a = analyse_iops(iops)
    s = a.stalls
    assert s.zero_seconds == 3 + 17 + 12
    assert s.longest_zero_run_s == 17
    assert s.longest_zero_run_start_s == 1600
    steady_mean = a.steady.mean
    assert steady_mean is not None
    assert s.low_threshold_iops == pytest.approx(0.1 * steady_mean)
    assert s.low_seconds == 3 + 17 + 12 + 1
    assert s.steady_low_seconds == 1 + 17 + 12 + 1  # 1500 and later


def test_stalls_without_a_steady_mean():
    s = stalls(np.zeros(10), 7, None)
    assert s.zero_seconds == 10 and s.longest_zero_run_s == 10
    assert s.low_seconds is None and s.low_threshold_iops is None


def test_missing_seconds_are_not_stalls():
    iops = np.array([100.0, math.nan, 0.0, 100.0])
    a = analyse_iops(iops, steady_start_s=0)
    assert a.missing_seconds == 1
    assert a.stalls.zero_seconds == 1
    assert a.whole.seconds == 3


def _rounds_to_series(rounds: Sequence[float]) -> np.ndarray:
    return np.repeat(np.asarray(rounds, dtype=float), 60)


def test_minute_rounds_drop_the_partial_minute():
    r = minute_rounds(np.r_[np.full(60, 1.0), np.full(60, 3.0), np.full(59, 100.0)])
    assert list(r) == [1.0, 3.0]
    assert minute_rounds(np.ones(59)).size == 0


def test_snia_steady_state_reached_at_a_known_round():
    # rounds 0-3 fall steeply; from round 4 on the drive is flat within a few percent
    rounds = [100_000, 60_000, 30_000, 15_000, 10_000, 10_300, 9_900, 10_100, 10_000, 10_200]
    ss = snia_steady_state(_rounds_to_series(rounds))
    assert ss.reached
    assert ss.first_round == 4
    assert ss.at_s == (4 + 5) * 60  # end of the window
    assert ss.window_mean == pytest.approx(np.mean(rounds[4:9]))
    assert len(ss.rounds) == 10


def test_snia_range_rule_boundary_is_inclusive():
    # window [9000, 11000, 9000, 11000, 10000]: mean 10000, range 2000 = exactly 20%,
    # slope 0 -> steady
    ok = snia_steady_state(_rounds_to_series([9000, 11000, 9000, 11000, 10000]))
    assert ok.reached and ok.at_s == 300
    bad = snia_steady_state(_rounds_to_series([9000, 11001, 9000, 11001, 10000]))
    assert not bad.reached


def test_snia_slope_rule_rejects_a_steady_drift():
    # range 12% of the mean (passes), slope 3% per round -> excursion 12% > 10%
    rounds = [10_600, 10_300, 10_000, 9_700, 9_400]
    ss = snia_steady_state(_rounds_to_series(rounds))
    assert ss.window_slope_excursion is None
    assert not ss.reached
    # a drift of 2% per round: excursion 8% -> steady
    assert snia_steady_state(_rounds_to_series([10_400, 10_200, 10_000, 9_800, 9_600])).reached


def test_snia_never_reached_on_a_series_that_keeps_oscillating():
    rounds = [20_000 if i % 2 else 10_000 for i in range(33)]
    ss = snia_steady_state(_rounds_to_series(rounds))
    assert not ss.reached and ss.at_s is None and len(ss.rounds) == 33


def test_snia_short_or_dead_series():
    assert not snia_steady_state(np.full(299, 10.0)).reached  # 4 full rounds only
    assert snia_steady_state(np.full(300, 10.0)).at_s == 300
    assert not snia_steady_state(np.zeros(600)).reached  # a stopped drive is not steady


def test_snia_rounds_of_a_plan_given_length():
    # the same falling-then-flat rounds, 15 s each: the window and the note name 15-s rounds
    rounds = [100_000, 60_000, 30_000, 15_000, 10_000, 10_300, 9_900, 10_100, 10_000, 10_200]
    series = np.repeat(np.asarray(rounds, dtype=float), 15)
    ss = snia_steady_state(series, round_s=15)
    assert ss.reached and ss.first_round == 4 and ss.at_s == 9 * 15 and ss.round_s == 15
    assert ss.to_dict()["round_s"] == 15
    assert list(minute_rounds(series, 15)) == rounds
    # on minute rounds the same 150 s are two and a half rounds: too short, said with its length
    short = snia_steady_state(series)
    assert not short.reached and short.note is not None and "rounds of 60 s" in short.note
    assert "rounds of 15 s" in (snia_steady_state(series[:60], round_s=15).note or "")
    with pytest.raises(ValueError, match="at least one second"):
        minute_rounds(series, 0)


def test_analyse_iops_passes_the_round_length_on():
    series = np.r_[np.full(20, 50_000.0), np.full(130, 8_000.0)]
    a = analyse_iops(series, round_s=15)
    assert a.steady_state.round_s == 15 and a.steady_state.reached
    assert a.steady_state.at_s is not None and a.steady_state.at_s <= 120
    assert not analyse_iops(series).steady_state.reached  # two minutes: no 5 rounds


def test_cliff_found_at_the_sustained_drop_not_at_an_isolated_stall():
    iops = np.r_[np.full(400, 80_000.0), np.full(600, 9_000.0)]
    iops[200] = 0  # a stall during fresh-out-of-box is not the cliff
    iops[410] = 70_000  # one burst after the cliff does not hide it
    c = spare_area_cliff(iops)
    assert c.reference_iops == 80_000
    assert c.threshold_iops == 40_000
    # the level after the cliff is the mean of its seconds: the burst second is in it
    assert c.final_iops is not None and abs(c.final_iops - 9_000) / 9_000 < 0.02
    assert c.at_s == 400 and c.plateau_s == 400


def test_cliff_none_when_no_drop_or_too_short():
    assert spare_area_cliff(np.full(1000, 5000.0)).at_s is None
    assert spare_area_cliff(np.full(59, 5000.0)).reference_iops is None
    assert spare_area_cliff(np.zeros(100)).at_s is None
    # a drop that lasts 20 s only is not sustained
    iops = np.full(300, 100.0)
    iops[100:120] = 10.0
    assert spare_area_cliff(iops).at_s is None
    # a fall in the last 10 s is too soon to tell from a throttle: a late fall, named
    iops = np.full(300, 100.0)
    iops[291:] = 10.0
    assert spare_area_cliff(iops).at_s is None
    assert [e.kind for e in find_events(iops).events] == ["late-fall"]


def test_a_noisy_consumer_drive_falls_off_in_its_second_second():
    """iops.csv of the simulated consumer drive (block-layer series, CI pre-check
    2026-11-23): 3010 IOPS in second 0, the model garbage-collected from second 0, then a
    noisy steady state whose GC bursts put 4 of each 30 s above half the 3-s reference;
    the 90% rule put the cliff at 7, the model's is 0."""
    iops = np.array([3010, 635, 320, 369, 79, 36, 669, 0, 0, 767, 512, 383, 448, 258, 509,
                     322, 191, 578, 317, 0, 707, 253, 0, 768, 449, 328, 312, 448, 128, 446,
                     514, 386, 320, 127, 0, 0, 57, 1351, 577, 382, 0, 641, 382, 396, 374,
                     384, 0, 0, 865, 287, 576, 383, 383, 326, 188, 525, 370, 257, 445, 260],
                    dtype=float)
    c = spare_area_cliff(iops)
    assert c.plateau_s == 1 and c.at_s == 1 and c.reference_iops == 3010, c


def test_analyse_iops_empty_series_is_a_clear_result():
    a = analyse_iops(np.empty(0))
    assert a.duration_s == 0
    assert a.whole.mean is None and a.steady.mean is None
    assert a.stalls.zero_seconds == 0 and a.stalls.longest_zero_run_s == 0
    assert not a.steady_state.reached and a.cliff.at_s is None
    d = a.to_dict()
    assert d["steady_state"]["rounds"] == []


def test_analyse_iops_rejects_a_negative_steady_start():
    with pytest.raises(ValueError, match="steady_start_s"):
        analyse_iops(np.ones(10), steady_start_s=-1)


def test_to_dict_is_json_serialisable():
    import json

    iops = np.r_[np.full(300, 50_000.0), np.full(1700, 5_000.0)]
    d = analyse_iops(iops).to_dict()
    text = json.dumps(d)
    assert json.loads(text)["cliff"]["at_s"] == 300


def test_steady_window_start_of_a_trim_run_is_70_percent_of_its_torture():
    # run.json records params.steady_start_s from torture_seconds (1400 of the 2000-s
    # consistency torture); the TRIM run's 3600-s torture took it too: its window started
    # at 1400, not at 70% (2520) as docs/analysis.md says
    params = {"torture_seconds": 2000, "trim_torture_seconds": 3600, "steady_start_s": 1400}
    assert steady_window_start(params, "trim", 3600) == 2520
    assert steady_window_start(params, "consistency", 2000) == 1400
    # a consistency run: the recorded start when it lies inside the run, else the default
    assert steady_window_start({"torture_seconds": 600, "steady_start_s": 100},
                               "consistency", 600) == 100
    assert steady_window_start({"torture_seconds": 600, "steady_start_s": 900},
                               "consistency", 600) == 420
    # nothing recorded: the rows of iops.csv
    assert steady_window_start({}, "consistency", 1000) == 700
    assert steady_window_start({}, "trim", 2000) == 1400
    # a WSAT run ends at its byte goal: 70% of what it ran, whatever torture_seconds says
    assert steady_window_start(params, "wsat", 58) == pytest.approx(40.6)
    assert steady_window_start(params, "hir", 58) == pytest.approx(40.6)
