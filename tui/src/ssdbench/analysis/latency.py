"""Latency summary of a torture stage from the per-second columns of iops.csv, and the
percentiles of a window pooled from fio's latency histogram log.

The per-second values (mean, p99, p99.99, max, in microseconds) come from fio's logs; this
module only summarises them (definitions in docs/analysis.md). A window's p99 is not a
statistic of per-second p99s: it is read from the histograms of its seconds summed
(:class:`LatencyHistogram`, built by the caller from ``ssdbench.fio.logs.hist_counts``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from ssdbench.analysis.iops import as_series

EPSILON = 1e-9  # a cumulative count equal to a percentile's target reaches it
POOLED_PERCENTILES = (99.0, 99.99)


@dataclass(frozen=True)
class LatencyHistogram:
    """A latency histogram log's non-zero counts: entry ``k`` is ``counts[k]`` I/Os that
    completed in second ``seconds[k]`` with a latency in bin ``bins[k]``; ``bin_us[b]`` is
    the latency bin ``b`` stands for (its midpoint, the value fio reports)."""

    seconds: npt.NDArray[np.int64]
    bins: npt.NDArray[np.int64]
    counts: npt.NDArray[np.float64]
    bin_us: npt.NDArray[np.float64]

    def summed(self, from_s: int = 0) -> npt.NDArray[np.float64]:
        """The counts of every second ``>= from_s`` summed per bin."""
        keep = self.seconds >= from_s
        return np.bincount(self.bins[keep], weights=self.counts[keep],
                           minlength=self.bin_us.size).astype(np.float64)

    def total(self, from_s: int = 0) -> float:
        return float(self.summed(from_s).sum())


def pooled_percentiles(hist: LatencyHistogram, percentiles: Sequence[float],
                       from_s: int = 0) -> tuple[float | None, ...]:
    """Latency percentiles (µs) of every I/O of the seconds ``>= from_s``: the latency of
    the first bin whose cumulative count of the summed histograms reaches ``p`` % of all
    (fio's own rule); None without an I/O."""
    summed = hist.summed(from_s)
    cum = np.cumsum(summed)
    if cum.size == 0 or cum[-1] <= 0:
        return tuple(None for _ in percentiles)
    out = []
    for p in percentiles:
        idx = int(np.searchsorted(cum, cum[-1] * (p / 100.0) - EPSILON))
        out.append(float(hist.bin_us[min(idx, cum.size - 1)]))
    return tuple(out)


def merged_percentile(histograms: Sequence[Sequence[tuple[int, int]]],
                      p: float) -> float | None:
    """The ``p`` percentile (µs) of all the I/Os of several completion-latency histograms
    (fio's json+ ``clat_ns.bins`` of each direction of a workload: (bin value in ns, I/Os)):
    the bins summed, then fio's own rule, the value of the first bin whose cumulative count
    reaches ``p`` % of all. So a mix's five-nines is of all its I/Os: two write stalls in
    100,000 writes are 0.7 in 100,000 of a 65/35 mix's I/Os, under its five-nines, where the
    larger of the two directions' five-nines is the stall. None without an I/O."""
    summed: dict[int, int] = {}
    for bins in histograms:
        for ns, count in bins:
            summed[ns] = summed.get(ns, 0) + count
    keys = sorted(k for k, c in summed.items() if c > 0)
    total = sum(summed[k] for k in keys)
    if total <= 0:
        return None
    target = total * (p / 100.0) - EPSILON
    running = 0
    for k in keys:
        running += summed[k]
        if running >= target:
            return k / 1000.0
    return keys[-1] / 1000.0


@dataclass(frozen=True)
class LatencySummary:
    seconds: int  # seconds with a latency value (a second without I/O has none)
    mean_us: float | None  # I/O-weighted mean of the per-second means
    p99_median_us: float | None  # median of the per-second p99
    p99_worst_us: float | None  # highest per-second p99
    p9999_worst_us: float | None  # highest per-second p99.99
    max_us: float | None  # highest per-second maximum
    # pooled: every I/O of the window, from the summed histograms (None without the log)
    p99_pooled_us: float | None = None
    p9999_pooled_us: float | None = None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _max(values: Any) -> float | None:
    arr = as_series(values)
    arr = arr[~np.isnan(arr)]
    return float(arr.max()) if arr.size else None


def latency_summary(
    iops: Any, lat_mean_us: Any, lat_p99_us: Any, lat_p9999_us: Any, lat_max_us: Any,
    *, hist: LatencyHistogram | None = None, hist_from_s: int = 0,
) -> LatencySummary:
    """Summary of equally long per-second series (NaN = no value that second); with
    ``hist``, the window's p99 and p99.99 pooled from its seconds ``>= hist_from_s``
    (the series passed start at that second)."""
    iops_a = as_series(iops)
    mean_a = as_series(lat_mean_us)
    p99_a = as_series(lat_p99_us)
    if not (iops_a.size == mean_a.size == p99_a.size):
        raise ValueError("latency series must have one value per second of the IOPS series")
    has = ~np.isnan(mean_a) & ~np.isnan(iops_a) & (iops_a > 0)
    weight = float(iops_a[has].sum())
    mean = float((mean_a[has] * iops_a[has]).sum() / weight) if weight > 0 else None
    p99 = p99_a[~np.isnan(p99_a)]
    pooled: tuple[float | None, ...] = (None, None)
    if hist is not None:
        pooled = pooled_percentiles(hist, POOLED_PERCENTILES, hist_from_s)
    return LatencySummary(
        seconds=int((~np.isnan(mean_a)).sum()),
        mean_us=mean,
        p99_median_us=float(np.median(p99)) if p99.size else None,
        p99_worst_us=float(p99.max()) if p99.size else None,
        p9999_worst_us=_max(lat_p9999_us),
        max_us=_max(lat_max_us),
        p99_pooled_us=pooled[0],
        p9999_pooled_us=pooled[1],
    )
