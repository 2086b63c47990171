"""Fill throughput (SLC-cache cliff) and the latency summary."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest

from ssdbench.analysis import fill_stats, latency_summary
from ssdbench.analysis.latency import LatencyHistogram, pooled_percentiles
from ssdbench.fio.logs import hist_counts, load_hist_log

DATA = Path(__file__).resolve().parents[2] / "data"


def _fill(rates: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    return rates, np.cumsum(rates) / 1024


def test_fill_cliff_at_the_end_of_the_slc_cache():
    rates = np.r_[np.full(40, 2048.0), np.full(400, 512.0)]  # 80 GiB cache, then 512 MiB/s
    rates[100] = 2000.0  # a burst after the cliff does not move it
    f = fill_stats(*_fill(rates))
    assert f.reference_mib_s == 2048
    assert f.cliff_at_s == 40
    assert f.cliff_gib == pytest.approx(80.0)
    assert f.before_cliff_mib_s == 2048
    assert f.after_cliff_mib_s == pytest.approx((399 * 512 + 2000 - 512 + 512) / 400)
    assert f.mean_mib_s == pytest.approx(rates.mean())
    assert f.gib_written == pytest.approx(rates.sum() / 1024)


def test_fill_without_cliff_and_with_a_short_dip():
    rates = np.full(600, 500.0)
    rates[300:310] = 100.0  # 10 s dip: not sustained (30 s window, 90% below)
    f = fill_stats(*_fill(rates))
    assert f.cliff_at_s is None and f.cliff_gib is None
    assert f.min_mib_s == 100 and f.max_mib_s == 500


def test_fill_short_and_empty():
    f = fill_stats(*_fill(np.array([300.0])))  # a 50 MiB loop device: one second
    assert f.seconds == 1 and f.mean_mib_s == 300 and f.cliff_at_s is None
    e = fill_stats(np.empty(0), np.empty(0))
    assert e.seconds == 0 and e.mean_mib_s is None and e.gib_written is None
    with pytest.raises(ValueError, match="length"):
        fill_stats(np.ones(3), np.ones(2))


def test_fill_cliff_on_a_short_fill_scales_its_windows():
    rates = np.r_[np.full(20, 1000.0), np.full(60, 300.0)]  # 80 s: reference 20 s, sustain 4 s
    assert fill_stats(*_fill(rates)).cliff_at_s == 20


def test_latency_summary_weights_the_mean_by_iops_and_skips_stall_seconds():
    iops = np.array([1000.0, 3000.0, 0.0, 2000.0])
    mean = np.array([100.0, 200.0, math.nan, 300.0])
    p99 = np.array([400.0, 900.0, math.nan, 500.0])
    p9999 = np.array([1000.0, 5000.0, math.nan, 2000.0])
    mx = np.array([2000.0, 9000.0, math.nan, 3000.0])
    lat = latency_summary(iops, mean, p99, p9999, mx)
    assert lat.seconds == 3
    assert lat.mean_us == pytest.approx((1000 * 100 + 3000 * 200 + 2000 * 300) / 6000)
    assert lat.p99_median_us == 500
    assert lat.p99_worst_us == 900
    assert lat.p9999_worst_us == 5000
    assert lat.max_us == 9000


def test_latency_summary_without_values():
    n = np.full(3, math.nan)
    lat = latency_summary(np.zeros(3), n, n, n, n)
    assert lat.seconds == 0 and lat.mean_us is None and lat.max_us is None
    with pytest.raises(ValueError):
        latency_summary(np.zeros(3), np.zeros(2), np.zeros(3), n, n)


def test_latency_percentiles_of_a_window_are_pooled_from_the_summed_histograms():
    # second 0: 1000 I/Os at ~100 µs; second 1: 10 I/Os at ~10 ms. The median of the
    # per-second p99s is 5,050 µs, a latency no I/O had; pooled, 99% of the 1,010 I/Os
    # took ~100 µs, and the p99.99 is the slow second's
    bin_us = np.array([100.0, 10_000.0])
    hist = LatencyHistogram(np.array([0, 1]), np.array([0, 1]), np.array([1000.0, 10.0]),
                            bin_us)
    iops = np.array([1000.0, 10.0])
    nan = np.full(2, math.nan)
    lat = latency_summary(iops, nan, np.array([100.0, 10_000.0]), nan, nan, hist=hist)
    assert lat.p99_median_us == 5050  # kept: what report.html read until 2026-11-25
    assert lat.p99_pooled_us == 100 and lat.p9999_pooled_us == 10_000
    # the steady window from second 1: only the slow second
    steady = latency_summary(iops[1:], nan[1:], nan[1:], nan[1:], nan[1:], hist=hist,
                             hist_from_s=1)
    assert steady.p99_pooled_us == 10_000
    # without a histogram log: no pooled values, not zeros
    assert latency_summary(iops, nan, nan, nan, nan).p99_pooled_us is None


def test_pooled_percentiles_on_a_real_fio_histogram_log():
    # the real 3-s torture's clat histogram log: the pooled p99 is the bin where the
    # summed counts of its rows reach 99%, computed here from the dense table
    path = DATA / "fio" / "torture-3s" / "fio" / "torture_clat_hist.1.log"
    log = load_hist_log(path)
    seconds, bins, counts, mid_us = hist_counts(log, 1, 3)
    hist = LatencyHistogram(seconds, bins, counts, mid_us)
    dense = np.loadtxt(path, delimiter=",")
    rows = dense[(dense[:, 1] == 1)][:, 3:]
    summed = rows[: len(np.unique(seconds))].sum(axis=0)
    cum = np.cumsum(summed)
    want = mid_us[np.searchsorted(cum, 0.99 * cum[-1] - 1e-9)]
    assert pooled_percentiles(hist, (99.0,)) == (want,)
    assert hist.total() == summed.sum() > 0


def test_the_report_pools_the_torture_histogram_log(tmp_path: Path):
    # a run folder holding the real 3-s torture's fio logs: the whole-run latency carries
    # the p99 pooled from its histogram log (the report reads it from run.json "analysis")
    import shutil

    from ssdbench.report import analyse_run

    run_dir = tmp_path / "consistency-default"
    shutil.copytree(DATA / "fio" / "torture-3s" / "fio", run_dir / "fio")
    (run_dir / "run.json").write_text('{"kind": "consistency", "state": "done"}')
    a = analyse_run(run_dir)
    assert a.latency is not None and a.iops is not None
    log = load_hist_log(run_dir / "fio" / "torture_clat_hist.1.log")
    hist = LatencyHistogram(*hist_counts(log, 1, a.iops.duration_s))
    assert a.latency.p99_pooled_us == pooled_percentiles(hist, (99.0,))[0] is not None
    assert a.to_dict()["latency"]["p99_pooled_us"] == a.latency.p99_pooled_us
