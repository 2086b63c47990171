"""Scales that one second cannot move (#20 item 2): log decades from the bulk of the
seconds (0.5th to 99.5th percentile), what falls outside drawn on the edge and counted; the
linear top per run, the plan's ``chart_iops_top`` its floor."""

from __future__ import annotations

from typing import Any

import numpy as np

from ssdbench.report import charts as ch


def _series(n: int = 2000, lo: float = 1500.0, hi: float = 50_000.0) -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.uniform(lo, hi, n).round()


def _gid(fig: Any, gid: str) -> Any:
    found = [line for ax in fig.axes for line in ax.get_lines() if line.get_gid() == gid]
    return found[0] if found else None


def _legend(fig: Any) -> list[str]:
    return [t.get_text() for ax in fig.axes if (leg := ax.get_legend()) is not None
            for t in leg.get_texts()]


def test_one_fast_second_does_not_move_the_log_top():
    quiet = _series()
    spike = quiet.copy()
    spike[900] = 2_500_000.0
    assert ch.log_scale(spike) == ch.log_scale(quiet) == ch.LogScale(1000.0, 100_000.0)


def test_one_slow_second_does_not_move_the_log_floor():
    quiet = _series()
    slow = quiet.copy()
    slow[10] = 0.4  # interpolation next to a stall
    assert ch.log_scale(slow).floor == 1000.0


def test_a_shared_scale_still_holds_each_series_bulk():
    """A drive whose every second is fast is not cut by another drive's bulk."""
    slow, fast = _series(), _series(lo=200_000.0, hi=400_000.0)
    scale = ch.log_scale(slow, fast)
    assert scale.floor == 1000.0 and scale.top == 1_000_000.0


def test_a_short_series_keeps_its_extremes():
    """Under 20 seconds there is no bulk to speak of: every value is inside."""
    s = np.array([3.0, 40.0, 5000.0])
    assert ch.log_scale(s) == ch.LogScale(1.0, 10_000.0)


def test_log_headroom_is_x2_when_the_top_is_within_5_percent():
    s = np.full(100, 9_800.0)
    assert ch.log_scale(s).top == 10_000.0 * 10**0.3


def test_latency_keeps_every_second():
    """The latency chart is where the worst second is read: its scale is not trimmed."""
    cols = {"lat_max_us": np.r_[np.full(1999, 500.0), 2_000_000.0]}
    assert ch.latency_scale(cols).top >= 2_000_000.0


def test_seconds_outside_the_log_scale_are_drawn_on_its_edges():
    iops = _series()
    iops[900] = 2_500_000.0
    iops[10] = 0.4
    t = np.arange(iops.size, dtype=np.float64)
    figs = dict(ch.iops_figures(t, iops, title="x — consistency-default",
                                steady_start_s=1400, scale=ch.log_scale(iops)))
    full = figs["iops-full-log"]
    assert full.axes[0].get_ylim()[1] == 100_000.0
    above, below = _gid(full, "clip"), _gid(full, "below")
    assert list(above.get_ydata()) == [100_000.0] and list(above.get_xdata()) == [900.5]
    assert list(below.get_ydata()) == [1000.0] and list(below.get_xdata()) == [10.5]
    legend = _legend(full)
    assert "1 s above 100K (drawn on the top edge)" in legend
    assert "1 s below 1K (drawn on the bottom edge)" in legend
    points = _gid(full, "iops")
    assert np.nanmax(points.get_ydata()) <= 100_000.0
    assert np.nanmin(points.get_ydata()) >= 1000.0


def test_linear_top_per_run_the_plan_top_its_floor():
    rng = np.random.default_rng(3)
    default = rng.normal(20_000, 2_000, 600)
    op25 = rng.normal(44_000, 1_500, 600)
    op25[100] = 2_500_000.0
    assert ch.steady_linear_top(default, 40_000) == 40_000.0  # fits under the plan's top
    assert ch.steady_linear_top(op25, 40_000) == 50_000.0  # AnandTech: 50K at 25% OP
    assert ch.steady_linear_top(np.r_[op25, np.full(3, 9e6)], 40_000) == 50_000.0
    assert ch.steady_linear_top(np.full(600, 500.0), 1_500) == 1_500.0
    assert ch.steady_linear_top(np.empty(0), 40_000) == 40_000.0


def test_a_log_axis_has_its_decades_and_minor_marks_in_view_only():
    iops = _series()
    t = np.arange(iops.size, dtype=np.float64)
    scale = ch.log_scale(iops)  # 1K .. 100K, the zero band under it
    full = dict(ch.iops_figures(t, iops, title="x — consistency-default",
                                steady_start_s=1400, scale=scale))["iops-full-log"]
    ax = full.axes[0]
    full.canvas.draw()
    assert [round(v) for v in ax.yaxis.get_majorticklocs()] == [1_000, 10_000, 100_000]
    assert [t.get_text() for t in ax.get_yticklabels()] == ["1K", "10K", "100K"]
    # the minor marks: 2..9 of each decade in view (200..900 are below the floor's band
    # bottom of 1000/10^0.55 = 282: 300..900 only), as one line, no tick objects
    assert len(ax.yaxis.get_minorticklocs()) == 0
    marks = [round(v) for v in _gid(full, "minor-ticks").get_ydata()]
    assert marks == [*range(300, 1000, 100), *range(2_000, 10_000, 1_000),
                     *range(20_000, 100_000, 10_000)]
