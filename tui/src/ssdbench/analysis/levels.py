"""Levels of a per-second series: change points found by binary segmentation on the
logarithm of the values, with a penalty from the series' own noise, and two cuts at once
(circular binary segmentation) where no single cut passes it: a short throttle under noise
(docs/analysis.md "Levels and events").

Why the logarithm: a drive's per-second noise grows with its level (5% of 30K IOPS is ten
times 5% of 3K), and a fall to half is the same size at any level. Why binary segmentation:
numpy only, O(n) per change point, so a 24-h series of seconds segments in well under a
second.

Seconds that are missing (NaN) are left out (a level may cover them: at least half of the
seconds it covers have a value, the gap rule); seconds below ``STALL_FRACTION`` of the
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


class _Spans:
    """The seconds a segment of the valued seconds may stand for. Segment ``[a, b)``
    (indices into ``pos``, the seconds with a value) lies between the previous valued second
    and the next one: the seconds without a value on either side may be its own (a missing
    second between two levels is of one or the other; :func:`segment` gives it to the
    later one, but a level is not refused for it)."""

    def __init__(self, pos: npt.NDArray[np.intp], n: int, min_len: int) -> None:
        self.lo = np.concatenate(([0], pos[:-1] + 1)).astype(np.int64)  # start of a seg at i
        self.hi = np.concatenate(([0], pos[1:], [n])).astype(np.int64)  # end of one ending at j
        self.min_len = min_len
        self.half = max(1, -(-min_len // 2))

    def valid(self, a: Any, b: Any) -> Any:
        """Whether segments ``[a, b)`` (arrays or ints) may be a level: ``min_len`` seconds
        with a value, or at least half of the ``min_len`` or more seconds they cover (the gap
        rule of docs/analysis.md: a 3-s SLC cache with one second missing is a level of 2
        valued seconds, never a level mixing the cache and the speed after it)."""
        count = np.asarray(b) - np.asarray(a)
        span = self.hi[b] - self.lo[a]
        return (count >= self.min_len) | (
            (count >= self.half) & (span >= self.min_len) & (2 * count >= span))


SCAN_RATIO = 1.15  # the lengths of the two-cut scan: a geometric grid with this ratio
SCAN_MIN_S = 8  # the shortest interval the two-cut scan cuts out: shorter falls are the
# level's noise to the events (a level under 8 s between two others is part of a fall,
# a throttle under 10 s is not named); a 3-s interval would cut out a few outliers of
# heavy-tailed noise
SCAN_CELLS = 1 << 16  # a segment with fewer (length, start) pairs is scanned in one go


def _best_cut(cs: FloatArray, a: int, b: int, spans: _Spans) -> tuple[float, int]:
    """The gain and place of the best single cut of ``[a, b)`` (-inf, -1: none allowed)."""
    m = b - a
    t = np.arange(a + spans.half, b - spans.half + 1)
    edge = (t - a < spans.min_len) | (b - t < spans.min_len)  # only these may be refused
    if edge.any():
        te = t[edge]
        ok = ~edge
        ok[edge] = spans.valid(a, te) & spans.valid(te, b)
        t = t[ok]
    if not t.size:
        return -math.inf, -1
    left = cs[t] - cs[a]
    total = cs[b] - cs[a]
    nl = (t - a).astype(np.float64)
    nr = (b - t).astype(np.float64)
    gain = left * left / nl + (total - left) ** 2 / nr - total * total / m
    k = int(np.argmax(gain))
    return float(gain[k]), int(t[k])


def _interval_gain(cs: FloatArray, a: int, b: int, i: Any, j: Any) -> Any:
    """Gain of cutting ``[i, j)`` out of ``[a, b)`` (two change points, one mean inside and
    one outside): ``(S - L·T/m)² · m / (L·(m − L))``."""
    m = b - a
    total = cs[b] - cs[a]
    length = (np.asarray(j) - np.asarray(i)).astype(np.float64)
    inside = cs[j] - cs[i]
    return (inside - length * total / m) ** 2 * m / (length * (m - length))


def _best_interval(cs: FloatArray, a: int, b: int, spans: _Spans) -> tuple[float, int, int]:
    """The best two cuts ``a < i < j < b`` of ``[a, b)``: circular binary segmentation
    (Olshen et al. 2004), the interval lengths on a geometric grid and the best interval's
    ends then refined second by second. A short throttle in a long level moves the mean of
    either side of any single cut too little to pass the penalty; the interval around it
    does not. O(m log m)."""
    m = b - a
    h = spans.half
    best = (-math.inf, -1, -1)
    lengths: list[int] = []
    length = max(h, SCAN_MIN_S)
    while length <= m - 2 * h:
        lengths.append(length)
        length = max(length + 1, int(length * SCAN_RATIO))
    starts = np.arange(a + h, b - h)
    grid = np.asarray(lengths, dtype=np.int64)
    if lengths and starts.size * grid.size <= SCAN_CELLS:  # a short segment: all at once
        j = starts[None, :] + grid[:, None]
        gain = np.where(j <= b - h, _interval_gain(cs, a, b, starts[None, :],
                                                   np.minimum(j, b)), -np.inf)
        r, col = divmod(int(np.argmax(gain)), starts.size)
        best = (float(gain[r, col]), int(starts[col]), int(starts[col] + grid[r]))
    else:
        for length in lengths:
            i = starts[: starts.size - length + 1]
            gain = _interval_gain(cs, a, b, i, i + length)
            k = int(np.argmax(gain))
            if gain[k] > best[0]:
                best = (float(gain[k]), int(i[k]), int(i[k] + length))
    _, i0, j0 = best
    if i0 < 0:
        return best
    reach = max(2, int((j0 - i0) * (SCAN_RATIO - 1)) + 1)
    for _ in range(2):  # the ends on the grid, then each to the second, in turn
        js = np.arange(max(i0 + SCAN_MIN_S, j0 - reach), min(b - h, j0 + reach) + 1)
        if js.size:
            j0 = int(js[int(np.argmax(_interval_gain(cs, a, b, i0, js)))])
        is_ = np.arange(max(a + h, i0 - reach), min(j0 - SCAN_MIN_S, i0 + reach) + 1)
        if is_.size:
            i0 = int(is_[int(np.argmax(_interval_gain(cs, a, b, is_, j0)))])
    if not (spans.valid(a, i0) and spans.valid(i0, j0) and spans.valid(j0, b)):
        return -math.inf, -1, -1
    return float(_interval_gain(cs, a, b, i0, j0)), i0, j0


def _binseg(y: FloatArray, spans: _Spans, penalty_factor: float) -> list[int]:
    """Cut points of ``y`` (0 and ``y.size`` included). Each segment is split at the point
    that most reduces its sum of squares, while the reduction exceeds ``penalty_factor *
    noise^2 * ln(n)``, where the noise is the segment's own (:func:`_noise`: a noisy level
    needs a larger change to be split); when no single cut does, at the two points that do
    most together (:func:`_best_interval`), while they exceed three times that: the scan
    tries every interval of at least SCAN_MIN_S, so noise alone reaches a larger maximum
    (on flat series with 25% Gaussian or Student-t(3) noise twice gave a spurious short
    level in 1-2 of 40 seeds, three times in none; a 15-s throttle at 30% still passes)."""
    n = y.size
    centred = y - y.mean()
    cs = np.concatenate(([0.0], np.cumsum(centred)))
    log_n = math.log(max(n, 3))
    cuts = [0, n]
    stack = [(0, n)]
    while stack and len(cuts) < MAX_SPLITS:
        a, b = stack.pop()
        if b - a < 2 * spans.half:
            continue
        sigma = _noise(y[a:b])
        limit = penalty_factor * sigma * sigma * log_n
        gain, c = _best_cut(cs, a, b, spans)
        if gain > limit:
            cuts.append(c)
            stack += [(a, c), (c, b)]
            continue
        if b - a < 3 * spans.half:
            continue
        gain, i, j = _best_interval(cs, a, b, spans)
        if gain > 3 * limit:
            cuts += [i, j]
            stack += [(a, i), (i, j), (j, b)]
    return sorted(cuts)


def _merge(bounds: list[list[int]], y: FloatArray, ratio: float, spans: _Spans) -> None:
    """Merge neighbouring segments (``[a, b)`` index pairs, in place) whose log means differ
    by less than ln(ratio), closest pair first, and segments too short to be a level
    (:meth:`_Spans.valid`) into their nearer neighbour."""
    cs = np.concatenate(([0.0], np.cumsum(y)))

    def mean(seg: list[int]) -> float:
        return float((cs[seg[1]] - cs[seg[0]]) / (seg[1] - seg[0]))

    limit = math.log(ratio)
    while len(bounds) > 1:
        means = [mean(s) for s in bounds]
        diffs = [abs(means[i + 1] - means[i]) for i in range(len(bounds) - 1)]
        short = [i for i, s in enumerate(bounds)
                 if s[1] - s[0] < spans.min_len and not spans.valid(s[0], s[1])]
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


def _leading_plateau(bounds: list[list[int]], y: FloatArray, spans: _Spans) -> None:
    """Split off a fresh-out-of-box plateau of 1 or 2 seconds at the very start (shorter than
    a level, so the segmentation cannot find it): the longest ``t`` of 2, 1 whose every
    second is above twice the first level's mean after it (a drive with 7% spare falls off
    its cliff within a second)."""
    a, b = bounds[0]
    for t in (2, 1):
        if b - a < t + spans.half or not spans.valid(a + t, b):
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
    spans = _Spans(keep, int(arr.size), min_len)
    if keep.size < 2 * spans.half:
        bounds = [[0, int(keep.size)]]
    else:
        cuts = _binseg(y, spans, penalty)
        bounds = [[cuts[i], cuts[i + 1]] for i in range(len(cuts) - 1)]
        _merge(bounds, y, merge_ratio, spans)
    _leading_plateau(bounds, y, spans)
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
