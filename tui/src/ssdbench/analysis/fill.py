"""Sequential fill throughput: mean MiB/s and the SLC-cache cliff (definitions in
docs/analysis.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.iops import as_series, sustained_drop

FILL_CLIFF_FRACTION = 0.70  # throughput falls below 70% of the reference ...
FILL_REFERENCE_S = 30  # reference: median of the first 30 s (a quarter of a shorter fill)
FILL_SUSTAIN_S = 30  # ... for 30 s (a twentieth of a shorter fill, at least 3 s)
FILL_SUSTAIN_SHARE = 0.90  # ... with at least 90% of those seconds (and their mean) below


@dataclass(frozen=True)
class FillStats:
    seconds: int
    gib_written: float | None  # cumulative at the end of the fill
    mean_mib_s: float | None  # mean of the per-second MiB/s
    min_mib_s: float | None
    max_mib_s: float | None
    p50_mib_s: float | None
    reference_mib_s: float | None  # median of the reference window at the start
    cliff_at_s: int | None  # start of the sustained drop (None: no cliff found)
    cliff_gib: float | None  # GiB written when the drop starts
    before_cliff_mib_s: float | None  # mean before the cliff
    after_cliff_mib_s: float | None  # mean from the cliff to the end

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _mean(a: Any) -> float | None:
    arr = as_series(a)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else None


def fill_stats(mib_s: Any, gib_written: Any) -> FillStats:
    rate = as_series(mib_s)
    gib = as_series(gib_written)
    if rate.size != gib.size:
        raise ValueError("fill.csv columns mib_s and gib_written differ in length")
    n = int(rate.size)
    valid = rate[~np.isnan(rate)]
    if valid.size == 0:
        return FillStats(n, None, None, None, None, None, None, None, None, None, None)
    finite_gib = gib[~np.isnan(gib)]
    total = float(finite_gib[-1]) if finite_gib.size else None
    ref_len = min(FILL_REFERENCE_S, n // 4)
    sustain = min(FILL_SUSTAIN_S, max(3, n // 20))
    head = rate[:ref_len]
    head = head[~np.isnan(head)]
    reference = float(np.median(head)) if head.size else None
    cliff = cliff_gib = before = after = None
    if reference is not None and reference > 0:
        cliff = sustained_drop(rate, FILL_CLIFF_FRACTION * reference, sustain,
                               share=FILL_SUSTAIN_SHARE)
        if cliff is not None:
            cliff_gib = float(gib[cliff - 1]) if cliff > 0 and not np.isnan(gib[cliff - 1]) else 0.0
            before = _mean(rate[:cliff])
            after = _mean(rate[cliff:])
    return FillStats(
        seconds=n,
        gib_written=total,
        mean_mib_s=float(valid.mean()),
        min_mib_s=float(valid.min()),
        max_mib_s=float(valid.max()),
        p50_mib_s=float(np.median(valid)),
        reference_mib_s=reference,
        cliff_at_s=cliff,
        cliff_gib=cliff_gib,
        before_cliff_mib_s=before,
        after_cliff_mib_s=after,
    )
