"""analysis/pts.py: the HIR view on series whose answers are known: bursts told apart by
seconds without writes, the first and a cut last burst left out, the recovery against the
level before the idle periods."""

from __future__ import annotations

import numpy as np
import pytest

from ssdbench.analysis.pts import bursts, hir_state
from ssdbench.stages.params import ParamError, RunParams, build_params, parse_waits


def _idle_period(first_s: int, burst: list[float], idle_s: int, count: int,
                 cut: list[float]) -> np.ndarray:
    """fio's shape: a first burst of ``first_s`` seconds at 1000, then ``count`` bursts (the
    per-second writes in ``burst``) each after ``idle_s`` zero seconds, then a cut one."""
    out = [1000.0] * first_s
    for _ in range(count):
        out += [0.0] * idle_s + burst
    out += [0.0] * idle_s + cut
    return np.asarray(out, dtype=float)


def test_bursts_are_runs_of_seconds_with_writes():
    assert bursts([0, 5, 5, 0, np.nan, 3, 0]) == [(1, 3), (5, 6)]
    # a write that completed late in an idle second (under 1% of the busiest) is no burst
    assert bursts([1000, 1000, 0.7, 0, 1000]) == [(0, 2), (4, 5)]
    assert bursts([]) == [] and bursts([0.0, 0.0]) == []


def test_a_state_counts_whole_bursts_after_the_first_against_the_baseline():
    # bursts of 5 s starting inside a second: 6 seconds, 700 + 4 x 1000 + 300 writes = 5000
    burst = [700.0, 1000.0, 1000.0, 1000.0, 1000.0, 300.0]
    idle = _idle_period(15, burst, 9, count=4, cut=[1000.0, 1000.0])
    st = hir_state(10, idle, np.full(20, 400.0), burst_s=5, baseline=500.0)
    assert st.bursts == 4  # the first (15 s) and the cut last (2 s) left out
    assert st.burst_iops == pytest.approx(1000.0)  # 4 x 5000 writes / (4 x 5 s)
    assert st.recovery == pytest.approx(2.0)
    assert st.base_iops == pytest.approx(400.0)
    assert st.vs_return == pytest.approx(2.5)
    assert st.to_dict()["wait_s"] == 10


def test_a_state_without_whole_bursts_or_baseline_says_none():
    st = hir_state(5, np.r_[np.full(10, 900.0), np.zeros(5), [300.0]], [np.nan],
                   burst_s=5, baseline=None)
    assert (st.bursts, st.burst_iops, st.recovery, st.base_iops) == (0, None, None, None)


def test_the_idle_periods_are_whole_seconds_told_apart():
    assert parse_waits("5, 10,15,25,50") == (5, 10, 15, 25, 50)
    assert RunParams().hir_wait_list == (5, 10, 15, 25, 50)
    assert build_params(sets=["hir_waits=2,30"]).hir_waits == "2,30"
    for bad in ("1,5", "5,5", "5,x", "", "5,10,15,20,25,30,35,40,45,50,55", "4000"):
        with pytest.raises(ParamError, match="hir_waits"):
            build_params(sets=[f"hir_waits={bad}"])
    with pytest.raises(ParamError, match="hir_repetitions"):
        build_params(sets=["hir_repetitions=0"])


# The shapes of #43: each failed on the rule before 2026-11-28 (the bursts were the runs of
# seconds above 1% of the busiest second, a burst shorter than burst_s was dropped)

def _bursts_with_stalls(count: int, stalled: set[int], level: float, burst_s: int,
                        idle_s: int, seed: int) -> tuple[np.ndarray, float]:
    """``count`` bursts of ``burst_s`` whole seconds after a 15-s first burst, each followed
    by ``idle_s`` zero seconds; the bursts in ``stalled`` have one zero second in their
    middle (the drive stalled). Returns the series and the true IOPS over all bursts."""
    rng = np.random.default_rng(seed)
    out = [level] * 15 + [0.0] * idle_s
    writes = 0.0
    for k in range(count):
        b = list(rng.normal(level, 0.03 * level, burst_s))
        if k in stalled:
            b[burst_s // 2] = 0.0
        writes += sum(b)
        out += b + [0.0] * idle_s
    return np.asarray(out), writes / (count * burst_s)


@pytest.mark.parametrize(("burst_s", "idle_s", "stalled", "seed"), [
    (5, 10, {3, 9, 14, 20, 27}, 1), (5, 50, {0, 29}, 2), (3, 5, {5, 6, 7, 8, 9, 10}, 3)])
def test_a_second_without_writes_inside_a_burst_does_not_drop_it(
        burst_s: int, idle_s: int, stalled: set[int], seed: int) -> None:
    """A zero second split a burst in two runs, both shorter than burst_s and dropped: 25 of
    30 bursts counted and the recovery 4-9% high. The PTS takes the IOPS over all bursts,
    stall seconds included, and ssdbench names them."""
    idle, truth = _bursts_with_stalls(30, stalled, 800.0, burst_s, idle_s, seed)
    st = hir_state(idle_s, idle, np.full(30, 500.0), burst_s=burst_s, baseline=500.0)
    assert st.bursts == 30, st
    assert st.burst_iops == pytest.approx(truth, rel=1e-9)
    assert st.recovery == pytest.approx(truth / 500.0, rel=1e-9)
    assert st.stall_seconds == len(stalled)
    assert st.note is not None and f"{len(stalled)} second(s) without writes" in st.note


def test_a_burst_the_drive_stalled_through_counts_at_no_writes() -> None:
    idle, _ = _bursts_with_stalls(10, set(), 800.0, 5, 10, 4)
    idle = idle.copy()
    fourth = 15 + 10 + 3 * 15  # the fourth measured burst's first second
    idle[fourth:fourth + 5] = 0.0
    st = hir_state(10, idle, [500.0], burst_s=5, baseline=500.0)
    assert st.bursts == 10 and st.stall_seconds == 5, st
    assert st.burst_iops == pytest.approx(idle[25:].sum() / 50)
    assert st.note is not None and "1 burst(s) stalled through" in st.note


@pytest.mark.parametrize(("peak", "wait_s"), [(125.0, 50), (150.0, 25), (300.0, 15)])
def test_the_burst_threshold_is_the_drives_baseline_not_its_busiest_second(
        peak: float, wait_s: int) -> None:
    """A drive whose SLC cache, refilled by a long idle, makes each burst's first second
    ``peak`` times its baseline: at 1% of the busiest second every other second was under
    the threshold, no burst lasted burst_s and the 50-s idle cell was blank."""
    base = 400.0
    burst = [peak * base] + [base] * 4
    idle = _idle_period(15, burst, wait_s, count=5, cut=[base])
    st = hir_state(wait_s, idle, np.full(20, base), burst_s=5, baseline=base)
    assert st.bursts == 5, st
    assert st.burst_iops == pytest.approx((peak + 4) * base / 5)
    assert st.recovery == pytest.approx((peak + 4) / 5)
    # without the WSAT's baseline, the return to it sets the threshold
    st2 = hir_state(wait_s, idle, np.full(20, base), burst_s=5, baseline=None)
    assert st2.bursts == 5 and st2.burst_iops == pytest.approx(st.burst_iops)
