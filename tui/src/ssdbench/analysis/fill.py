"""Sequential fill throughput: mean MiB/s and the SLC-cache cliff (definitions in
docs/analysis.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.iops import as_series, plateau_drop, running_plateau

FILL_CLIFF_FRACTION = 0.70  # throughput falls below 70% of the reference ...
FILL_REFERENCE_S = 30  # reference: the best 30-s mean so far (a quarter of a shorter fill)
FILL_SUSTAIN_S = 30  # ... every 30-s mean in the next 30 s below (a 20th of a shorter fill)


@dataclass(frozen=True)
class FillStats:
    seconds: int
    gib_written: float | None  # cumulative at the end of the fill
    mean_mib_s: float | None  # mean of the per-second MiB/s
    min_mib_s: float | None
    max_mib_s: float | None
    p50_mib_s: float | None
    reference_mib_s: float | None  # the best reference-window mean before the cliff
    cliff_at_s: int | None  # start of the sustained drop (None: no cliff found)
    cliff_gib: float | None  # GiB written when the drop starts
    before_cliff_mib_s: float | None  # mean before the cliff
    after_cliff_mib_s: float | None  # mean from the cliff to the end
    note: str | None = None  # why the cliff could not be looked for (a fill too short)

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
        return FillStats(n, None, None, None, None, None, None, None, None, None, None,
                         "no second of the fill has a value" if n else None)
    finite_gib = gib[~np.isnan(gib)]
    total = float(finite_gib[-1]) if finite_gib.size else None
    ref_len = min(FILL_REFERENCE_S, n // 4)
    sustain = min(FILL_SUSTAIN_S, max(3, n // 20))
    cliff = cliff_gib = before = after = reference = note = None
    if ref_len < 1 or n - ref_len < sustain:
        note = (f"fill too short for the SLC-cache cliff: it needs {sustain} s after a "
                f"reference window; the fill lasted {n} s")
    else:
        drop = plateau_drop(rate, ref_len, FILL_CLIFF_FRACTION, sustain)
        if drop is not None:
            cliff, reference = drop.at, drop.level
            cliff_gib = float(gib[cliff - 1]) if cliff > 0 and not np.isnan(gib[cliff - 1]) else 0.0
            before = _mean(rate[:cliff])
            after = _mean(rate[cliff:])
        else:
            level, _ = running_plateau(rate, ref_len)
            reference = None if np.isnan(level).all() else float(np.nanmax(level))
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
        note=note,
    )
