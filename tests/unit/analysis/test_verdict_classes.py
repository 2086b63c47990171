"""The verdict classes of #30: per-second shapes that published consistency plots show, each
with the verdict a careful reviewer would sign. Three shapes or more per class (different
levels, durations and noise, seeded); every test here failed on the rule before 2026-11-27
(the levels-and-events analysis, docs/analysis.md "Levels and events")."""

from __future__ import annotations

import numpy as np
import numpy.typing as npt
import pytest

from ssdbench.analysis import analyse_iops, fill_stats, trim_verdict

Series = npt.NDArray[np.float64]


def noisy(level: float, seconds: int, rel_sd: float, seed: int) -> Series:
    rng = np.random.default_rng(seed)
    return np.clip(rng.normal(level, rel_sd * level, seconds), 0, None)


# 1. A fall the drive recovers from is not the cliff -------------------------------------

@pytest.mark.parametrize(("level", "start", "seconds", "sd", "seed"), [
    (30_000, 1000, 31, 0.05, 1), (12_000, 400, 12, 0.03, 2), (80_000, 1500, 55, 0.08, 3)])
def test_a_stall_is_a_stall_not_the_cliff(level: float, start: int, seconds: int, sd: float,
                                          seed: int) -> None:
    iops = noisy(level, 2000, sd, seed)
    iops[start:start + seconds] = 0
    a = analyse_iops(iops)
    assert a.cliff.at_s is None, a.cliff
    assert a.steady_state.reached and a.steady_state.at_s == 300
    assert a.events is not None
    (stall,) = a.events.of("stall")
    assert (stall.at_s, stall.duration_s) == (start, seconds)


@pytest.mark.parametrize(("level", "depth", "start", "seconds", "seed"), [
    (30_000, 0.3, 1000, 90, 4), (50_000, 0.45, 600, 40, 5), (8_000, 0.2, 1300, 200, 6)])
def test_a_thermal_throttle_is_a_throttle_not_the_cliff(level: float, depth: float,
                                                        start: int, seconds: int,
                                                        seed: int) -> None:
    iops = noisy(level, 2000, 0.05, seed)
    iops[start:start + seconds] *= depth
    a = analyse_iops(iops)
    assert a.cliff.at_s is None, a.cliff
    assert a.events is not None
    (thr,) = a.events.of("throttle")
    assert abs(thr.at_s - start) <= 2 and abs(thr.duration_s - seconds) <= 3
    assert thr.depth is not None and abs(thr.depth - depth) < 0.05


@pytest.mark.parametrize(("period", "seconds", "depth", "seed"), [
    (300, 60, 0.4, 7), (200, 30, 0.3, 8), (450, 90, 0.5, 9)])
def test_a_throttle_every_few_minutes_is_counted_not_the_cliff(period: int, seconds: int,
                                                               depth: float, seed: int) -> None:
    iops = noisy(30_000, 2000, 0.05, seed)
    starts = list(range(period, 2000 - seconds - 30, period))
    for t in starts:
        iops[t:t + seconds] *= depth
    a = analyse_iops(iops)
    assert a.cliff.at_s is None, a.cliff
    assert a.events is not None
    assert [abs(e.at_s - t) <= 2 for e, t in zip(a.events.of("throttle"), starts,
                                                  strict=True)] == [True] * len(starts)


@pytest.mark.parametrize(("plateau", "stall_at", "cliff_at", "seed"), [
    (40_000, 400, 600, 10), (25_000, 150, 900, 11), (60_000, 1000, 1200, 12)])
def test_a_stall_before_the_real_cliff_leaves_the_cliff_where_it_is(
        plateau: float, stall_at: int, cliff_at: int, seed: int) -> None:
    iops = np.r_[noisy(plateau, cliff_at, 0.04, seed),
                 noisy(plateau / 7, 2000 - cliff_at, 0.08, seed + 1)]
    iops[stall_at:stall_at + 40] = 0
    a = analyse_iops(iops)
    assert a.cliff.at_s is not None and abs(a.cliff.at_s - cliff_at) <= 2, a.cliff
    assert a.cliff.reference_iops is not None
    assert abs(a.cliff.reference_iops / plateau - 1) < 0.03


# 2. A short fresh-out-of-box plateau: placed where it is, at its level, at any run length --

@pytest.mark.parametrize(("plateau_s", "fob", "after", "sd", "seed"), [
    (30, 40_000, 4_000, 0.05, 13), (10, 25_000, 3_000, 0.08, 14),
    (45, 90_000, 9_000, 0.03, 15), (20, 12_000, 2_500, 0.10, 16)])
def test_a_short_plateau_is_found_at_its_end_and_level_in_every_run_length(
        plateau_s: int, fob: float, after: float, sd: float, seed: int) -> None:
    drive = np.r_[noisy(fob, plateau_s, sd, seed), noisy(after, 2000, sd, seed + 1)]
    found = []
    for run in (60, 120, 2000):
        cliff = analyse_iops(drive[:run]).cliff
        assert cliff.at_s is not None, (run, cliff)
        assert cliff.reference_iops is not None
        assert abs(cliff.reference_iops / fob - 1) < 0.05, (run, cliff)
        found.append(cliff.at_s)
    assert max(found) - min(found) <= 2 and abs(found[0] - plateau_s) <= 2, found


# 3. A dip in the last minutes does not cancel steady state --------------------------------

@pytest.mark.parametrize(("level", "dip", "seconds", "seed"), [
    (8_000, 0.6, 150, 17), (20_000, 0.7, 240, 18), (5_000, 0.55, 90, 19)])
def test_a_dip_in_the_last_minutes_keeps_steady_state_and_is_named(
        level: float, dip: float, seconds: int, seed: int) -> None:
    iops = np.r_[noisy(4 * level, 100, 0.03, seed),
                 noisy(level, 1900 - seconds, 0.05, seed + 1),
                 noisy(level * dip, seconds, 0.05, seed + 2)]
    a = analyse_iops(iops)
    assert a.cliff.at_s is not None and abs(a.cliff.at_s - 100) <= 2
    ss = a.steady_state
    assert ss.reached and ss.window_mean is not None, ss
    assert abs(ss.window_mean / level - 1) < 0.05
    assert a.events is not None
    (late,) = a.events.of("late-fall")
    assert abs(late.at_s - (2000 - seconds)) <= 2


# 4. The headline is of one level ----------------------------------------------------------

@pytest.mark.parametrize(("plateau", "after", "cliff_at", "seed"), [
    (50_000, 8_000, 1700, 20), (30_000, 3_000, 1500, 21), (90_000, 20_000, 1650, 22)])
def test_a_cliff_inside_the_steady_window_moves_the_window_to_one_level(
        plateau: float, after: float, cliff_at: int, seed: int) -> None:
    iops = np.r_[noisy(plateau, cliff_at, 0.03, seed),
                 noisy(after, 2000 - cliff_at, 0.05, seed + 1)]
    a = analyse_iops(iops, 1400)
    assert a.cliff.at_s is not None and abs(a.cliff.at_s - cliff_at) <= 2
    assert a.steady_start_s == a.cliff.at_s and a.planned_steady_start_s == 1400
    assert a.steady.mean is not None and abs(a.steady.mean / after - 1) < 0.03
    assert a.steady.stddev is not None and a.steady.stddev < 0.1 * after
    assert any("steady window starts at the cliff" in n for n in a.notes)


# 5. Fill: the SLC cache at per-second resolution; stalls, throttles, oscillations named ----

@pytest.mark.parametrize(("cache_s", "fast", "slow", "seed"), [
    (16, 3000, 1000, 23), (6, 520, 300, 24), (10, 1800, 450, 25), (25, 2400, 700, 26)])
def test_the_slc_cache_end_is_found_within_two_seconds(cache_s: int, fast: float,
                                                      slow: float, seed: int) -> None:
    rate = np.r_[noisy(fast, cache_s, 0.03, seed), noisy(slow, 600, 0.05, seed + 1)]
    gib = np.cumsum(rate) / 1024
    f = fill_stats(rate, gib)
    assert f.cliff_at_s is not None and abs(f.cliff_at_s - cache_s) <= 2, f
    assert f.cliff_gib is not None
    assert abs(f.cliff_gib - fast * cache_s / 1024) <= 2 * fast / 1024


@pytest.mark.parametrize("shape", ["stall", "throttle", "oscillation"])
@pytest.mark.parametrize("seed", [27, 28, 29])
def test_a_fill_stall_throttle_or_oscillation_is_not_an_slc_cliff(shape: str,
                                                                 seed: int) -> None:
    rate = noisy(500, 1200, 0.04, seed)
    if shape == "stall":
        rate[400:580] = 0  # 3 min at zero
    elif shape == "throttle":
        rate[300:390] *= 0.4
    else:
        for t in range(0, 1200, 120):
            rate[t + 60:t + 120] *= 0.6  # 500 / 300 MiB/s, a minute each
    f = fill_stats(rate, np.cumsum(rate) / 1024)
    assert f.cliff_at_s is None, f
    words = {"stall": "stall", "throttle": "throttle", "oscillation": "oscillates"}
    assert any(words[shape] in n for n in f.notes), f.notes


# 6 and 7. TRIM: the noise margin, and odd probe sets named ---------------------------------

def probes(means: tuple[float, float, float], seconds: int, sd: float,
           rng: np.random.Generator) -> dict[str, Series]:
    return {ph: m * rng.normal(1.0, sd, seconds)
            for ph, m in zip(("clean", "after_torture", "after_trim"), means, strict=True)}


def verdict_of(series: dict[str, Series]) -> str:
    return trim_verdict(*(float(series[ph].mean()) for ph in
                          ("clean", "after_torture", "after_trim")), series=series).verdict


@pytest.mark.parametrize(("means", "seconds", "expected"), [
    ((500, 450, 475), 10, "inconclusive"),  # on both lines: within the noise
    ((500, 250, 500), 60, "effective"),
    ((315.1, 183.3, 193.3), 8, "ineffective"),
    ((2000, 900, 1600), 60, "partial"),
])
def test_reruns_of_one_drive_get_one_trim_verdict(means: tuple[float, float, float],
                                                  seconds: int, expected: str) -> None:
    rng = np.random.default_rng(30)
    verdicts = [verdict_of(probes(means, seconds, 0.05, rng)) for _ in range(1000)]
    share = verdicts.count(expected) / len(verdicts)
    assert share >= 0.95, (means, {v: verdicts.count(v) for v in set(verdicts)})


@pytest.mark.parametrize(("rows", "seconds", "block"), [
    ([16.0, 0.0, 16.0], 2.4, 16 * 2**20),  # one 16-MiB write a second: lumps, not noise
    ([500.0, 260.0], 1.5, None),  # 1.5 s: one whole second
    ([480.0, 510.0, 495.0, 100.0], 3.2, 2**20),  # 3 whole seconds of 500 1-MiB blocks
])
def test_probes_too_short_or_too_coarse_get_no_margin_and_say_why(
        rows: list[float], seconds: float, block: int | None) -> None:
    series = {ph: np.array(rows) for ph in ("clean", "after_torture", "after_trim")}
    v = trim_verdict(500, 250, 495, series=series, block_bytes=block,
                     seconds=dict.fromkeys(series, seconds))
    if len(rows) == 4:  # measurable: the partial last second (100) is left out
        assert v.recovery_interval is not None and v.noise is not None
        assert all(n.seconds == 3 for n in v.noise.values())
    else:
        assert v.recovery_interval is None and "no noise margin" in v.reason
        assert v.verdict == "effective"  # on the means, as before the margin


def test_a_ratio_within_the_noise_says_so_with_its_margin() -> None:
    rng = np.random.default_rng(31)
    v = trim_verdict(500, 450, 475, series=probes((500, 450, 475), 10, 0.05, rng))
    assert v.verdict == "inconclusive" and "within the probes' noise" in v.reason
    assert v.degradation_interval is not None
    lo, hi = v.degradation_interval
    assert lo < 0.9 < hi


@pytest.mark.parametrize(("clean", "after", "trim"), [
    (100, 95, 300), (150, 140, 400), (200, 120, 520)])
def test_a_clean_probe_slower_than_after_trim_is_suspect(clean: float, after: float,
                                                         trim: float) -> None:
    v = trim_verdict(clean, after, trim)
    assert v.verdict == "inconclusive" and "suspect" in v.reason
    assert any("clean probe slower" in x for x in v.anomalies)


@pytest.mark.parametrize(("clean", "after", "trim"), [
    (500, 200, 80), (300, 150, 100), (1000, 400, 250)])
def test_after_trim_slower_than_after_the_torture_is_named(clean: float, after: float,
                                                           trim: float) -> None:
    v = trim_verdict(clean, after, trim)
    assert v.verdict == "ineffective" and "-" not in f"{v.reason.split('TRIM won')[0]}"
    assert "slower than after the torture" in v.reason
    assert any("after TRIM slower" in x for x in v.anomalies)


@pytest.mark.parametrize("probe", [(500, 250, 0), (0, 250, 400), (500, 0, 400),
                                   (500, -3, 400), (-1, 250, 400), (500, 250, -20)])
def test_a_zero_or_negative_probe_is_incomplete(probe: tuple[float, float, float]) -> None:
    v = trim_verdict(*probe)
    assert v.verdict == "incomplete" and v.anomalies


@pytest.mark.parametrize(("stall_s", "seed"), [(6, 32), (3, 33), (12, 34)])
def test_a_probe_that_stalls_names_its_stall(stall_s: int, seed: int) -> None:
    rng = np.random.default_rng(seed)
    series = probes((500, 250, 500), 30, 0.03, rng)
    series["after_trim"][:stall_s] = 0
    v = trim_verdict(*(float(series[ph].mean()) for ph in
                       ("clean", "after_torture", "after_trim")), series=series)
    assert f"stalled {stall_s} s" in v.reason, v.reason
    assert v.noise is not None and v.noise["after_trim"].stall_seconds == stall_s


# 8. Gradual and two-step falls -----------------------------------------------------------

@pytest.mark.parametrize(("levels", "steps_at", "seed"), [
    ((80_000, 24_000, 6_000), (500, 1000), 35), ((50_000, 20_000, 5_000), (300, 1200), 36),
    ((30_000, 12_000, 2_500), (800, 1100), 37)])
def test_a_two_step_fall_has_its_cliff_at_the_last_step_from_its_own_plateau(
        levels: tuple[float, float, float], steps_at: tuple[int, int], seed: int) -> None:
    a_, b_ = steps_at
    iops = np.r_[noisy(levels[0], a_, 0.03, seed), noisy(levels[1], b_ - a_, 0.05, seed + 1),
                 noisy(levels[2], 2000 - b_, 0.05, seed + 2)]
    a = analyse_iops(iops)
    assert a.cliff.at_s is not None and abs(a.cliff.at_s - b_) <= 2, a.cliff
    assert a.cliff.reference_iops is not None
    assert abs(a.cliff.reference_iops / levels[1] - 1) < 0.05  # not the first plateau
    assert a.events is not None
    (step,) = a.events.of("step")
    assert abs(step.at_s - a_) <= 2


@pytest.mark.parametrize(("levels", "steps_at", "n", "seed"), [
    # the demo's consumer drive at 25% OP: 980 -> 703 at 9 s -> 443 at 23 s (72%, then 63%)
    ((980, 703, 443), (9, 23), 240, 44), ((50_000, 34_000, 21_000), (300, 700), 2000, 45),
    ((12_000, 9_000, 5_200), (120, 150), 600, 46)])
def test_falls_in_a_row_that_together_go_below_half_are_the_cliff_at_the_first(
        levels: tuple[float, float, float], steps_at: tuple[int, int], n: int,
        seed: int) -> None:
    """No single fall goes below half, the chain does: a reviewer calls the first fall the
    cliff (it had been two "steps" and no cliff: make demo, 2026-11-27)."""
    a_, b_ = steps_at
    iops = np.r_[noisy(levels[0], a_, 0.03, seed), noisy(levels[1], b_ - a_, 0.04, seed + 1),
                 noisy(levels[2], n - b_, 0.04, seed + 2)]
    a = analyse_iops(iops)
    assert a.cliff.at_s is not None and abs(a.cliff.at_s - a_) <= 2, (a.cliff, a.events)
    assert a.cliff.reference_iops is not None
    assert abs(a.cliff.reference_iops / levels[0] - 1) < 0.05  # the first plateau
    assert a.events is not None
    (step,) = a.events.of("step")  # the second fall is named, not hidden
    assert abs(step.at_s - b_) <= 2


def test_falls_in_a_row_that_stay_above_half_are_steps_not_a_cliff() -> None:
    iops = np.r_[noisy(10_000, 400, 0.03, 47), noisy(7_800, 400, 0.03, 48),
                 noisy(6_100, 1200, 0.03, 49)]  # 78%, then 78%: 61% in all
    a = analyse_iops(iops)
    assert a.cliff.at_s is None, a.cliff
    assert a.events is not None and len(a.events.of("step")) == 2


@pytest.mark.parametrize(("top", "bottom", "tau", "seed"), [
    (80_000, 6_000, 400, 38), (40_000, 5_000, 700, 39), (20_000, 4_000, 250, 40)])
def test_a_smooth_decay_is_a_decline_not_a_cliff(top: float, bottom: float, tau: float,
                                                 seed: int) -> None:
    t = np.arange(2000)
    iops = (bottom + (top - bottom) * np.exp(-t / tau)) * noisy(1, 2000, 0.05, seed)
    a = analyse_iops(iops)
    assert a.cliff.at_s is None, a.cliff
    assert a.events is not None and a.events.of("decline")


# 9. Gaps and bad values are named, never switch a check off --------------------------------

@pytest.mark.parametrize(("gaps", "seed"), [("every-minute", 41), ("one-after", 42),
                                            ("burst", 43)])
def test_missing_seconds_are_named_and_keep_the_checks(gaps: str, seed: int) -> None:
    clean = np.r_[noisy(40_000, 600, 0.03, seed), noisy(6_000, 1400, 0.05, seed + 1)]
    iops = clean.copy()
    if gaps == "every-minute":
        iops[::60] = np.nan
    elif gaps == "one-after":
        iops[700] = np.nan
    else:
        iops[1000:1020] = np.nan
    a, b = analyse_iops(iops), analyse_iops(clean)
    assert a.cliff.at_s == b.cliff.at_s == 600
    assert a.steady_state.at_s == b.steady_state.at_s and a.steady_state.reached
    assert a.missing_seconds == int(np.isnan(iops).sum())
    assert any("have no value" in n for n in a.notes)


@pytest.mark.parametrize("bad", [-5.0, -1e9, np.inf])
def test_negative_or_infinite_values_are_invalid_data_not_averaged(bad: float) -> None:
    iops = np.r_[noisy(40_000, 600, 0.03, 44), noisy(6_000, 1400, 0.05, 45)]
    iops[900:905] = bad
    a = analyse_iops(iops)
    assert a.invalid_seconds == 5 and any("invalid" in n for n in a.notes)
    assert a.whole.min is not None and a.whole.min >= 0
    assert a.cliff.at_s == 600
