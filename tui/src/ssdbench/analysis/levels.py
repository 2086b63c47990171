"""Levels of a per-second series: change points found by binary segmentation on the
logarithm of the values, with a penalty from the series' own noise (docs/analysis.md
"Levels and events").

Why the logarithm: a drive's per-second noise grows with its level (5% of 30K IOPS is ten
times 5% of 3K), and a fall to half is the same size at any level. Why binary segmentation:
numpy only, O(n) per change point, so a 24-h series of seconds segments in well under a
second.

Seconds that are missing (NaN) are left out; seconds below ``STALL_FRACTION`` of the
series' median are *stall seconds*: left out of the levels (a stall is an event of its own,
not a level) and returned as runs.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]

STALL_FRACTION = 0.01  # a second below 1% of the series' median (or at 0) is a stall second
MIN_LEVEL_S = 3  # a level holds at least 3 seconds with a value
PENALTY = 3.0  # a split must explain more than PENALTY * noise^2 * ln(n) of the squares
NOISE_FLOOR = 0.005  # the noise of a perfectly flat series is taken as 0.5%
MERGE_RATIO = 1.25  # neighbouring levels within 25% of each other are one level
MAX_SPLITS = 2000  # a bound on the work for a pathological series


@dataclass(frozen=True)
class Level:
    """Seconds ``[start_s, end_s)`` at one level; ``mean`` is the arithmetic mean of its
    seconds with a value that are not stall seconds (``seconds`` of them)."""

    start_s: int
    end_s: int
    mean: float
    seconds: int
    log_mean: float  # mean of the natural logarithm of those seconds (the segmentation's)

    @property
    def duration_s(self) -> int:
        return self.end_s - self.start_s

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("log_mean")
        return d


@dataclass(frozen=True)
class Segmentation:
    levels: tuple[Level, ...]
    stall_runs: tuple[tuple[int, int], ...]  # (start_s, seconds) of each run of stall seconds
    stall_threshold: float | None  # below this a second is a stall second
    noise: float  # the noise used for the penalty: standard deviation of ln(value) per second
    missing_seconds: int


def stall_mask(arr: FloatArray, median: float) -> npt.NDArray[np.bool_]:
    """The stall seconds of ``arr`` (NaN compares False): at or below 0, or below
    STALL_FRACTION of ``median`` (the series' median of the seconds with a value)."""
    with np.errstate(invalid="ignore"):
        low = arr <= 0
        if median > 0:
            low |= arr < STALL_FRACTION * median
    return np.asarray(low, dtype=np.bool_)


def runs_of(mask: npt.NDArray[np.bool_]) -> list[tuple[int, int]]:
    """(start, length) of every run of True in ``mask``."""
    if mask.size == 0 or not mask.any():
        return []
    edges = np.diff(np.concatenate(([0], mask.astype(np.int8), [0])))
    starts = np.flatnonzero(edges == 1)
    ends = np.flatnonzero(edges == -1)
    return [(int(s), int(e - s)) for s, e in zip(starts, ends, strict=True)]


def tail_level(arr: FloatArray, minutes: int = 5, round_s: int = 60) -> float | None:
    """The median of the mean of each of the series' last ``minutes`` minutes, counted back
    from its end (``[n - 60(j+1), n - 60j)``; fewer in a shorter series; a minute with fewer
    than half of its seconds present is skipped): a level that a burst of up to two
    minutes does not move. None: no whole minute."""
    means = []
    for j in range(minutes):
        if arr.size < round_s * (j + 1):
            break
        minute = arr[arr.size - round_s * (j + 1): arr.size - round_s * j]
        vals = minute[~np.isnan(minute)]
        if 2 * vals.size >= round_s:
            means.append(float(vals.mean()))
    return float(np.median(means)) if means else None


def _noise(y: FloatArray) -> float:
    """Standard deviation of one second's ln(value) around its level, from the first
    differences (a level change adds one difference, noise adds to every one)."""
    if y.size < 3:
        return NOISE_FLOOR
    return max(float(np.std(np.diff(y))) / math.sqrt(2), NOISE_FLOOR)


def _binseg(y: FloatArray, min_len: int, penalty_factor: float) -> list[int]:
    """Cut points of ``y`` (0 and ``y.size`` included): each segment is split at the point
    that most reduces its sum of squares, while the reduction exceeds
    ``penalty_factor * noise^2 * ln(n)``, where the noise is the segment's own
    (:func:`_noise`): a noisy level needs a larger change to be split."""
    n = y.size
    centred = y - y.mean()
    cs = np.concatenate(([0.0], np.cumsum(centred)))
    log_n = math.log(max(n, 3))
    cuts = [0, n]
    stack = [(0, n)]
    while stack and len(cuts) < MAX_SPLITS:
        a, b = stack.pop()
        m = b - a
        if m < 2 * min_len:
            continue
        t = np.arange(a + min_len, b - min_len + 1)
        left = cs[t] - cs[a]
        total = cs[b] - cs[a]
        nl = (t - a).astype(np.float64)
        nr = (b - t).astype(np.float64)
        gain = left * left / nl + (total - left) ** 2 / nr - total * total / m
        k = int(np.argmax(gain))
        sigma = _noise(y[a:b])
        if gain[k] <= penalty_factor * sigma * sigma * log_n:
            continue
        c = int(t[k])
        cuts.append(c)
        stack.append((a, c))
        stack.append((c, b))
    return sorted(cuts)


def _merge(bounds: list[list[int]], y: FloatArray, ratio: float, min_len: int) -> None:
    """Merge neighbouring segments (``[a, b)`` index pairs, in place) whose log means differ
    by less than ln(ratio), closest pair first, and segments shorter than ``min_len`` into
    their nearer neighbour."""
    cs = np.concatenate(([0.0], np.cumsum(y)))

    def mean(seg: list[int]) -> float:
        return float((cs[seg[1]] - cs[seg[0]]) / (seg[1] - seg[0]))

    limit = math.log(ratio)
    while len(bounds) > 1:
        means = [mean(s) for s in bounds]
        diffs = [abs(means[i + 1] - means[i]) for i in range(len(bounds) - 1)]
        short = [i for i, s in enumerate(bounds) if s[1] - s[0] < min_len]
        if short:
            i = short[0]
            if i == 0:
                j = 0
            elif i == len(bounds) - 1:
                j = i - 1
            else:
                j = i - 1 if diffs[i - 1] <= diffs[i] else i
        else:
            j = int(np.argmin(diffs))
            if diffs[j] >= limit:
                return
        bounds[j] = [bounds[j][0], bounds[j + 1][1]]
        del bounds[j + 1]


def _leading_plateau(bounds: list[list[int]], y: FloatArray) -> None:
    """Split off a fresh-out-of-box plateau of 1 or 2 seconds at the very start (shorter than
    a level, so the segmentation cannot find it): the longest ``t`` of 2, 1 whose every
    second is above twice the first level's mean after it (a drive with 7% spare falls off
    its cliff within a second)."""
    a, b = bounds[0]
    for t in (2, 1):
        if b - a < t + MIN_LEVEL_S:
            continue
        rest = float(np.log(np.exp(y[a + t: b]).mean()))
        if float(y[a: a + t].min()) > rest + math.log(2):
            bounds[0:1] = [[a, a + t], [a + t, b]]
            return


def segment(values: Any, *, merge_ratio: float = MERGE_RATIO, min_len: int = MIN_LEVEL_S,
            penalty: float = PENALTY) -> Segmentation:
    """The levels and stall runs of a per-second series (NaN: a missing second). Negative
    or infinite values are the caller's to reject (:func:`ssdbench.analysis.clean_series`)."""
    arr = np.asarray(values, dtype=np.float64)
    present = ~np.isnan(arr)
    missing = int((~present).sum())
    if not present.any():
        return Segmentation((), (), None, NOISE_FLOOR, missing)
    median = float(np.median(arr[present]))
    threshold = STALL_FRACTION * median if median > 0 else None
    stall = present & stall_mask(arr, median)
    stall_runs = tuple(runs_of(stall))
    keep = np.flatnonzero(present & ~stall)
    if keep.size == 0:
        return Segmentation((), stall_runs, threshold, NOISE_FLOOR, missing)
    y = np.log(arr[keep])
    if keep.size < 2 * min_len:
        bounds = [[0, int(keep.size)]]
    else:
        cuts = _binseg(y, min_len, penalty)
        bounds = [[cuts[i], cuts[i + 1]] for i in range(len(cuts) - 1)]
        _merge(bounds, y, merge_ratio, min_len)
    _leading_plateau(bounds, y)
    levels = []
    for i, (a, b) in enumerate(bounds):
        # a level ends after its last second; the stall and missing seconds between two
        # levels belong to the later one, so a fall is placed where the earlier level ends
        start = 0 if i == 0 else int(keep[bounds[i - 1][1] - 1]) + 1
        end = int(arr.size) if i == len(bounds) - 1 else int(keep[b - 1]) + 1
        vals = arr[keep[a:b]]
        levels.append(Level(start, end, float(vals.mean()), int(b - a),
                            float(y[a:b].mean())))
    return Segmentation(tuple(levels), stall_runs, threshold, _noise(y), missing)
