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
from collections.abc import Mapping
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
CLIFF_SUSTAIN_S = 30  # ... every 30-s mean starting in the next 30 s below it ...
# ... and below the geometric mean of the plateau and the final level (nearer the final)
PLATEAU_WINDOW_S = 60  # the plateau: the highest mean over 60 consecutive seconds
EARLY_WINDOW_S = 3  # a plateau shorter than a minute: the best 3-s mean of the first minute
FINAL_MINUTES = 5  # the final level: median of the last 5 minutes' means


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


def _num(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def steady_window_start(params: Mapping[str, Any], kind: str, rows: int) -> float:
    """The steady window's start of a run from its run.json ``params``.

    The planned torture is ``torture_seconds`` (a TRIM run: ``trim_torture_seconds``), else
    the ``rows`` of iops.csv. ``params.steady_start_s`` is recorded from ``torture_seconds``
    (the consistency torture), so it is used for a consistency run when it lies in
    ``[0, planned)``; a TRIM run's torture, and any other case, gets
    :func:`default_steady_start` of the planned duration (3600 s -> 2520 s).
    """
    planned = _num(params.get("torture_seconds"))
    if kind == "trim":
        planned = _num(params.get("trim_torture_seconds")) or planned
    planned_s = int(planned) if planned and planned > 0 else rows
    given = _num(params.get("steady_start_s"))
    if kind != "trim" and given is not None and 0 <= given < planned_s:
        return given
    return default_steady_start(planned_s)


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
class SniaWindow:
    """One 5-round window that satisfies the SNIA PTS range and slope rules."""

    at_s: int  # end of the window, seconds from the start
    first_round: int  # index of the window's first round (0-based)
    window_mean: float
    window_range: float  # max - min of the window's rounds
    window_slope_excursion: float  # |slope| * (rounds - 1)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class SteadyState:
    """SNIA PTS steady state on one-minute rounds: ssdbench's answer (searched from the
    cliff, on the level the drive keeps to the end) and the literal rule's (``snia_literal``:
    the first steady window from round 0, which cannot look ahead)."""

    reached: bool
    at_s: int | None  # end of the first steady window, seconds from the start
    first_round: int | None  # index of the window's first round (0-based)
    window_mean: float | None
    window_range: float | None  # max - min of the window's rounds
    window_slope_excursion: float | None  # |slope| * (rounds - 1)
    rounds: tuple[float, ...]  # mean IOPS of every full minute
    search_from_s: int = 0  # windows start at or after this (the cliff, when one was found)
    final_iops: float | None = None  # the run's final level (final_level); None: not applied
    snia_literal: SniaWindow | None = None  # the literal rule's first window from round 0
    note: str | None = None  # why the check could not be made or what it saw, when not reached

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rounds"] = list(self.rounds)
        d["snia_literal"] = self.snia_literal.to_dict() if self.snia_literal else None
        return d


def minute_rounds(iops: Any) -> FloatArray:
    """Mean IOPS of each full minute ``[60k, 60k+60)``; a minute with a NaN is NaN."""
    arr = as_series(iops)
    full = arr.size // ROUND_S
    if full == 0:
        return np.empty(0, dtype=np.float64)
    return np.asarray(arr[: full * ROUND_S].reshape(full, ROUND_S).mean(axis=1), np.float64)


def final_level(iops: Any) -> float | None:
    """The level a run ends at: the median of the mean IOPS of its last five minutes,
    counted back from the end (``[n - 60(j+1), n - 60j)``, j = 0…4; fewer in a shorter run;
    a minute holding a missing second is skipped). The median, so a recovery burst of up to
    two minutes does not move it. None: no whole minute."""
    arr = as_series(iops)
    means = [float(arr[arr.size - ROUND_S * (j + 1): arr.size - ROUND_S * j].mean())
             for j in range(FINAL_MINUTES) if arr.size >= ROUND_S * (j + 1)]
    means = [m for m in means if not math.isnan(m)]
    return float(np.median(means)) if means else None


def _slope(y: FloatArray) -> float:
    x = np.arange(y.size, dtype=np.float64)
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def _first_window(rounds: FloatArray, first: int, final: float | None) -> SniaWindow | None:
    k = SNIA_WINDOW_ROUNDS
    for i in range(first, rounds.size - k + 1):
        win = rounds[i : i + k]
        if np.isnan(win).any():
            continue
        mean = float(win.mean())
        if mean <= 0:
            continue
        rng = float(win.max() - win.min())
        excursion = abs(_slope(win)) * (k - 1)
        if rng > SNIA_RANGE_LIMIT * mean or excursion > SNIA_SLOPE_LIMIT * mean:
            continue
        if final is not None and abs(mean - final) > SNIA_RANGE_LIMIT * mean:
            continue  # a level the drive leaves later is not its steady state
        return SniaWindow((i + k) * ROUND_S, i, mean, rng, excursion)
    return None


def snia_steady_state(iops: Any, after_s: float = 0,
                      final_iops: float | None = None) -> SteadyState:
    """The first 5-round window with range <= 20% and slope excursion <= 10% of its mean,
    among the windows whose first round starts at or after ``after_s`` (the cliff: a
    fresh-out-of-box plateau before it is flat but not steady) and, when ``final_iops`` is
    given, whose mean lies within 20% of it (the level the run ends at: a plateau the drive
    leaves later is not steady). ``snia_literal`` is the literal rule's answer: from round 0,
    neither condition.

    A window whose mean is 0 (a drive that stopped) or that holds a NaN round is never
    steady.
    """
    arr = as_series(iops)
    rounds = minute_rounds(arr)
    first = max(0, math.ceil(after_s / ROUND_S))
    found = _first_window(rounds, first, final_iops)
    literal = _first_window(rounds, 0, None)
    kept = tuple(float(r) for r in rounds)
    if found is not None:
        return SteadyState(True, found.at_s, found.first_round, found.window_mean,
                           found.window_range, found.window_slope_excursion, kept,
                           search_from_s=first * ROUND_S, final_iops=final_iops,
                           snia_literal=literal)
    return SteadyState(False, None, None, None, None, None, kept, search_from_s=first * ROUND_S,
                       final_iops=final_iops, snia_literal=literal,
                       note=_steady_note(arr.size, rounds.size, first, literal, final_iops))


def _steady_note(seconds: int, rounds: int, first: int, literal: SniaWindow | None,
                 final: float | None) -> str | None:
    k = SNIA_WINDOW_ROUNDS
    if rounds - first < k:
        return (f"run too short: the SNIA rule needs {k} rounds of {ROUND_S} s after its "
                f"search start ({first * ROUND_S} s); the torture lasted {seconds} s")
    if literal is None:
        return None
    where = (f"the literal SNIA rule's window (rounds {literal.first_round}–"
             f"{literal.first_round + k - 1}, to {literal.at_s} s) averages "
             f"{literal.window_mean:,.0f} IOPS")
    if literal.first_round < first:
        return f"not steady after the cliff ({first * ROUND_S} s); {where}, before it"
    return (f"not steady on a level the drive keeps: {where}, a level the drive left "
            f"(final level {final or 0:,.0f} IOPS)")


def _rolling_nanmean(arr: FloatArray, window: int) -> FloatArray:
    """Mean of the present seconds of ``arr[t : t + window]`` for every ``t`` where the
    window fits; NaN when fewer than half of its seconds are present."""
    missing = np.isnan(arr)
    csum = np.concatenate(([0.0], np.cumsum(np.where(missing, 0.0, arr))))
    cnt = np.concatenate(([0], np.cumsum(~missing)))
    sums = csum[window:] - csum[:-window]
    present = cnt[window:] - cnt[:-window]
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / present
    return np.asarray(np.where(2 * present >= window, means, np.nan), dtype=np.float64)


def sustained_drop(
    values: Any,
    threshold: float | FloatArray,
    sustain: int,
    start: int = 0,
    window_threshold: float | FloatArray | None = None,
) -> int | None:
    """First index ``t >= start`` where ``values[t] < threshold`` and the mean of every
    ``sustain``-long window starting in ``[t, t + sustain)`` that fits in the series is
    below ``window_threshold`` (default: ``threshold``; at least the window starting at
    ``t`` must fit). Both may be one value per index ``t`` (NaN: no drop can start there).
    Means leave missing seconds out;
    a window with fewer than half of its seconds present is not below."""
    arr = as_series(values)
    n = arr.size
    if sustain <= 0 or n - start < sustain:
        return None
    means = _rolling_nanmean(arr, sustain)  # one per start 0 … n - sustain
    worst = np.concatenate((np.where(np.isnan(means), np.inf, means),
                            np.full(sustain - 1, -np.inf)))
    ahead = np.lib.stride_tricks.sliding_window_view(worst, sustain).max(axis=1)
    thr = np.broadcast_to(np.asarray(threshold, dtype=np.float64), (n,))
    wthr = thr if window_threshold is None else np.broadcast_to(
        np.asarray(window_threshold, dtype=np.float64), (n,))
    t = np.arange(start, means.size)
    with np.errstate(invalid="ignore"):
        ok = (arr[t] < thr[t]) & (ahead[t] < wthr[t])
    hits = np.flatnonzero(ok)
    return int(t[hits[0]]) if hits.size else None


@dataclass(frozen=True)
class Cliff:
    """Spare-area cliff: the first sustained drop below 50% of the plateau before it, to a
    level nearer the one the run ends at than the plateau (docs/analysis.md)."""

    reference_iops: float | None  # the plateau level (None if the run is shorter than 60 s)
    threshold_iops: float | None
    at_s: int | None  # second where the sustained drop starts; None = not found
    reference_start_s: int | None = None  # where the plateau's window starts
    reference_window_s: int | None = None  # 60 (plateau) or 3 (a plateau under a minute)
    final_iops: float | None = None  # the run's final level (final_level)
    note: str | None = None  # why the search could not be made (a run too short)

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


def running_plateau(values: Any, window: int) -> tuple[FloatArray, npt.NDArray[np.int64]]:
    """For every second ``t``: the highest ``window``-second mean among the windows that end
    at or before ``t`` (``[s, s + window)`` with ``s + window <= t``; NaN before the first,
    a window with a missing second skipped), and the first start ``s`` where it occurs
    (-1 where there is none)."""
    arr = as_series(values)
    n = arr.size
    level = np.full(n, np.nan)
    where = np.full(n, -1, dtype=np.int64)
    means = rolling_mean(arr, window)
    if means.size == 0 or n <= window:
        return level, where
    m = np.where(np.isnan(means), -np.inf, means)
    best = np.maximum.accumulate(m)
    previous = np.concatenate(([-np.inf], best[:-1]))
    idx = np.maximum.accumulate(np.where(m > previous, np.arange(m.size), 0))
    count = n - window  # seconds window … n-1 have a window ending at or before them
    level[window:] = np.where(np.isfinite(best[:count]), best[:count], np.nan)
    where[window:] = np.where(np.isfinite(best[:count]), idx[:count], -1)
    return level, where


def _plateau(values: FloatArray, window: int, last_start: int) -> tuple[float, int] | None:
    """(highest ``window``-second mean, first start where it occurs) among the windows
    starting at ``0 … last_start``; None without a positive one."""
    means = rolling_mean(values, window)[: last_start + 1]
    if means.size == 0 or np.isnan(means).all():
        return None
    start = int(np.nanargmax(means))
    level = float(means[start])
    return (level, start) if level > 0 else None


@dataclass(frozen=True)
class Drop:
    """A sustained drop below a share of the plateau before it (:func:`plateau_drop`)."""

    at: int  # the second of the sharpest fall
    level: float  # the plateau: the highest window mean that ended before the drop
    level_start: int  # where that window starts
    threshold: float  # fraction x level


def plateau_drop(values: Any, window: int, fraction: float, sustain: int,
                 final: float | None = None) -> Drop | None:
    """The first sustained drop below ``fraction`` of the plateau so far.

    The plateau at second ``u`` is the highest ``window``-second mean among the windows
    that end at or before ``u`` (:func:`running_plateau`). The drop starts at the first
    ``u >= window`` from which every ``sustain``-second mean starting in
    ``[u, u + sustain)`` (those that fit) is below ``fraction`` x that plateau and, with a
    ``final`` level, below the geometric mean of the plateau and ``final``
    (:func:`_toward_final`). The drop is reported at the sharpest fall in
    ``[u, u + sustain)``: the second ``t`` where the mean of the ``k`` seconds before ``t``
    minus the mean of the ``k`` seconds from ``t`` is largest (``k`` = a third of
    ``sustain``, 10 s for 30 s), so a step is reported at its step."""
    arr = as_series(values)
    level, where = running_plateau(arr, window)
    threshold = fraction * np.where(level > 0, level, np.nan)
    u = sustained_drop(arr, math.inf, sustain, start=window,
                       window_threshold=_toward_final(threshold, level, final))
    if u is None:
        return None
    t = _sharpest_fall(arr, u, u + sustain, max(1, sustain // 3))
    return Drop(t, float(level[u]), int(where[u]), float(threshold[u]))


def _sharpest_fall(arr: FloatArray, lo: int, hi: int, k: int) -> int:
    """The ``t`` in ``[lo, hi)`` maximising mean(arr[t-k:t]) - mean(arr[t:t+k]) (missing
    seconds left out); ``lo`` when no ``t`` has both means."""
    n = arr.size
    first, last = max(lo, k), min(hi, n - k + 1)
    if first >= last:
        return lo
    means = _rolling_nanmean(arr, k)  # means[j]: arr[j : j + k]
    t = np.arange(first, last)
    fall = means[t - k] - means[t]
    if np.isnan(fall).all():
        return lo
    return int(t[int(np.nanargmax(fall))])


def spare_area_cliff(iops: Any) -> Cliff:
    """The first sustained drop below half of the plateau so far (the highest 60-s mean
    that ended before it) toward the run's final level (:func:`plateau_drop`). When there
    is none, a plateau shorter than a minute is looked for: the highest 3-s mean of the
    first minute, and a sustained drop below half of it (the second itself below, the 30-s
    means as above) that starts inside the first minute."""
    arr = as_series(iops)
    if arr.size < PLATEAU_WINDOW_S:
        return Cliff(None, None, None, note=(
            f"run too short for the cliff: it needs a {PLATEAU_WINDOW_S}-s plateau and "
            f"{CLIFF_SUSTAIN_S} s after the drop; the torture lasted {arr.size} s"))
    final = final_level(arr)
    drop = plateau_drop(arr, PLATEAU_WINDOW_S, CLIFF_FRACTION, CLIFF_SUSTAIN_S, final)
    if drop is not None:
        return Cliff(drop.level, drop.threshold, drop.at, drop.level_start, PLATEAU_WINDOW_S,
                     final_iops=final)
    early = _plateau(arr, EARLY_WINDOW_S, ROUND_S - EARLY_WINDOW_S)
    if early is not None:
        early_thr = CLIFF_FRACTION * early[0]
        early_at = sustained_drop(
            arr, early_thr, CLIFF_SUSTAIN_S, start=early[1],
            window_threshold=_toward_final(np.float64(early_thr), np.float64(early[0]), final))
        if early_at is not None and early_at < ROUND_S:
            return Cliff(early[0], early_thr, early_at, early[1], EARLY_WINDOW_S,
                         final_iops=final)
    plateau = _plateau(arr, PLATEAU_WINDOW_S, arr.size - PLATEAU_WINDOW_S)
    if plateau is None:
        means = rolling_mean(arr, PLATEAU_WINDOW_S)
        best = float(np.nanmax(means)) if not np.isnan(means).all() else math.nan
        return Cliff(_opt(best), None, None, final_iops=final)
    return Cliff(plateau[0], CLIFF_FRACTION * plateau[0], None, plateau[1], PLATEAU_WINDOW_S,
                 final_iops=final)


def _toward_final(threshold: Any, level: Any, final: float | None) -> FloatArray:
    """The window means' threshold of a cliff: the lower of the threshold and the geometric
    mean of the plateau and the final level, so the drop goes nearer (on a log scale) to the
    level the run ends at than to the plateau: a fall to an intermediate plateau that the
    drive later leaves (a write cache's end) is not yet its cliff."""
    if final is None:
        return np.asarray(threshold, dtype=np.float64)
    with np.errstate(invalid="ignore"):
        mid = np.sqrt(np.asarray(level, dtype=np.float64) * max(final, 0.0))
    return np.asarray(np.fmin(threshold, mid), dtype=np.float64)


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
        steady_state=snia_steady_state(arr, after_s=cliff.at_s or 0,
                                       final_iops=final_level(arr)),
        cliff=cliff,
    )
