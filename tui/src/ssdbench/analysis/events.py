"""Events of a per-second series, from its levels (:mod:`ssdbench.analysis.levels`): the
cliff, throttles, stalls, steps, gradual declines and late falls (docs/analysis.md
"Levels and events").

* A **fall** is a level below the one before it. It is *recovered* when a later level of at
  least ``RECOVERY_MIN_S`` (or the run's last level) comes back to ``RECOVERED_FRACTION``
  of the level before the fall, for at least half as long as it was below.
* A recovered fall is a **throttle** (``THROTTLE_MIN_S`` or longer; shorter ones are part
  of the level's noise): the drive comes back, so it is not the cliff. A fall the run ends
  inside that goes from and to the levels of an earlier throttle is that throttle again.
* A fall is *sharp* when the 10 seconds either side of it account for at least
  ``SHARP_SHARE`` of the fall (on a log scale); a run of falls that are not sharp is a
  **decline** (a smooth decay has no cliff).
* The **cliff** is the last sharp fall that is not recovered and goes below
  ``CLIFF_FRACTION`` of the level before it (AnandTech's reading: the fall the drive does
  not come back from); its plateau is that level (its mean and length). Earlier such falls,
  and smaller unrecovered sharp falls, are **steps**. When no single fall goes that deep but
  sharp unrecovered falls in a row do together (980 -> 703 -> 443), the cliff is the
  chain's first fall, from its plateau down to where the chain ends.
* A fall after the run's last level of at least ``FINAL_MIN_S`` (into levels shorter than
  that together), or in its last ``CLIFF_AFTER_MIN_S``, is a **late fall**: too short to be
  the drive's level, so it does not set the final level (it is named, not hidden), unless
  it goes below ``CLIFF_FRACTION`` and no cliff came before it: a large drive can reach its
  cliff late in the run, but a drive past its cliff that dips at the end has only dipped.
  Past the cliff, a fall the run ends inside before the drive stayed below for
  ``RECOVERY_SHARE`` of the time it held the level before (``FINAL_MIN_S`` or more) is a
  late fall too, however long against a fixed window.
* The **end of fresh-out-of-box** (``Events.fob_end``) is the first sharp fall the drive
  does not recover from (a step, or the cliff itself), never after the cliff: a drive that
  leaves its first level in two falls has its FOB end at the first, its cliff at the last.
* **Stalls** are runs of stall seconds (at 0, or below 1% of the series' median).

Short levels between a higher and a lower one (a fall passing through an intermediate
value for a few seconds) are part of the fall: a level shorter than ``PLATEAU_MIN_S``
cannot be the plateau of a cliff.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.levels import MERGE_RATIO, Level, Segmentation, segment, tail_level

CLIFF_FRACTION = 0.50
RECOVERED_FRACTION = 0.80
RECOVERY_MIN_S = 20
RECOVERY_SHARE = 0.5
THROTTLE_MIN_S = 10
SHARP_SHARE = 0.5
SHARP_WINDOW_S = 10
PLATEAU_MIN_S = 8
FINAL_MIN_S = 300  # five SNIA rounds
CLIFF_AFTER_MIN_S = 10  # a fall in the run's last 10 s is a late fall: too soon to tell
OSCILLATION_SHARE = 0.30
MAX_LISTED = 100  # events listed in run.json / analysis.json; the counts are of all

KINDS = ("cliff", "throttle", "stall", "step", "decline", "late-fall")


@dataclass(frozen=True)
class Event:
    kind: str  # one of KINDS
    at_s: int
    duration_s: int  # throttle: until recovered; stall: its seconds; cliff/step/late: to the end
    from_level: float | None  # the level before (IOPS or MiB/s); None for a stall
    to_level: float | None  # the lowest level reached (a throttle: its deepest)
    plateau_start_s: int | None = None  # the cliff's plateau: where it starts
    plateau_s: int | None = None  # ... and how long it lasted

    @property
    def depth(self) -> float | None:
        if self.from_level is None or self.to_level is None or self.from_level <= 0:
            return None
        return self.to_level / self.from_level

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["depth"] = self.depth
        return d


@dataclass(frozen=True)
class Events:
    events: tuple[Event, ...]  # in time order (every event, see to_dict for the listing)
    levels: tuple[Level, ...]
    cliff: Event | None
    final_level: float | None  # the level the run ends at (:func:`_final`)
    final_start_s: int | None
    noise: float  # per-second noise of ln(value) used for the change points
    stall_threshold: float | None
    # the end of fresh-out-of-box: the first sharp fall the drive does not recover from (the
    # cliff itself when it is the first; a step before the cliff otherwise, or the first
    # step of a run without a cliff); None without one. from_level: the FOB level;
    # plateau_start_s, plateau_s: where it starts and how long the drive held it
    fob_end: Event | None = None

    def of(self, kind: str) -> tuple[Event, ...]:
        return tuple(e for e in self.events if e.kind == kind)

    def summary(self) -> dict[str, Any]:
        throttles = self.of("throttle")
        stalls = self.of("stall")
        return {
            "throttles": len(throttles),
            "throttle_seconds": sum(e.duration_s for e in throttles),
            "deepest_throttle": min((e.depth for e in throttles if e.depth is not None),
                                    default=None),
            "stalls": len(stalls),
            "stall_seconds": sum(e.duration_s for e in stalls),
            "longest_stall_s": max((e.duration_s for e in stalls), default=0),
            "steps": len(self.of("step")),
            "declines": len(self.of("decline")),
            "late_falls": len(self.of("late-fall")),
            # three throttles or more covering 30% of the run: the drive oscillates
            "oscillating": len(throttles) >= 3 and sum(e.duration_s for e in throttles)
            >= OSCILLATION_SHARE * (self.levels[-1].end_s if self.levels else 0),
        }

    def to_dict(self) -> dict[str, Any]:
        listed = sorted(self.events, key=_importance)[:MAX_LISTED]
        return {
            "summary": self.summary(),
            "cliff": self.cliff.to_dict() if self.cliff else None,
            "fob_end": self.fob_end.to_dict() if self.fob_end else None,
            "final_level": self.final_level,
            "final_start_s": self.final_start_s,
            "events": [e.to_dict() for e in sorted(listed, key=lambda e: e.at_s)],
            "events_listed": len(listed),
            "events_total": len(self.events),
            "levels": [lv.to_dict() for lv in self.levels[:MAX_LISTED]],
            "noise": self.noise,
        }


def _importance(e: Event) -> tuple[int, int]:
    rank = {"cliff": 0, "late-fall": 1, "step": 2, "decline": 3, "throttle": 4, "stall": 5}
    return rank.get(e.kind, 9), -e.duration_s


def _joined(a: Level, b: Level) -> Level:
    """Two neighbouring levels as one (either may have no second with a value)."""
    n = a.seconds + b.seconds
    return Level(a.start_s, b.end_s, (a.mean * a.seconds + b.mean * b.seconds) / n, n,
                 (a.log_mean * a.seconds + b.log_mean * b.seconds) / n)


def _level_of(arr: np.ndarray[Any, Any], start: int, end: int,
              stall_threshold: float | None) -> Level:
    """Seconds ``[start, end)`` as a level: the means of those with a value that are not
    stall seconds, as the segmentation counts them."""
    x = arr[start:end]
    x = x[~np.isnan(x) & (x > 0)]
    if stall_threshold is not None:
        x = x[x >= stall_threshold]
    if not x.size:
        return Level(start, end, 0.0, 0, 0.0)
    return Level(start, end, float(x.mean()), int(x.size), float(np.log(x).mean()))


def _absorb_transitions(levels: list[Level], arr: np.ndarray[Any, Any],
                        stall_threshold: float | None) -> list[Level]:
    """A short level between a higher and a lower one (or a lower and a higher one) joins
    the later level: it is the way from one to the other, not a level of its own. Its
    leading seconds that are still at the earlier level (within MERGE_RATIO of it, the rule
    that makes two neighbouring levels one) stay with that one: a level holds at least
    MIN_LEVEL_S seconds, so a throttle that began at 125.35 s (the seconds from 123: 349,
    355, 187, then about 90) came out as a short level from 123, and the throttle two
    seconds early (a CI run of the portable known answer, 2026-11-28)."""
    out = list(levels)
    i = 1
    while i < len(out) - 1:
        prev, cur, nxt = out[i - 1], out[i], out[i + 1]
        monotone = (prev.mean > cur.mean > nxt.mean) or (prev.mean < cur.mean < nxt.mean)
        if cur.duration_s < PLATEAU_MIN_S and monotone:
            k = cur.start_s
            while (k < cur.end_s and prev.mean / MERGE_RATIO <= arr[k] <= prev.mean * MERGE_RATIO
                   and (stall_threshold is None or arr[k] >= stall_threshold)):
                k += 1
            if k > cur.start_s:
                out[i - 1] = _joined(prev, _level_of(arr, cur.start_s, k, stall_threshold))
            if k == cur.end_s:
                del out[i]
                continue
            out[i] = _joined(_level_of(arr, k, cur.end_s, stall_threshold), nxt)
            del out[i + 1]
            continue
        i += 1
    return out


def _sharp(arr: np.ndarray[Any, Any], stall_threshold: float | None, at: int,
           prev: Level, nxt: Level) -> bool:
    """Whether the seconds either side of ``at`` hold at least SHARP_SHARE of the fall."""
    k = SHARP_WINDOW_S
    before = arr[max(prev.start_s, at - k): at]
    after = arr[at: min(nxt.end_s, at + k)]

    def log_mean(x: np.ndarray[Any, Any]) -> float | None:
        x = x[~np.isnan(x)]
        x = x[x > (stall_threshold or 0)] if x.size else x
        x = x[x > 0]
        return float(np.log(x).mean()) if x.size else None

    b, a = log_mean(before), log_mean(after)
    if b is None or a is None:
        return True
    jump = prev.log_mean - nxt.log_mean
    return jump <= 0 or (b - a) >= SHARP_SHARE * jump


def find_events(values: Any, seg: Segmentation | None = None, *,
                cliff_fraction: float = CLIFF_FRACTION, first_cliff: bool = False) -> Events:
    """The events of a per-second series (NaN: missing; values must not be negative).

    ``cliff_fraction``: how deep a fall must go to be the cliff; ``first_cliff``: the cliff
    is the first such fall, not the last (a fill's SLC cache ends at its first)."""
    arr = np.asarray(values, dtype=np.float64)
    seg = seg or segment(arr)
    levels = _absorb_transitions(list(seg.levels), arr, seg.stall_threshold)
    events: list[Event] = [Event("stall", s, n, None, 0.0) for s, n in seg.stall_runs]
    n = int(arr.size)
    final_idx = _final_index(levels)
    if final_idx is not None and n - levels[final_idx].end_s >= FINAL_MIN_S:
        final_idx = None  # the levels after the last long one last long enough to count
    cliff: Event | None = None
    steps: list[Event] = []
    decline: list[int] = []  # indices of consecutive falls that are not sharp

    def flush_decline() -> None:
        if decline:
            first, last = decline[0], decline[-1]
            events.append(Event("decline", levels[first].start_s,
                                levels[last].start_s - levels[first].start_s
                                + levels[last].duration_s,
                                levels[first - 1].mean, levels[last].mean))
            decline.clear()

    i = 1
    while i < len(levels):
        prev, cur = levels[i - 1], levels[i]
        if cur.mean >= prev.mean:
            flush_decline()
            i += 1
            continue
        if _is_burst(levels, i - 1):
            i += 1  # the end of a burst: back to the level before it, not a fall
            continue
        back = _recovered_at(levels, i, prev.mean)
        if back is not None:
            flush_decline()
            low = min(lv.mean for lv in levels[i:back])
            dur = levels[back].start_s - cur.start_s
            if dur >= THROTTLE_MIN_S:
                events.append(Event("throttle", cur.start_s, dur, prev.mean, low))
            i = back + 1
            continue
        shallow = cur.mean >= cliff_fraction * prev.mean
        # past the cliff, a fall the run ends inside before the drive has stayed below for
        # half as long as it held the level before it (since its last unrecovered fall,
        # FINAL_MIN_S at least; the recovery rule's RECOVERY_SHARE) is a dip: the run has
        # not shown the drive stays there, so the final level is the one it fell from
        held = cur.start_s - max(e.at_s for e in [cliff, *steps]) if cliff is not None else 0
        dip = (cliff is not None and held >= FINAL_MIN_S
               and n - cur.start_s < RECOVERY_SHARE * held)
        at_end = n - cur.start_s < CLIFF_AFTER_MIN_S
        if ((final_idx is not None and i > final_idx and (shallow or cliff is not None))
                or at_end or dip):
            flush_decline()
            events.append(Event("late-fall", cur.start_s, n - cur.start_s, prev.mean,
                                min(lv.mean for lv in levels[i:])))
            # the level the drive fell from is the final level: a dip, or a fall in the
            # run's last seconds (a run shorter than FINAL_MIN_S has no long level to keep,
            # and its last level, however short, was taken: a 3-s dip of the host at the
            # end of a 150-s run made the final level 134 IOPS of 232 and "no steady state")
            if (dip and (final_idx is None or final_idx >= i)) or (
                    at_end and final_idx is not None and final_idx >= i):
                final_idx = _final_index(levels[:i])
            break
        again = _same_throttle(events, prev.mean, cur.mean)
        if again is not None:
            flush_decline()  # the run ends inside a throttle it has had before
            events.append(Event("throttle", cur.start_s, n - cur.start_s, prev.mean,
                                min(lv.mean for lv in levels[i:])))
            break
        if not _sharp(arr, seg.stall_threshold, cur.start_s, prev, cur):
            decline.append(i)
            i += 1
            continue
        flush_decline()
        kind = "cliff" if (not shallow and (prev.duration_s >= PLATEAU_MIN_S or i == 1)
                           and not (first_cliff and cliff is not None)) else "step"
        ev = Event(kind, cur.start_s, n - cur.start_s, prev.mean, cur.mean,
                   prev.start_s, prev.duration_s)
        if kind == "cliff":
            if cliff is not None:
                steps.append(Event("step", cliff.at_s, cliff.duration_s, cliff.from_level,
                                   cliff.to_level, cliff.plateau_start_s, cliff.plateau_s))
            cliff = ev
        else:
            steps.append(ev)
        i += 1
    flush_decline()
    if cliff is None:
        cliff = _chained_cliff(steps, n, cliff_fraction)
    events.extend(steps)
    if cliff is not None:
        events.append(cliff)
    events.sort(key=lambda e: (e.at_s, e.kind))
    final_mean, final_start = _final(levels, final_idx, cliff, arr)
    # the end of fresh-out-of-box: the first sharp fall the drive does not come back from
    # (a step, or the cliff), never after the cliff
    falls = [e for e in [*steps, cliff] if e is not None
             and (cliff is None or e.at_s <= cliff.at_s)]
    fob = min(falls, key=lambda e: e.at_s) if falls else None
    return Events(tuple(events), tuple(levels), cliff, final_mean, final_start,
                  seg.noise, seg.stall_threshold, fob)


def _chained_cliff(steps: list[Event], n: int, fraction: float) -> Event | None:
    """No single fall went below ``fraction``, but sharp unrecovered falls in a row did
    together (980 -> 703 -> 443 IOPS: 72% then 63%, 45% in all): the cliff is the chain's
    first fall, from a plateau (``PLATEAU_MIN_S`` or the run's start), down to where the
    chain ends; the falls after the first stay steps. Taken out of ``steps``."""
    for k, first in enumerate(steps):
        if first.plateau_s is None or first.from_level is None or (
                first.plateau_s < PLATEAU_MIN_S and first.plateau_start_s != 0):
            continue
        for later in steps[k + 1:]:
            if later.to_level is not None and later.to_level < fraction * first.from_level:
                steps.pop(k)
                return Event("cliff", first.at_s, n - first.at_s, first.from_level,
                             later.to_level, first.plateau_start_s, first.plateau_s)
    return None


def _final(levels: list[Level], final_idx: int | None, cliff: Event | None,
           arr: np.ndarray[Any, Any]) -> tuple[float | None, int | None]:
    """(the final level, where it starts): the last level of FINAL_MIN_S or more when the
    levels after it are shorter together (a late fall); the last level when a cliff comes
    after it; else the median of the last five minutes' means (:func:`tail_level`) from
    FINAL_MIN_S before the end."""
    if not levels:
        return None, None
    if final_idx is not None:
        final = levels[final_idx]
        if cliff is not None and cliff.at_s > final.start_s:
            final = levels[-1]  # a cliff after the last long level: the run ends below it
        return final.mean, final.start_s
    return tail_level(arr), max(0, int(arr.size) - FINAL_MIN_S)


def _recovered_at(levels: list[Level], i: int, before: float) -> int | None:
    """Index of the first level after ``i`` from which the drive stays at
    RECOVERED_FRACTION of ``before`` or more for at least RECOVERY_SHARE of the time it was
    below it, or to the run's end, and at least RECOVERY_MIN_S or to the end (a short burst
    back up after a long fall is not a recovery; a drive that throttles half the time
    recovers each time)."""
    end = levels[-1].end_s
    for j in range(i + 1, len(levels)):
        if levels[j].mean < RECOVERED_FRACTION * before:
            continue
        below = levels[j].start_s - levels[i].start_s
        k = j
        while k < len(levels) and levels[k].mean >= RECOVERED_FRACTION * before:
            k += 1
        held = (levels[k].start_s if k < len(levels) else end) - levels[j].start_s
        to_end = k == len(levels)
        if (held >= RECOVERY_SHARE * below or to_end) and (held >= RECOVERY_MIN_S or to_end):
            return j
    return None


def _same_throttle(events: list[Event], before: float, after: float) -> Event | None:
    """An earlier throttle from and to the same levels (within MERGE_RATIO): a fall the run
    ends inside is then that throttle again, not the cliff (a drive that oscillates)."""
    for e in events:
        if (e.kind == "throttle" and e.from_level and e.to_level
                and max(e.from_level, before) < MERGE_RATIO * min(e.from_level, before)
                and max(e.to_level, after) < MERGE_RATIO * min(e.to_level, after)):
            return e
    return None


def _is_burst(levels: list[Level], i: int) -> bool:
    """A level above both neighbours, shorter than half the one before it (else it is a
    recovery), that ends back within MERGE_RATIO of the level before it: a burst, not a
    plateau."""
    if i <= 0 or i >= len(levels) - 1:
        return False
    prev, cur, nxt = levels[i - 1], levels[i], levels[i + 1]
    return (cur.mean > prev.mean and cur.mean > nxt.mean
            and cur.duration_s < RECOVERY_SHARE * prev.duration_s
            and max(prev.mean, nxt.mean) < MERGE_RATIO * min(prev.mean, nxt.mean))


def _final_index(levels: list[Level]) -> int | None:
    """The last level lasting FINAL_MIN_S or more when only shorter levels follow it (the
    run's final level); the last level when none lasts that long; None without levels."""
    if not levels:
        return None
    for j in range(len(levels) - 1, -1, -1):
        if levels[j].duration_s >= FINAL_MIN_S:
            return j
    return len(levels) - 1

