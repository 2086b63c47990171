"""Per-second IOPS of a torture stage: statistics, steady window, stalls, SNIA steady state
and the spare-area cliff.

Pure functions over numpy arrays; every result is a frozen dataclass with ``to_dict()``.
The exact definitions are in docs/analysis.md (what bench testers compare).

A series is indexed by second: element ``i`` is the IOPS of the interval ``[i, i+1)``.
``NaN`` marks a second without a value (it is left out of every statistic and counted in
``missing_seconds``); a second that completed no I/O is ``0``, not ``NaN``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

REVIEW_DURATION_S = 2000
REVIEW_STEADY_START_S = 1400
STEADY_FRACTION = 0.7
PERCENTILES = (1, 5, 50, 95, 99)
LOW_FRACTION = 0.10  # "seconds below 10% of the steady mean"

ROUND_S = 60  # SNIA PTS: one round = one minute
SNIA_WINDOW_ROUNDS = 5
SNIA_RANGE_LIMIT = 0.20  # max - min <= 20% of the window mean
SNIA_SLOPE_LIMIT = 0.10  # |slope| * (rounds - 1) <= 10% of the window mean

CLIFF_FRACTION = 0.50  # below 50% of the plateau (the best 60-s mean) ...
CLIFF_SUSTAIN_S = 30  # ... for a window of 30 s ...
CLIFF_SUSTAIN_SHARE = 0.80  # ... in which at least 80% of the seconds, and the mean, are below
PLATEAU_WINDOW_S = 60  # the plateau: the highest mean over 60 consecutive seconds
EARLY_WINDOW_S = 3  # a plateau shorter than a minute: the best 3-s mean of the first minute


def as_series(values: Any) -> FloatArray:
    """A 1-D float64 copy of ``values`` (a list, tuple or array)."""
    arr = np.asarray(values, dtype=np.float64)
    if arr.ndim != 1:
        raise ValueError(f"a per-second series must be one-dimensional, got shape {arr.shape}")
    return arr


def default_steady_start(duration_s: float) -> float:
    """The steady window's start: 1400 s for the 2000 s review run, else 70% of the run."""
    if duration_s == REVIEW_DURATION_S:
        return float(REVIEW_STEADY_START_S)
    return STEADY_FRACTION * float(duration_s)


def _opt(value: float) -> float | None:
    return None if math.isnan(value) else float(value)


@dataclass(frozen=True)
class SeriesStats:
    """Statistics of a per-second series; every value is None when it had no seconds."""

    seconds: int  # seconds with a value (NaN excluded)
    mean: float | None
    stddev: float | None  # population standard deviation (ddof=0)
    min: float | None
    max: float | None
    p1: float | None
    p5: float | None
    p50: float | None
    p95: float | None
    p99: float | None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def series_stats(values: Any) -> SeriesStats:
    """Mean, stddev, min, max and p1/p5/p50/p95/p99 (numpy "linear" percentiles)."""
    arr = as_series(values)
    arr = arr[~np.isnan(arr)]
    if arr.size == 0:
        return SeriesStats(0, None, None, None, None, None, None, None, None, None)
    pct = np.percentile(arr, PERCENTILES)
    return SeriesStats(
        seconds=int(arr.size),
        mean=float(arr.mean()),
        stddev=float(arr.std()),
        min=float(arr.min()),
        max=float(arr.max()),
        p1=float(pct[0]),
        p5=float(pct[1]),
        p50=float(pct[2]),
        p95=float(pct[3]),
        p99=float(pct[4]),
    )


@dataclass(frozen=True)
class Stalls:
    zero_seconds: int  # seconds with exactly 0 IOPS
    longest_zero_run_s: int  # longest run of consecutive zero seconds
    longest_zero_run_start_s: int | None  # where that run starts
    low_threshold_iops: float | None  # 10% of the steady mean (None without a steady mean)
    low_seconds: int | None  # seconds of the whole run strictly below that threshold
    steady_low_seconds: int | None  # the same, inside the steady window

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def longest_run(mask: npt.NDArray[np.bool_]) -> tuple[int, int | None]:
    """Length and start index of the longest run of True in ``mask`` (0, None if none)."""
    if mask.size == 0 or not mask.any():
        return 0, None
    padded = np.concatenate(([False], mask, [False])).astype(np.int8)
    edges = np.diff(padded)
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    lengths = ends - starts
    best = int(np.argmax(lengths))  # first of the longest runs
    return int(lengths[best]), int(starts[best])


def stalls(iops: Any, steady_start_s: float, steady_mean: float | None) -> Stalls:
    arr = as_series(iops)
    zero = arr == 0  # NaN compares False: a missing second is not a stall
    run_len, run_start = longest_run(zero)
    if steady_mean is None or steady_mean <= 0:
        threshold = None
        low = steady_low = None
    else:
        threshold = LOW_FRACTION * steady_mean
        below = arr < threshold
        low = int(below.sum())
        steady_low = int(below[_steady_slice(arr.size, steady_start_s)].sum())
    return Stalls(
        zero_seconds=int(zero.sum()),
        longest_zero_run_s=run_len,
        longest_zero_run_start_s=run_start,
        low_threshold_iops=threshold,
        low_seconds=low,
        steady_low_seconds=steady_low,
    )


def _steady_slice(n: int, steady_start_s: float) -> slice:
    # second i (interval [i, i+1)) is in the window when i >= steady_start_s
    first = max(0, math.ceil(steady_start_s))
    return slice(min(first, n), n)


@dataclass(frozen=True)
class SteadyState:
    """SNIA PTS steady state on one-minute rounds."""

    reached: bool
    at_s: int | None  # end of the first steady window, seconds from the start
    first_round: int | None  # index of the window's first round (0-based)
    window_mean: float | None
    window_range: float | None  # max - min of the window's rounds
    window_slope_excursion: float | None  # |slope| * (rounds - 1)
    rounds: tuple[float, ...]  # mean IOPS of every full minute
    search_from_s: int = 0  # windows start at or after this (the cliff, when one was found)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rounds"] = list(self.rounds)
        return d


def minute_rounds(iops: Any) -> FloatArray:
    """Mean IOPS of each full minute ``[60k, 60k+60)``; a minute with a NaN is NaN."""
    arr = as_series(iops)
    full = arr.size // ROUND_S
    if full == 0:
        return np.empty(0, dtype=np.float64)
    return np.asarray(arr[: full * ROUND_S].reshape(full, ROUND_S).mean(axis=1), np.float64)


def _slope(y: FloatArray) -> float:
    x = np.arange(y.size, dtype=np.float64)
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def snia_steady_state(iops: Any, after_s: float = 0) -> SteadyState:
    """The first 5-round window with range <= 20% and slope excursion <= 10% of its mean,
    among the windows whose first round starts at or after ``after_s`` (the cliff: a
    fresh-out-of-box plateau before it is flat but not steady).

    A window whose mean is 0 (a drive that stopped) or that holds a NaN round is never
    steady.
    """
    rounds = minute_rounds(iops)
    k = SNIA_WINDOW_ROUNDS
    first = max(0, math.ceil(after_s / ROUND_S))
    for i in range(first, rounds.size - k + 1):
        win = rounds[i : i + k]
        if np.isnan(win).any():
            continue
        mean = float(win.mean())
        if mean <= 0:
            continue
        rng = float(win.max() - win.min())
        excursion = abs(_slope(win)) * (k - 1)
        if rng <= SNIA_RANGE_LIMIT * mean and excursion <= SNIA_SLOPE_LIMIT * mean:
            return SteadyState(
                reached=True,
                at_s=(i + k) * ROUND_S,
                first_round=i,
                window_mean=mean,
                window_range=rng,
                window_slope_excursion=excursion,
                rounds=tuple(float(r) for r in rounds),
                search_from_s=first * ROUND_S,
            )
    return SteadyState(False, None, None, None, None, None, tuple(float(r) for r in rounds),
                       search_from_s=first * ROUND_S)


def sustained_drop(
    values: Any,
    threshold: float,
    sustain: int,
    share: float = CLIFF_SUSTAIN_SHARE,
    start: int = 0,
) -> int | None:
    """First index ``t >= start`` where ``values[t] < threshold``, at least ``share`` of
    ``values[t : t + sustain]`` (a window that must fit in the series) is below it, and so
    is the window's mean (a missing second counts as at the threshold)."""
    arr = as_series(values)
    n = arr.size
    if sustain <= 0 or n - start < sustain:
        return None
    below = (arr < threshold).astype(np.int64)  # NaN counts as not below
    csum = np.concatenate(([0], np.cumsum(below)))
    vsum = np.concatenate(([0.0], np.cumsum(np.where(np.isnan(arr), threshold, arr))))
    need = math.ceil(share * sustain - 1e-9)
    t = np.arange(start, n - sustain + 1)
    ok = ((below[t] == 1) & ((csum[t + sustain] - csum[t]) >= need)
          & (vsum[t + sustain] - vsum[t] < threshold * sustain))
    hits = np.flatnonzero(ok)
    return int(t[hits[0]]) if hits.size else None


@dataclass(frozen=True)
class Cliff:
    """Spare-area cliff: the first sustained drop below 50% of the plateau, after the
    plateau (docs/analysis.md)."""

    reference_iops: float | None  # the plateau level (None if the run is shorter than 60 s)
    threshold_iops: float | None
    at_s: int | None  # second where the sustained drop starts; None = not found
    reference_start_s: int | None = None  # where the plateau's window starts
    reference_window_s: int | None = None  # 60 (plateau) or 3 (a plateau under a minute)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def rolling_mean(values: Any, window: int) -> FloatArray:
    """Mean of ``values[t : t + window]`` for every ``t`` where the window fits; NaN for a
    window holding a missing second."""
    arr = as_series(values)
    if window <= 0 or arr.size < window:
        return np.empty(0, dtype=np.float64)
    missing = np.isnan(arr)
    csum = np.concatenate(([0.0], np.cumsum(np.where(missing, 0.0, arr))))
    cmiss = np.concatenate(([0], np.cumsum(missing)))
    sums = csum[window:] - csum[:-window]
    holes = cmiss[window:] - cmiss[:-window]
    return np.asarray(np.where(holes > 0, np.nan, sums / window), dtype=np.float64)


def _plateau(values: FloatArray, window: int, last_start: int) -> tuple[float, int] | None:
    """(highest ``window``-second mean, first start where it occurs) among the windows
    starting at ``0 … last_start``; None without a positive one."""
    means = rolling_mean(values, window)[: last_start + 1]
    if means.size == 0 or np.isnan(means).all():
        return None
    start = int(np.nanargmax(means))
    level = float(means[start])
    return (level, start) if level > 0 else None


def spare_area_cliff(iops: Any) -> Cliff:
    """The plateau is the highest 60-s mean of the run; the cliff is the first sustained
    drop below half of it at or after the plateau's start. When there is none, a plateau
    shorter than a minute is looked for: the highest 3-s mean of the first minute, and a
    sustained drop below half of it that starts inside the first minute."""
    arr = as_series(iops)
    if arr.size < PLATEAU_WINDOW_S:
        return Cliff(None, None, None)
    plateau = _plateau(arr, PLATEAU_WINDOW_S, arr.size - PLATEAU_WINDOW_S)
    if plateau is None:
        means = rolling_mean(arr, PLATEAU_WINDOW_S)
        level = float(np.nanmax(means)) if not np.isnan(means).all() else math.nan
        return Cliff(_opt(level), None, None)
    level, start = plateau
    threshold = CLIFF_FRACTION * level
    at = sustained_drop(arr, threshold, CLIFF_SUSTAIN_S, start=start)
    if at is None:
        early = _plateau(arr, EARLY_WINDOW_S, ROUND_S - EARLY_WINDOW_S)
        if early is not None:
            early_at = sustained_drop(arr, CLIFF_FRACTION * early[0], CLIFF_SUSTAIN_S,
                                      start=early[1])
            if early_at is not None and early_at < ROUND_S:
                return Cliff(early[0], CLIFF_FRACTION * early[0], early_at, early[1],
                             EARLY_WINDOW_S)
    return Cliff(level, threshold, at, start, PLATEAU_WINDOW_S)


@dataclass(frozen=True)
class IopsAnalysis:
    """Everything computed from one torture's per-second IOPS."""

    duration_s: int  # seconds in the series (rows of iops.csv)
    missing_seconds: int  # seconds without a value
    steady_start_s: float
    whole: SeriesStats
    steady: SeriesStats
    stalls: Stalls
    steady_state: SteadyState
    cliff: Cliff

    def to_dict(self) -> dict[str, Any]:
        return {
            "duration_s": self.duration_s,
            "missing_seconds": self.missing_seconds,
            "steady_start_s": self.steady_start_s,
            "whole": self.whole.to_dict(),
            "steady": self.steady.to_dict(),
            "stalls": self.stalls.to_dict(),
            "steady_state": self.steady_state.to_dict(),
            "cliff": self.cliff.to_dict(),
        }


def analyse_iops(iops: Any, steady_start_s: float | None = None) -> IopsAnalysis:
    """Whole-run and steady-window statistics, stalls, the cliff, and SNIA steady state
    searched from the cliff on (from the start when there is no cliff).

    ``steady_start_s`` None: :func:`default_steady_start` of the series' length.
    """
    arr = as_series(iops)
    start = default_steady_start(arr.size) if steady_start_s is None else float(steady_start_s)
    if start < 0:
        raise ValueError(f"steady_start_s must be >= 0, got {start}")
    steady = series_stats(arr[_steady_slice(arr.size, start)])
    cliff = spare_area_cliff(arr)
    return IopsAnalysis(
        duration_s=int(arr.size),
        missing_seconds=int(np.isnan(arr).sum()),
        steady_start_s=start,
        whole=series_stats(arr),
        steady=steady,
        stalls=stalls(arr, start, steady.mean),
        steady_state=snia_steady_state(arr, after_s=cliff.at_s or 0),
        cliff=cliff,
    )
