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
