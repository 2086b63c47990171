"""Latency summary of a torture stage from the per-second columns of iops.csv.

The per-second values (mean, p99, p99.99, max, in microseconds) come from fio's logs; this
module only summarises them (definitions in docs/analysis.md).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.iops import as_series


@dataclass(frozen=True)
class LatencySummary:
    seconds: int  # seconds with a latency value (a second without I/O has none)
    mean_us: float | None  # I/O-weighted mean of the per-second means
    p99_median_us: float | None  # median of the per-second p99
    p99_worst_us: float | None  # highest per-second p99
    p9999_worst_us: float | None  # highest per-second p99.99
    max_us: float | None  # highest per-second maximum

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _max(values: Any) -> float | None:
    arr = as_series(values)
    arr = arr[~np.isnan(arr)]
    return float(arr.max()) if arr.size else None


def latency_summary(
    iops: Any, lat_mean_us: Any, lat_p99_us: Any, lat_p9999_us: Any, lat_max_us: Any
) -> LatencySummary:
    """Summary of equally long per-second series (NaN = no value that second)."""
    iops_a = as_series(iops)
    mean_a = as_series(lat_mean_us)
    p99_a = as_series(lat_p99_us)
    if not (iops_a.size == mean_a.size == p99_a.size):
        raise ValueError("latency series must have one value per second of the IOPS series")
    has = ~np.isnan(mean_a) & ~np.isnan(iops_a) & (iops_a > 0)
    weight = float(iops_a[has].sum())
    mean = float((mean_a[has] * iops_a[has]).sum() / weight) if weight > 0 else None
    p99 = p99_a[~np.isnan(p99_a)]
    return LatencySummary(
        seconds=int((~np.isnan(mean_a)).sum()),
        mean_us=mean,
        p99_median_us=float(np.median(p99)) if p99.size else None,
        p99_worst_us=float(p99.max()) if p99.size else None,
        p9999_worst_us=_max(lat_p9999_us),
        max_us=_max(lat_max_us),
    )
