"""The SNIA PTS tests' own views of a run (docs/pts.md): write saturation (WSAT) — IOPS
against the total gigabytes written from the purge on.

Pure functions over a per-second IOPS series (``analysis.iops``: NaN marks a second
without a value); every result is a frozen dataclass with ``to_dict()``.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import asdict, dataclass, field
from functools import cached_property
from typing import Any

import numpy as np

from ssdbench.analysis.iops import (
    FloatArray,
    IopsAnalysis,
    as_series,
    minute_rounds,
    true_runs,
)

GB = 1e9  # the PTS counts gigabytes written in decimal units


def _no_nan(values: Any) -> FloatArray:
    """A copy of the series with each second without a value as 0 (no writes counted)."""
    arr = as_series(values)
    return np.asarray(np.where(np.isnan(arr), 0.0, arr), dtype=np.float64)


def written_gb(iops: Any, io_bytes: int, last_fraction: float = 1.0) -> FloatArray:
    """Total GB written at the end of each second (TGBW): the running sum of the IOPS times
    the bytes per write; a second without a value adds nothing (counted by the caller as
    missing). ``last_fraction``: how much of the last second the job ran (fio logs a cut
    last second as a rate per second)."""
    arr = _no_nan(iops)
    if arr.size:
        arr[-1] *= min(max(last_fraction, 0.0), 1.0)
    return np.asarray(np.cumsum(arr) * io_bytes / GB, dtype=np.float64)


def last_second_fraction(seconds: int, runtime_s: float | None) -> float:
    """The part of the last of ``seconds`` logged seconds that a job of ``runtime_s`` ran
    (1 when unknown or whole)."""
    if runtime_s is None or seconds <= 0 or not math.isfinite(runtime_s):
        return 1.0
    part = runtime_s - (seconds - 1)
    return part if 0 < part < 1 else 1.0


@dataclass(frozen=True)
class WsatRound:
    index: int  # 0-based
    end_s: int  # the round's end, seconds from the start
    written_gb: float  # TGBW at its end
    iops: float | None  # its mean (None: too many seconds missing)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Wsat:
    """A WSAT run: how much was written and what ended it, the fresh-out-of-box level, where
    the cliff fell in gigabytes written, the steady state and the final level."""

    span_bytes: int
    io_bytes: int  # bytes per write
    goal_multiple: float | None  # the plan's wsat_capacity_multiple (None: not recorded)
    seconds: int
    written_gb: float
    capacity_written: float  # written_gb / span, in capacities
    ended_by: str  # capacity (the goal reached), time (wsat_seconds), unknown
    fob_iops: float | None  # mean of the first round (fresh out of box)
    cliff_at_s: int | None
    cliff_written_gb: float | None  # TGBW where the cliff falls
    cliff_capacity: float | None  # the same in capacities written
    steady_iops: float | None  # the SNIA steady-state window's mean
    steady_at_s: int | None
    steady_written_gb: float | None
    final_iops: float | None  # the last five rounds' mean (fewer when the run is shorter)
    round_s: int
    rounds: tuple[WsatRound, ...]
    note: str | None = None
    last_fraction: float = 1.0  # how much of the last logged second the writes ran
    # the end of fresh-out-of-box (docs/analysis.md "Two falls"): where the drive leaves its
    # first level for good, in seconds, GB written and capacities, and that level's mean
    # (fob_iops is the first round's mean). The cliff above is the final fall into the
    # steady state: a drive that leaves 100K at 1.0 capacity and falls again from 40K at
    # 1.6 has its FOB end at 1.0 from 100K and its cliff at 1.6 from 40K
    fob_end_s: int | None = None
    fob_end_written_gb: float | None = None
    fob_end_capacity: float | None = None
    fob_level_iops: float | None = None
    # TGBW at the end of each second (written_gb): for the chart and wsat.csv; not in
    # to_dict (wsat.csv holds it)
    curve: FloatArray = field(default_factory=lambda: np.empty(0), repr=False,
                              compare=False)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.pop("curve")
        d["rounds"] = [r.to_dict() for r in self.rounds]
        return d


def _at(curve: FloatArray, second: int | None) -> float | None:
    """TGBW when ``second`` begins (the writes of the seconds before it)."""
    if second is None or curve.size == 0:
        return None
    return 0.0 if second <= 0 else float(curve[min(second, curve.size) - 1])


def wsat(iops: Any, it: IopsAnalysis, *, span_bytes: int, io_bytes: int,
         goal_multiple: float | None, fio_bytes: int | None = None,
         reached: bool | None = None, runtime_s: float | None = None) -> Wsat:
    """The WSAT view of a run's per-second IOPS and its analysis (``it``: the cliff, the
    steady state and its rounds' length). ``fio_bytes`` and ``reached``: what fio itself
    says it wrote and whether that reached the goal (run.json ``goal.wsat``); without them
    the total is the per-second series' and ``ended_by`` is "capacity" when it reached the
    goal within one second of writes, "time" when not, "unknown" without a goal.
    ``runtime_s``: fio's runtime, so a cut last second counts only its part."""
    if span_bytes <= 0 or io_bytes <= 0:
        raise ValueError(f"WSAT needs a span and a write size > 0, got {span_bytes}, {io_bytes}")
    arr = as_series(iops)
    part = last_second_fraction(int(arr.size), runtime_s)
    curve = written_gb(arr, io_bytes, part)
    total = float(curve[-1]) if curve.size else 0.0
    if fio_bytes is not None:
        total = fio_bytes / GB  # fio's own count: a second cut at the end still counts
    span_gb = span_bytes / GB
    round_s = it.steady_state.round_s
    means = minute_rounds(arr, round_s)
    rounds = tuple(
        WsatRound(i, (i + 1) * round_s, float(curve[(i + 1) * round_s - 1]),
                  None if math.isnan(m) else float(m))
        for i, m in enumerate(means))
    valid = [r.iops for r in rounds if r.iops is not None]
    last = [r.iops for r in rounds[-5:] if r.iops is not None]
    ended = "unknown"
    note = None
    if goal_multiple is not None:
        goal_gb = goal_multiple * span_gb
        step = float(np.nanmax(arr)) * io_bytes / GB if np.isfinite(arr).any() else 0.0
        if reached is None:
            reached = total + step >= goal_gb
        ended = "capacity" if reached else "time"
        if ended == "time":
            note = (f"wsat_seconds ended the run after {total:,.2f} GB "
                    f"({total / span_gb:.2f} × the capacity) of the {goal_gb:,.2f} GB goal")
    ss = it.steady_state
    cliff = it.cliff.at_s
    cliff_gb = _at(curve, cliff)
    fob_end = it.cliff.fob_end_s
    fob_gb = _at(curve, fob_end)
    return Wsat(
        span_bytes=span_bytes, io_bytes=io_bytes, goal_multiple=goal_multiple,
        seconds=int(arr.size), written_gb=total, capacity_written=total / span_gb,
        ended_by=ended, fob_iops=valid[0] if valid else None, cliff_at_s=cliff,
        cliff_written_gb=cliff_gb,
        cliff_capacity=None if cliff_gb is None else cliff_gb / span_gb,
        steady_iops=ss.window_mean if ss.reached else None,
        steady_at_s=ss.at_s, steady_written_gb=_at(curve, ss.at_s),
        final_iops=sum(last) / len(last) if last else None, round_s=round_s,
        rounds=rounds, note=note, last_fraction=part, fob_end_s=fob_end,
        fob_end_written_gb=fob_gb, fob_end_capacity=None if fob_gb is None else fob_gb / span_gb,
        fob_level_iops=it.cliff.fob_iops, curve=curve)


# ---- host idle recovery (HIR) ----------------------------------------------------------------


STRAGGLER_FRACTION = 0.01  # an idle second's few late writes: not a burst


def _burst_floor(arr: FloatArray, baseline: float | None) -> float:
    """Writes a second must exceed to be a burst second: STRAGGLER_FRACTION of the drive's
    own baseline (its steady level before the idle periods); without one, of the median of
    the seconds with writes. Never of the busiest second: a drive whose SLC cache makes the
    first second after a long idle 125x its baseline would have every other burst second
    under 1% of that second, and no burst found."""
    if baseline is not None and math.isfinite(baseline) and baseline > 0:
        return STRAGGLER_FRACTION * baseline
    busy = arr[arr > 0]
    return STRAGGLER_FRACTION * float(np.median(busy)) if busy.size else 0.0


def bursts(iops: Any, baseline: float | None = None, *, burst_s: int | None = None,
           wait_s: int | None = None) -> list[tuple[int, int]]:
    """The bursts of a series: runs ``[start, end)`` of seconds with writes above 1% of the
    baseline (:func:`_burst_floor`: an idle second where a few writes completed late is not
    a burst; a second with no value counts as one without).

    With fio's schedule (``burst_s`` of writes, then ``wait_s`` idle), runs are joined into
    one burst when the seconds without writes between them are fewer than ``wait_s`` - 1
    (fio's idle period covers at least that many whole seconds) or when together they fit
    in one burst (``burst_s`` + 1 seconds: a burst that starts inside a second spans one
    more): a second without writes inside a burst is the drive stalling, not an idle."""
    arr = _no_nan(iops)
    if arr.size == 0:
        return []
    starts, ends = true_runs(arr > _burst_floor(arr, baseline))
    runs = list(zip(starts.tolist(), ends.tolist(), strict=True))
    if burst_s is None or not runs:
        return runs
    idle_min = max((wait_s or 1) - 1, 1)
    merged = [runs[0]]
    for a, b in runs[1:]:
        first, last = merged[-1]
        if a - last < idle_min or b - first <= burst_s + 1:
            merged[-1] = (first, b)
        else:
            merged.append((a, b))
    return merged


@dataclass(frozen=True)
class HirState:
    """One idle period of a HIR run: its bursts after the first, their IOPS and how that
    compares with the level before the idle periods; the return to the baseline after it."""

    wait_s: int
    bursts: int  # bursts measured: the first (it runs on from the writes before) and a cut
    # last one are left out; a burst the drive stalled through counts (at no writes)
    burst_iops: float | None  # writes in those bursts / (bursts x burst_s): the PTS's IOPS
    # over all bursts, the drive's stall seconds inside them included
    recovery: float | None  # burst_iops / the baseline
    base_iops: float | None  # the return to the baseline: its mean over whole seconds
    vs_return: float | None = None  # burst_iops / base_iops: what the idle won over writing on
    stall_seconds: int = 0  # seconds without writes inside the counted bursts (whole bursts
    # the drive stalled through count burst_s each)
    note: str | None = None  # names the stall seconds and the bursts stalled through

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


@dataclass(frozen=True)
class Hir:
    burst_s: int
    baseline_iops: float | None  # the WSAT's final level: the steady level before the idles
    states: tuple[HirState, ...]
    notes: tuple[str, ...] = ()
    # each state's (idle s, the idle period's writes per second, its return's): what the
    # states were computed from, kept for the chart; not in to_dict (the CSVs hold them)
    series: tuple[tuple[int, FloatArray, FloatArray], ...] = field(
        default=(), repr=False, compare=False)

    def to_dict(self) -> dict[str, Any]:
        return {"burst_s": self.burst_s, "baseline_iops": self.baseline_iops,
                "states": [s.to_dict() for s in self.states], "notes": list(self.notes)}


def hir_state(wait_s: int, idle: Any, base: Any, *, burst_s: int,
              baseline: float | None) -> HirState:
    """The bursts of one idle period's series (``idle``: writes per second) and the mean of
    its return to the baseline (``base``), as the SNIA PTS counts them: the IOPS over all
    bursts, each ``burst_s`` long, the drive's stall seconds inside them included.

    Bursts are found with :func:`bursts` on fio's schedule (a second without writes inside
    a burst does not split it) against 1% of the drive's own baseline (else of the return's
    mean). The first burst (it runs on from the writes before, through fio's first idle) is
    left out, and so is a last one shorter than ``burst_s`` (cut by the job's end). A gap
    between two bursts that holds one or more whole periods (``burst_s`` + ``wait_s``) more
    is bursts the drive stalled through: counted at no writes, named in ``note``."""
    arr = _no_nan(idle)
    base_arr = as_series(base)
    base_mean = float(np.nanmean(base_arr)) if np.isfinite(base_arr).any() else None
    floor_ref = baseline if baseline else base_mean
    found = bursts(arr, floor_ref, burst_s=burst_s, wait_s=wait_s)[1:]
    if found and found[-1][1] - found[-1][0] < burst_s:
        found = found[:-1]  # cut by the job's end
    period = burst_s + wait_s
    lost = sum(max(int((b[0] - a[0]) / period + 0.5) - 1, 0)
               for a, b in itertools.pairwise(found))
    floor = _burst_floor(arr, floor_ref)
    stalled = sum(int((arr[a:b] <= floor).sum()) for a, b in found) + lost * burst_s
    writes = sum(float(arr[a:b].sum()) for a, b in found)
    count = len(found) + lost
    rate = writes / (count * burst_s) if count else None
    recovery = rate / baseline if rate is not None and baseline else None
    vs_return = rate / base_mean if rate is not None and base_mean else None
    note = None
    if stalled:
        note = (f"{stalled} second(s) without writes inside the bursts"
                + (f" ({lost} burst(s) stalled through)" if lost else "")
                + ": counted in the burst IOPS at no writes, as the PTS counts every burst")
    return HirState(wait_s, count, rate, recovery, base_mean, vs_return, stalled, note)


# The figures a round records for each workload (stages/pts.py ``figures``)
ROUND_FIGURES = ("iops", "mib_s", "lat_mean_us", "lat_p99999_us", "lat_max_us")
LOOP_METRICS = ("iops", "mib_s", "lat_mean_us")


@dataclass(frozen=True)
class LoopWorkload:
    name: str  # e.g. rnd-4k-65_35
    read_percent: int
    block_size: str  # fio's form: 1m, 128k, 4k, 512
    sequential: bool

    @property
    def mix(self) -> str:
        return f"{self.read_percent}/{100 - self.read_percent}"


@dataclass(frozen=True)
class PtsLoop:
    """One SNIA PTS round loop of a run (run.json ``pts.<name>``, written round by round by
    stages/pts.py): every round's figures per workload, the tracking variable's steady
    state, and the measurement window: the five rounds that were steady, or the last five
    when the loop ran out of rounds (marked not steady)."""

    name: str  # "iops", "latency", "throughput-1m", ...
    test: str  # iops | latency | throughput
    block_size: str | None  # throughput's
    round_s: int
    max_rounds: int
    tracking: str  # the workload whose metric decides steady state
    metric: str  # iops | mib_s | lat_mean_us
    workloads: tuple[LoopWorkload, ...]
    rounds: tuple[dict[str, dict[str, float | None]], ...]  # round -> workload -> figures
    reached: bool | None  # None: the loop did not end (the run was cut short)
    window: tuple[int, int] | None  # first and last round (1-based) of the window
    skipped: tuple[str, ...] = ()
    window_mean: float | None = None
    window_range: float | None = None
    window_slope_excursion: float | None = None
    # the other workloads that had to be steady in the same window (PTS-E 2.0's IOPS test:
    # 64 KiB 65/35 and 1 MiB 100/0 beside 4 KiB writes); empty in runs before 2026-11-28
    also_tracking: tuple[str, ...] = ()

    def tracked(self) -> list[float | None]:
        return [r.get(self.tracking, {}).get(self.metric) for r in self.rounds]

    @cached_property
    def window_figures(self) -> dict[str, dict[str, float | None]]:
        """Each workload's figures over the window: the mean of its rounds, the maximum
        for the maximum latency; empty without a window (computed once: the report's
        tables, charts, CSVs and run.json all read it)."""
        if self.window is None:
            return {}
        chosen = self.rounds[self.window[0] - 1:self.window[1]]
        out: dict[str, dict[str, float | None]] = {}
        for w in self.workloads:
            figs: dict[str, float | None] = {}
            for key in ROUND_FIGURES:
                vals = [v for r in chosen if (v := r.get(w.name, {}).get(key)) is not None]
                if not vals:
                    figs[key] = None
                else:
                    figs[key] = max(vals) if key == "lat_max_us" else sum(vals) / len(vals)
            out[w.name] = figs
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "test": self.test, "block_size": self.block_size,
                "round_s": self.round_s, "rounds": len(self.rounds),
                "max_rounds": self.max_rounds, "tracking": self.tracking,
                "metric": self.metric, "also_tracking": list(self.also_tracking),
                "reached": self.reached,
                "window": list(self.window) if self.window else None,
                "window_mean": self.window_mean, "window_range": self.window_range,
                "window_slope_excursion": self.window_slope_excursion,
                "skipped": list(self.skipped), "window_figures": self.window_figures}


class LoopRecordError(ValueError):
    """run.json's ``pts`` entry is not what stages/pts.py writes."""


def _num(value: Any, what: str) -> float | None:
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value):
        raise LoopRecordError(f"{what} is {value!r}, not a number")
    if value < 0:
        raise LoopRecordError(f"{what} is {value!r}, below zero")
    return float(value)


def _whole(value: Any, what: str, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not low <= value <= high:
        raise LoopRecordError(f"{what} is {value!r}, not a whole number from {low} to {high}")
    return value


def _text(value: Any, what: str) -> str:
    if not isinstance(value, str) or not value or len(value) > 64:
        raise LoopRecordError(f"{what} is {value!r}, not a short name")
    return value


def pts_loop(name: str, entry: Any) -> PtsLoop:
    """The loop from its run.json entry, checked field by field (a record is untrusted
    input: a damaged or edited one raises :class:`LoopRecordError` naming the field)."""
    at = f"pts.{name}"
    if not isinstance(entry, dict):
        raise LoopRecordError(f"{at} is not an object")
    test = entry.get("test")
    if test not in ("iops", "latency", "throughput"):
        raise LoopRecordError(f"{at}.test is {test!r}")
    metric = entry.get("metric")
    if metric not in LOOP_METRICS:
        raise LoopRecordError(f"{at}.metric is {metric!r}")
    round_s = _whole(entry.get("round_s"), f"{at}.round_s", 1, 3600)
    max_rounds = _whole(entry.get("max_rounds"), f"{at}.max_rounds", 5, 100)
    tracking = _text(entry.get("tracking"), f"{at}.tracking")
    raw_wl = entry.get("workloads")
    if not isinstance(raw_wl, list) or not raw_wl:
        raise LoopRecordError(f"{at}.workloads is not a list of workloads")
    workloads = []
    for i, w in enumerate(raw_wl):
        if not isinstance(w, dict):
            raise LoopRecordError(f"{at}.workloads[{i}] is not an object")
        workloads.append(LoopWorkload(
            _text(w.get("name"), f"{at}.workloads[{i}].name"),
            _whole(w.get("read_percent"), f"{at}.workloads[{i}].read_percent", 0, 100),
            _text(w.get("block_size"), f"{at}.workloads[{i}].block_size"),
            bool(w.get("sequential"))))
    names = {w.name for w in workloads}
    if tracking not in names:
        raise LoopRecordError(f"{at}.tracking {tracking!r} is not one of its workloads")
    raw_rounds = entry.get("rounds")
    if not isinstance(raw_rounds, list) or len(raw_rounds) > max_rounds:
        raise LoopRecordError(f"{at}.rounds is not a list of at most {max_rounds} rounds")
    rounds: list[dict[str, dict[str, float | None]]] = []
    for i, r in enumerate(raw_rounds):
        figs = r.get("workloads") if isinstance(r, dict) else None
        if not isinstance(figs, dict) or set(figs) != names:
            raise LoopRecordError(f"{at}.rounds[{i}] does not hold every workload once")
        rounds.append({wn: {k: _num(f.get(k) if isinstance(f, dict) else None,
                                    f"{at}.rounds[{i}].{wn}.{k}") for k in ROUND_FIGURES}
                       for wn, f in figs.items()})
    steady = entry.get("steady")
    reached: bool | None = None
    window: tuple[int, int] | None = None
    mean = rng = excursion = None
    if isinstance(steady, dict):
        reached = steady.get("reached") is True
        first = _whole(steady.get("first_round"), f"{at}.steady.first_round", 1, max_rounds)
        last = _whole(steady.get("last_round"), f"{at}.steady.last_round", first,
                      len(rounds) or 1)
        if last > len(rounds):
            raise LoopRecordError(f"{at}.steady names round {last} of {len(rounds)}")
        window = (first, last)
        if reached:
            mean = _num(steady.get("mean"), f"{at}.steady.mean")
            rng = _num(steady.get("range"), f"{at}.steady.range")
            excursion = _num(steady.get("slope_excursion"), f"{at}.steady.slope_excursion")
    elif steady is not None:
        raise LoopRecordError(f"{at}.steady is not an object")
    elif len(rounds) >= 5:  # cut short: the last five measured, marked not steady
        window = (len(rounds) - 4, len(rounds))
    skipped = entry.get("skipped") or []
    if not isinstance(skipped, list) or not all(isinstance(s, str) for s in skipped):
        raise LoopRecordError(f"{at}.skipped is not a list of notes")
    also = entry.get("also_tracking") or []
    if not isinstance(also, list) or not all(isinstance(a, str) and a in names for a in also):
        raise LoopRecordError(f"{at}.also_tracking is not a list of its workloads")
    bs = entry.get("block_size")
    return PtsLoop(name, test, bs if isinstance(bs, str) else None, round_s, max_rounds,
                   tracking, metric, tuple(workloads), tuple(rounds), reached, window,
                   tuple(s[:200] for s in skipped), mean, rng, excursion, tuple(also))
