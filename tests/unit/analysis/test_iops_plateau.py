"""Known answers for the cliff and SNIA steady state on drives with a fresh-out-of-box
plateau (docs/analysis.md "Spare-area cliff"): a long plateau then a drop (the seeds'
SanDisk example, ~800 s at 50K), a first minute that dips, a drive with no cliff, a small
7%-OP drive that falls off within seconds, and a start-up burst above the plateau.

The series are synthetic with seeded noise; the comments give the numbers that make each
case a real test (what the previous rule, the first minute's mean, got wrong)."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt

from ssdbench.analysis.iops import (
    analyse_iops,
    rolling_mean,
    snia_steady_state,
    spare_area_cliff,
)

Series = npt.NDArray[np.float64]


def noisy(level: float, seconds: int, rel_sd: float, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(level, rel_sd * level, seconds), 0, None)


def sandisk_like() -> Series:
    """800 s at 50K (3% noise), a 100-s post-cliff dip at 3K, then 8K (8% noise); 2000 s."""
    return np.concatenate([noisy(50_000, 800, 0.03, 1), noisy(3_000, 100, 0.30, 2),
                           noisy(8_000, 1100, 0.08, 3)])


def test_long_plateau_cliff_at_800_and_no_steady_state_on_the_plateau() -> None:
    a = analyse_iops(sandisk_like())
    assert a.cliff.at_s == 800
    assert a.cliff.plateau_s == 800 and a.cliff.threshold_iops is not None
    assert 49_000 < a.cliff.reference_iops < 51_500  # type: ignore[operator]
    # the plateau is flat: searched from the start, SNIA calls it steady at 300 s ...
    assert snia_steady_state(sandisk_like()).at_s == 300
    # ... so the search starts at the first full minute after the cliff (840 s): round 14
    # ([840, 900)) is still the post-cliff dip, rounds 15-19 are steady -> 20 * 60 s
    ss = a.steady_state
    assert ss.search_from_s == 840
    assert ss.reached and ss.first_round == 15 and ss.at_s == 1200
    assert 7_500 < ss.window_mean < 8_500  # type: ignore[operator]


def test_first_minute_dip_does_not_hide_the_cliff_or_become_it() -> None:
    # 50 s at 10K (the drive still busy after the fill), plateau 50K to 700 s, then 12K.
    # The old reference (first minute: 16.7K, threshold 8.3K) found no cliff at all; a
    # search from second 0 against the plateau would call the dip itself the cliff.
    iops = np.r_[noisy(10_000, 50, 0.05, 4), noisy(50_000, 650, 0.03, 5),
                 noisy(12_000, 1300, 0.08, 6)]
    c = spare_area_cliff(iops)
    assert c.at_s == 700
    assert c.reference_start_s is not None and c.reference_start_s >= 50
    assert 25_000 * 0.98 < c.threshold_iops < 25_000 * 1.03  # type: ignore[operator]
    ss = analyse_iops(iops).steady_state
    assert ss.reached and ss.search_from_s == 720 and ss.first_round is not None
    assert ss.first_round >= 12


def test_enterprise_drive_without_a_cliff_is_steady_from_the_start() -> None:
    iops = noisy(30_000, 2000, 0.02, 7)
    a = analyse_iops(iops)
    assert a.cliff.at_s is None and a.cliff.plateau_s == 2000
    assert a.steady_state.search_from_s == 0 and a.steady_state.at_s == 300


def test_seven_percent_op_drive_falls_off_within_seconds() -> None:
    # a small consumer drive (simulated-SSD personality b): 3 s at 4000 IOPS, then about
    # 526 +- 182 with stalls. Its best minute (~700) hides the 3-s plateau: the cliff comes
    # from the first minute's best 3-s mean.
    rng = np.random.default_rng(8)
    after = np.clip(rng.normal(526, 182, 597), 0, None)
    after[rng.choice(597, 60, replace=False)] = 0.0
    iops = np.r_[np.full(3, 4000.0), after]
    a = analyse_iops(iops)
    assert a.cliff.at_s == 3
    assert (a.cliff.plateau_s, a.cliff.reference_start_s) == (3, 0)
    assert a.cliff.reference_iops == 4000.0
    assert a.steady_state.search_from_s == 60
    assert a.steady_state.reached and a.steady_state.first_round == 1


def test_a_startup_burst_above_the_plateau_is_not_the_cliff() -> None:
    # 5 s at 150K (a write cache), the plateau at 50K to 800 s, then 5K: the best minute
    # (58K) makes the threshold 29K, so the cliff is the drop at 800 s, not the burst's end
    iops = np.r_[np.full(5, 150_000.0), noisy(50_000, 795, 0.03, 9),
                 noisy(5_000, 1200, 0.08, 10)]
    assert spare_area_cliff(iops).at_s == 800


def test_a_plateau_longer_than_the_run_has_no_cliff_and_is_called_steady() -> None:
    # documented limit: a run that ends before the cliff cannot tell the plateau from
    # steady state
    a = analyse_iops(noisy(50_000, 600, 0.03, 11))
    assert a.cliff.at_s is None and a.steady_state.at_s == 300


def test_rolling_mean_skips_windows_with_a_missing_second() -> None:
    values = np.array([1.0, 2.0, 3.0, np.nan, 5.0, 6.0])
    means = rolling_mean(values, 2)
    assert list(means[:2]) == [1.5, 2.5] and np.isnan(means[2]) and np.isnan(means[3])
    assert means[4] == 5.5
    assert rolling_mean(values, 7).size == 0
