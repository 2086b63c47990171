"""Sequential fill throughput: mean MiB/s, the SLC-cache cliff, and the fill's stalls,
throttles and oscillations (definitions in docs/analysis.md)."""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.events import Events, find_events
from ssdbench.analysis.iops import as_series, clean_series, gap_notes

FILL_CLIFF_FRACTION = 0.70  # the first fall below 70% of the level before it, not recovered
FILL_MIN_S = 20  # a fill shorter than this has no cliff looked for


@dataclass(frozen=True)
class FillStats:
    seconds: int
    gib_written: float | None  # cumulative at the end of the fill
    mean_mib_s: float | None  # mean of the per-second MiB/s
    min_mib_s: float | None
    max_mib_s: float | None
    p50_mib_s: float | None
    reference_mib_s: float | None  # the level before the cliff (the cache's speed)
    cliff_at_s: int | None  # the first second after the cache (None: no cliff found)
    cliff_gib: float | None  # GiB written when the drop starts
    before_cliff_mib_s: float | None  # mean before the cliff
    after_cliff_mib_s: float | None  # mean from the cliff to the end
    note: str | None = None  # why the cliff could not be looked for (a fill too short)
    events: Events | None = None  # stalls, throttles, steps of the fill
    notes: tuple[str, ...] = ()  # missing and invalid seconds, stalls, throttles: named

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["events"] = self.events.to_dict() if self.events else None
        d["notes"] = list(self.notes)
        return d


def _mean(a: Any) -> float | None:
    arr = as_series(a)
    arr = arr[~np.isnan(arr)]
    return float(arr.mean()) if arr.size else None


def fill_stats(mib_s: Any, gib_written: Any) -> FillStats:
    rate, invalid = clean_series(mib_s)
    gib = as_series(gib_written)
    if rate.size != gib.size:
        raise ValueError("fill.csv columns mib_s and gib_written differ in length")
    n = int(rate.size)
    valid = rate[~np.isnan(rate)]
    notes = gap_notes(int(np.isnan(rate).sum()), invalid, n, "MiB/s")
    if valid.size == 0:
        return FillStats(n, None, None, None, None, None, None, None, None, None, None,
                         "no second of the fill has a value" if n else None,
                         notes=tuple(notes))
    finite_gib = gib[~np.isnan(gib)]
    total = float(finite_gib[-1]) if finite_gib.size else None
    cliff = cliff_gib = before = after = reference = note = None
    events = None
    if n < FILL_MIN_S:
        note = (f"fill too short for the SLC-cache cliff: it needs {FILL_MIN_S} s; the fill "
                f"lasted {n} s")
    else:
        events = find_events(rate, cliff_fraction=FILL_CLIFF_FRACTION, first_cliff=True)
        notes += _event_notes(events)
        c = events.cliff
        if c is not None:
            cliff, reference = c.at_s, c.from_level
            cliff_gib = float(gib[cliff - 1]) if cliff > 0 and not np.isnan(gib[cliff - 1]) else 0.0
            before = _mean(rate[:cliff])
            after = _mean(rate[cliff:])
        elif events.levels:
            reference = max(lv.mean for lv in events.levels)
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
        events=events,
        notes=tuple(notes),
    )


def _event_notes(ev: Events) -> list[str]:
    """Sentences for a fill's stalls, throttles and oscillation (what they are, not a
    cliff)."""
    out = []
    stalls = ev.of("stall")
    if stalls:
        longest = max(stalls, key=lambda e: e.duration_s)
        out.append(f"{len(stalls)} stall(s), {sum(e.duration_s for e in stalls)} s at no "
                   f"throughput; the longest {longest.duration_s} s from {longest.at_s} s")
    throttles = ev.of("throttle")
    if throttles and ev.summary()["oscillating"]:
        lo = min(e.to_level or 0.0 for e in throttles)
        hi = max(e.from_level or 0.0 for e in throttles)
        out.append(f"oscillates between about {lo:,.0f} and {hi:,.0f} MiB/s "
                   f"({len(throttles)} falls, each recovered)")
    elif throttles:
        out.append(f"{len(throttles)} throttle(s): falls the drive recovered from, "
                   f"{sum(e.duration_s for e in throttles)} s in all")
    return out
