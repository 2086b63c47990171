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

from ssdbench.analysis.events import CLIFF_FRACTION, PLATEAU_MIN_S, Events, find_events
from ssdbench.analysis.levels import tail_level

FloatArray = npt.NDArray[np.float64]

REVIEW_DURATION_S = 2000
REVIEW_STEADY_START_S = 1400
STEADY_FRACTION = 0.7
PERCENTILES = (1, 5, 50, 95, 99)
LOW_FRACTION = 0.10  # "seconds below 10% of the steady mean"

ROUND_S = 60  # SNIA PTS: one round = one minute (plan parameter steady_round_s)
SNIA_WINDOW_ROUNDS = 5
SNIA_RANGE_LIMIT = 0.20  # max - min <= 20% of the window mean
SNIA_SLOPE_LIMIT = 0.10  # |slope| * (rounds - 1) <= 10% of the window mean

PLATEAU_WINDOW_S = 60  # no cliff is looked for in a torture shorter than a minute


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
    :func:`default_steady_start` of the planned duration (3600 s -> 2520 s). A WSAT run
    and a HIR run's WSAT (they end at a byte goal) get 70% of ``rows``.
    """
    if kind in ("wsat", "hir"):  # the WSAT ends at its byte goal, not at torture_seconds:
        return default_steady_start(rows)  # 70% of its rows
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


def true_runs(mask: npt.NDArray[np.bool_]) -> tuple[npt.NDArray[np.intp],
                                                   npt.NDArray[np.intp]]:
    """The runs of True in ``mask``: their starts and (exclusive) ends, in order."""
    edges = np.diff(np.concatenate(([False], mask, [False])).astype(np.int8))
    return np.flatnonzero(edges == 1), np.flatnonzero(edges == -1)


def longest_run(mask: npt.NDArray[np.bool_]) -> tuple[int, int | None]:
    """Length and start index of the longest run of True in ``mask`` (0, None if none)."""
    if mask.size == 0 or not mask.any():
        return 0, None
    starts, ends = true_runs(mask)
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
    """SNIA PTS steady state on rounds of ``round_s`` (the PTS's one minute unless the plan
    says otherwise): ssdbench's answer (searched from the cliff, on the level the drive keeps
    to the end) and the literal rule's (``snia_literal``: the first steady window from round
    0, which cannot look ahead)."""

    reached: bool
    at_s: int | None  # end of the first steady window, seconds from the start
    first_round: int | None  # index of the window's first round (0-based)
    window_mean: float | None
    window_range: float | None  # max - min of the window's rounds
    window_slope_excursion: float | None  # |slope| * (rounds - 1)
    rounds: tuple[float, ...]  # mean IOPS of every full round
    search_from_s: int = 0  # windows start at or after this (the cliff, when one was found)
    final_iops: float | None = None  # the run's final level (final_level); None: not applied
    snia_literal: SniaWindow | None = None  # the literal rule's first window from round 0
    note: str | None = None  # why the check could not be made or what it saw, when not reached
    round_s: int = ROUND_S  # the length of one round (s)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["rounds"] = list(self.rounds)
        d["snia_literal"] = self.snia_literal.to_dict() if self.snia_literal else None
        return d


def minute_rounds(iops: Any, round_s: int = ROUND_S) -> FloatArray:
    """Mean IOPS of each full round ``[r*k, r*k+r)`` (``r = round_s``, a minute unless
    given) over its seconds with a value; a round with fewer than half of its seconds present
    is NaN (not usable)."""
    if round_s < 1:
        raise ValueError(f"a round lasts at least one second, got {round_s}")
    arr = as_series(iops)
    full = arr.size // round_s
    if full == 0:
        return np.empty(0, dtype=np.float64)
    block = arr[: full * round_s].reshape(full, round_s)
    present = (~np.isnan(block)).sum(axis=1)
    sums = np.where(np.isnan(block), 0.0, block).sum(axis=1)
    with np.errstate(invalid="ignore", divide="ignore"):
        means = sums / present
    return np.asarray(np.where(2 * present >= round_s, means, np.nan), np.float64)


def final_level(iops: Any) -> float | None:
    """The level a run ends at, when its levels are not known: the median of the mean IOPS
    of its last five minutes (:func:`ssdbench.analysis.levels.tail_level`).
    :func:`analyse_iops` uses the events' final level
    (:func:`ssdbench.analysis.events.find_events`). None: no whole minute."""
    return tail_level(as_series(iops))


def _slope(y: FloatArray) -> float:
    x = np.arange(y.size, dtype=np.float64)
    xc = x - x.mean()
    return float((xc * (y - y.mean())).sum() / (xc * xc).sum())


def first_steady_window(rounds: FloatArray, first: int = 0, final: float | None = None,
                        round_s: int = ROUND_S) -> SniaWindow | None:
    """The first window of five rounds from round ``first`` whose range is at most 20% and
    whose least-squares slope excursion is at most 10% of its mean (SNIA PTS), and, with
    ``final``, whose mean is within 20% of it; None when no window is. ``rounds`` are the
    rounds' values (IOPS, MB/s: any tracking variable), ``round_s`` their length."""
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
        return SniaWindow((i + k) * round_s, i, mean, rng, excursion)
    return None


def snia_steady_state(iops: Any, after_s: float = 0, final_iops: float | None = None,
                      round_s: int = ROUND_S) -> SteadyState:
    """The first 5-round window with range <= 20% and slope excursion <= 10% of its mean,
    among the windows whose first round starts at or after ``after_s`` (the cliff: a
    fresh-out-of-box plateau before it is flat but not steady) and, when ``final_iops`` is
    given, whose mean lies within 20% of it (the level the run ends at: a plateau the drive
    leaves later is not steady). ``snia_literal`` is the literal rule's answer: from round 0,
    neither condition.

    A window whose mean is 0 (a drive that stopped) or that holds a NaN round is never
    steady. ``round_s``: the rounds' length (plan parameter ``steady_round_s``).
    """
    arr = as_series(iops)
    rounds = minute_rounds(arr, round_s)
    first = max(0, math.ceil(after_s / round_s))
    found = first_steady_window(rounds, first, final_iops, round_s)
    literal = first_steady_window(rounds, 0, None, round_s)
    kept = tuple(float(r) for r in rounds)
    if found is not None:
        return SteadyState(True, found.at_s, found.first_round, found.window_mean,
                           found.window_range, found.window_slope_excursion, kept,
                           search_from_s=first * round_s, final_iops=final_iops,
                           snia_literal=literal, round_s=round_s)
    return SteadyState(False, None, None, None, None, None, kept, search_from_s=first * round_s,
                       final_iops=final_iops, snia_literal=literal,
                       note=_steady_note(arr.size, rounds.size, first, literal, final_iops,
                                         round_s=round_s),
                       round_s=round_s)


def _steady_note(seconds: int, rounds: int, first: int, literal: SniaWindow | None,
                 final: float | None, *, round_s: int) -> str | None:
    k = SNIA_WINDOW_ROUNDS
    if rounds - first < k:
        return (f"run too short: the SNIA rule needs {k} rounds of {round_s} s after its "
                f"search start ({first * round_s} s); the torture lasted {seconds} s")
    if literal is None:
        return None
    where = (f"the literal SNIA rule's window (rounds {literal.first_round}–"
             f"{literal.first_round + k - 1}, to {literal.at_s} s) averages "
             f"{literal.window_mean:,.0f} IOPS")
    if literal.first_round < first:
        return f"not steady after the cliff ({first * round_s} s); {where}, before it"
    return (f"final-level check: {where}, more than 20% from the level the run ends at "
            f"({final or 0:,.0f} IOPS): a level the drive left is not its steady state")


@dataclass(frozen=True)
class Cliff:
    """Spare-area cliff: the last sharp fall below 50% of the level before it (the plateau)
    that the drive does not recover from (docs/analysis.md "Levels and events")."""

    reference_iops: float | None  # the plateau level (None if the run is shorter than 60 s)
    threshold_iops: float | None
    at_s: int | None  # second where the sustained drop starts; None = not found
    reference_start_s: int | None = None  # where the plateau's window starts
    reference_window_s: int | None = None  # before 2026-11-27: 60 or 3 (the best-mean window)
    final_iops: float | None = None  # the run's final level (the events' final level)
    note: str | None = None  # why the search could not be made (a run too short)
    plateau_s: int | None = None  # how long the plateau before the cliff lasted
    level_after_iops: float | None = None  # the level the cliff falls to
    # the end of fresh-out-of-box (docs/analysis.md "Two falls"): where the drive leaves
    # its first level for good (the cliff's own second when the cliff is that fall), that
    # level's mean, where it starts and how long it lasted; None without such a fall
    fob_end_s: int | None = None
    fob_iops: float | None = None
    fob_start_s: int | None = None
    fob_s: int | None = None

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


def spare_area_cliff(iops: Any, events: Events | None = None) -> Cliff:
    """The spare-area cliff: the last sharp fall below half of the level before it that the
    drive does not recover from by the run's end (:func:`ssdbench.analysis.events.find_events`;
    docs/analysis.md "Levels and events"). Without one, ``reference_iops`` is the highest
    level of at least ``PLATEAU_MIN_S``."""
    arr = as_series(iops)
    if arr.size < PLATEAU_WINDOW_S:
        return Cliff(None, None, None, note=(
            f"run too short for the cliff: it needs {PLATEAU_WINDOW_S} s to tell a plateau "
            f"and a fall the drive does not recover from; the torture lasted {arr.size} s"))
    ev = events if events is not None else find_events(clean_series(arr)[0])
    c = ev.cliff
    f = ev.fob_end
    fob = (None, None, None, None) if f is None else (f.at_s, f.from_level,
                                                       f.plateau_start_s, f.plateau_s)
    if c is not None and c.from_level is not None:
        return Cliff(c.from_level, CLIFF_FRACTION * c.from_level, c.at_s, c.plateau_start_s,
                     None, final_iops=ev.final_level, plateau_s=c.plateau_s,
                     level_after_iops=c.to_level, fob_end_s=fob[0], fob_iops=fob[1],
                     fob_start_s=fob[2], fob_s=fob[3])
    long = [lv for lv in ev.levels if lv.duration_s >= PLATEAU_MIN_S] or list(ev.levels)
    if not long:
        return Cliff(None, None, None, final_iops=ev.final_level)
    best = max(long, key=lambda lv: lv.mean)
    return Cliff(best.mean, CLIFF_FRACTION * best.mean, None, best.start_s, None,
                 final_iops=ev.final_level, plateau_s=best.duration_s, fob_end_s=fob[0],
                 fob_iops=fob[1], fob_start_s=fob[2], fob_s=fob[3])


def clean_series(values: Any) -> tuple[FloatArray, int]:
    """``values`` with every invalid value (negative, infinite) made missing (NaN), and how
    many there were: a negative IOPS or MiB/s is a broken log, never averaged in."""
    arr = as_series(values).copy()
    with np.errstate(invalid="ignore"):
        bad = np.isinf(arr) | (arr < 0)
    arr[bad] = np.nan
    return arr, int(bad.sum())


@dataclass(frozen=True)
class IopsAnalysis:
    """Everything computed from one torture's per-second IOPS."""

    duration_s: int  # seconds in the series (rows of iops.csv)
    missing_seconds: int  # seconds without a value (invalid ones included)
    steady_start_s: float  # the steady window's start (moved to the cliff when after it)
    whole: SeriesStats
    steady: SeriesStats
    stalls: Stalls
    steady_state: SteadyState
    cliff: Cliff
    events: Events | None = None
    invalid_seconds: int = 0  # negative or infinite values, made missing
    planned_steady_start_s: float | None = None  # the window's start before the cliff moved it
    notes: tuple[str, ...] = ()  # missing and invalid seconds, a moved window: named

    def to_dict(self) -> dict[str, Any]:
        return {
            "duration_s": self.duration_s,
            "missing_seconds": self.missing_seconds,
            "invalid_seconds": self.invalid_seconds,
            "steady_start_s": self.steady_start_s,
            "planned_steady_start_s": self.planned_steady_start_s,
            "whole": self.whole.to_dict(),
            "steady": self.steady.to_dict(),
            "stalls": self.stalls.to_dict(),
            "steady_state": self.steady_state.to_dict(),
            "cliff": self.cliff.to_dict(),
            "events": self.events.to_dict() if self.events else None,
            "notes": list(self.notes),
        }


def gap_notes(missing: int, invalid: int, n: int, what: str = "IOPS",
              round_s: int = ROUND_S) -> list[str]:
    """The sentences naming missing and invalid seconds (docs/analysis.md "Gaps")."""
    notes = []
    if invalid:
        notes.append(f"{invalid} second(s) had an invalid {what} value (negative or "
                     "infinite): treated as missing, not averaged in")
    gaps = missing - invalid
    if gaps:
        notes.append(f"{gaps} of {n} second(s) have no value: left out of every mean; a "
                     f"{'minute' if round_s == 60 else f'{round_s}-s round'} counts as a SNIA "
                     "round when at least half of it has values")
    return notes


def analyse_iops(iops: Any, steady_start_s: float | None = None,
                 round_s: int = ROUND_S) -> IopsAnalysis:
    """Whole-run and steady-window statistics, stalls, the events (the cliff, throttles,
    stalls, steps, declines), and SNIA steady state searched from the cliff on (from the
    start when there is no cliff), on the events' final level.

    ``steady_start_s`` None: :func:`default_steady_start` of the series' length. A cliff
    inside the steady window moves the window's start to the cliff: the headline is of one
    level, the one the drive keeps (the planned start is kept in
    ``planned_steady_start_s`` and a note says so). ``round_s``: the SNIA rounds' length.
    """
    arr, invalid = clean_series(iops)
    start = default_steady_start(arr.size) if steady_start_s is None else float(steady_start_s)
    if start < 0:
        raise ValueError(f"steady_start_s must be >= 0, got {start}")
    events = find_events(arr)
    cliff = spare_area_cliff(arr, events)
    missing = int(np.isnan(arr).sum())
    notes = gap_notes(missing, invalid, int(arr.size), round_s=round_s)
    planned = start
    if cliff.at_s is not None and start < cliff.at_s < arr.size:
        start = float(cliff.at_s)
        notes.append(f"the steady window starts at the cliff ({cliff.at_s} s), not at "
                     f"{planned:g} s: the window would have averaged the plateau and the level "
                     "after the cliff")
    steady = series_stats(arr[_steady_slice(arr.size, start)])
    final = events.final_level if events.levels else final_level(arr)
    return IopsAnalysis(
        duration_s=int(arr.size),
        missing_seconds=missing,
        steady_start_s=start,
        whole=series_stats(arr),
        steady=steady,
        stalls=stalls(arr, start, steady.mean),
        steady_state=snia_steady_state(arr, after_s=cliff.at_s or 0, final_iops=final,
                                       round_s=round_s),
        cliff=cliff,
        events=events,
        invalid_seconds=invalid,
        planned_steady_start_s=planned,
        notes=tuple(notes),
    )
