"""Steady state and cliffs on shapes real drives have (#20 item 1, #24 item 4): a level the
drive later leaves (a 40% drop, a bimodal tail), a start-up burst, a recovery burst, and
runs too short for the checks. Each case was reproduced on the rule before 2026-11-25 (the
comments say what it answered); the series are synthetic with seeded noise."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ssdbench.analysis import analyse_iops, fill_stats, snia_steady_state, spare_area_cliff

Series = npt.NDArray[np.float64]


def noisy(level: float, seconds: int, rel_sd: float, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(level, rel_sd * level, seconds), 0, None)


def bimodal(low: float, high: float, seconds: int, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    return np.where(rng.random(seconds) < 0.5, low, high) * rng.normal(1, 0.03, seconds)


def test_a_plateau_the_drive_leaves_by_40_percent_is_not_steady() -> None:
    # 50K for 800 s then 30K: no cliff (a 40% drop is not below half), but the old search
    # from 0 called the plateau steady at 300 s (window mean 49,846)
    iops = np.r_[noisy(50_000, 800, 0.02, 1), noisy(30_000, 600, 0.02, 2)]
    a = analyse_iops(iops, 980)
    assert a.cliff.at_s is None
    ss = a.steady_state
    assert ss.reached and ss.at_s is not None and ss.at_s > 800, ss
    assert 29_000 < ss.window_mean < 31_000  # type: ignore[operator]
    assert ss.final_iops is not None and 29_000 < ss.final_iops < 31_000
    # the literal SNIA rule cannot look ahead: its answer is kept, labelled as such
    assert ss.snia_literal is not None and ss.snia_literal.at_s == 300
    assert 49_000 < ss.snia_literal.window_mean < 51_000
    assert ss.to_dict()["snia_literal"]["at_s"] == 300


def test_a_bimodal_tail_after_the_plateau_is_the_cliff_and_the_steady_state() -> None:
    # 50K for 800 s then seconds of 4K or 35K: half the seconds stay above half the
    # plateau, so the share-of-seconds rule found no cliff and SNIA was steady at 300 s on 50K
    iops = np.r_[noisy(50_000, 800, 0.02, 3), bimodal(4_000, 35_000, 1200, 4)]
    a = analyse_iops(iops)
    assert a.cliff.at_s is not None and 800 <= a.cliff.at_s <= 805, a.cliff
    ss = a.steady_state
    assert ss.reached and ss.at_s is not None and ss.at_s >= 1140
    assert 15_000 < ss.window_mean < 25_000  # type: ignore[operator]


def test_a_startup_burst_is_not_the_cliff_nor_the_plateau_steady() -> None:
    # 90 s at 120K, 50K to 800 s, then 8K: the old rule put the cliff at 90 s (the burst's
    # end) and steady state at 420 s on the 50K plateau
    iops = np.r_[noisy(120_000, 90, 0.02, 5), noisy(50_000, 710, 0.02, 6),
                 noisy(8_000, 1200, 0.05, 7)]
    a = analyse_iops(iops)
    assert a.cliff.at_s == 800, a.cliff
    ss = a.steady_state
    assert ss.reached and ss.at_s is not None and ss.at_s > 800
    assert 7_500 < ss.window_mean < 8_500  # type: ignore[operator]


def test_a_recovery_burst_late_in_the_run_does_not_move_the_cliff() -> None:
    # 40K to 600 s, 5K after, a 70-s recovery burst at 1500 s: the burst was the plateau,
    # so the old search for the cliff started there and found it at 1570 s
    iops = np.r_[noisy(40_000, 600, 0.02, 8), noisy(5_000, 900, 0.05, 9),
                 noisy(60_000, 70, 0.02, 10), noisy(5_000, 430, 0.05, 11)]
    a = analyse_iops(iops)
    assert a.cliff.at_s == 600, a.cliff
    assert 39_000 < a.cliff.reference_iops < 41_000  # type: ignore[operator]
    assert a.steady_state.reached and a.steady_state.first_round is not None
    assert 10 <= a.steady_state.first_round <= 11


def test_the_slc_cache_cliff_after_a_slow_start() -> None:
    # 200 MiB/s for 40 s (the fill starting slow), 500 to 340 s, then 150: the reference
    # was the first 30 s (200, threshold 140), so the drop to 150 was no cliff
    rates = np.r_[noisy(200, 40, 0.02, 12), noisy(500, 300, 0.02, 13),
                  noisy(150, 400, 0.03, 14)]
    f = fill_stats(rates, np.cumsum(rates) / 1024)
    assert f.cliff_at_s == 340, f
    assert f.reference_mib_s is not None and 490 < f.reference_mib_s < 510
    assert f.before_cliff_mib_s is not None and f.after_cliff_mib_s is not None
    assert 145 < f.after_cliff_mib_s < 155


def test_a_30_second_torture_says_it_is_too_short() -> None:
    # #24 item 4: 3,000 -> 300 IOPS at 5 s; the report said "not found" / "not reached"
    iops = np.r_[np.full(5, 3000.0), noisy(300, 25, 0.1, 15)]
    a = analyse_iops(iops)
    assert a.cliff.at_s is None and a.cliff.note is not None
    assert "too short" in a.cliff.note and "30 s" in a.cliff.note
    ss = a.steady_state
    assert not ss.reached and ss.note is not None
    assert "too short" in ss.note and "30 s" in ss.note
    assert a.to_dict()["cliff"]["note"] == a.cliff.note
    assert a.to_dict()["steady_state"]["note"] == ss.note


def test_a_long_enough_run_has_no_note() -> None:
    iops = np.r_[noisy(50_000, 800, 0.02, 16), noisy(8_000, 1200, 0.05, 17)]
    a = analyse_iops(iops)
    assert a.cliff.at_s == 800 and a.cliff.note is None
    assert a.steady_state.reached and a.steady_state.note is None


def test_steady_search_after_the_cliff_too_short_says_so() -> None:
    # a cliff at 800 s in a 1000-s run: the search starts at 840 s, 2 rounds remain
    iops = np.r_[noisy(50_000, 800, 0.02, 18), noisy(8_000, 200, 0.05, 19)]
    a = analyse_iops(iops)
    assert a.cliff.at_s == 800
    ss = a.steady_state
    assert not ss.reached and ss.note is not None and "840 s" in ss.note
    assert ss.snia_literal is not None and ss.snia_literal.at_s == 300


def test_not_steady_on_the_level_left_names_the_final_level_check() -> None:
    # 50K for 840 s, then 26K and 38K a minute each: no window passes the range rule: the only flat window is
    # on the plateau the drive left; the note names the check that rejected it (#30 class 3)
    minutes = np.repeat(np.tile([26_000.0, 38_000.0], 5), 60)  # a minute each, 600 s
    iops = np.r_[noisy(50_000, 840, 0.02, 20), minutes * noisy(1, 600, 0.02, 21)]
    ss = analyse_iops(iops).steady_state
    assert not ss.reached and ss.note is not None, ss
    assert ss.note.startswith("final-level check:") and "left" in ss.note


def test_a_fall_in_the_last_minutes_is_named_and_keeps_steady_state() -> None:
    # 50K for 800 s then 30K for the last 280 s (#30 class 3): too short to be the drive's
    # level, so the steady state on 50K stands and the fall is a named event (before
    # 2026-11-27 the final-level check said "not reached")
    iops = np.r_[noisy(50_000, 800, 0.02, 20), noisy(30_000, 280, 0.02, 21)]
    a = analyse_iops(iops)
    assert a.steady_state.reached and a.steady_state.at_s == 300
    assert a.events is not None
    late = a.events.of("late-fall")
    assert len(late) == 1 and abs(late[0].at_s - 800) <= 1


def test_fill_too_short_says_so() -> None:
    f = fill_stats(np.array([300.0]), np.array([0.3]))
    assert f.cliff_at_s is None and f.note is not None and "too short" in f.note
    long = fill_stats(np.full(200, 300.0), np.cumsum(np.full(200, 300.0)) / 1024)
    assert long.cliff_at_s is None and long.note is None


def test_literal_rule_alone_is_unchanged() -> None:
    iops = np.r_[noisy(50_000, 800, 0.02, 22), noisy(30_000, 600, 0.02, 23)]
    assert snia_steady_state(iops).at_s == 300
    assert spare_area_cliff(iops).at_s is None
