"""The SNIA PTS tests' own views of a run (docs/pts.md): write saturation (WSAT) — IOPS
against the total gigabytes written from the purge on.

Pure functions over a per-second IOPS series (``analysis.iops``: NaN marks a second
without a value); every result is a frozen dataclass with ``to_dict()``.
"""

from __future__ import annotations

import math
from dataclasses import asdict, dataclass
from typing import Any

import numpy as np

from ssdbench.analysis.iops import FloatArray, IopsAnalysis, as_series, minute_rounds

GB = 1e9  # the PTS counts gigabytes written in decimal units
ENDED_BY = ("capacity", "time", "unknown")


def written_gb(iops: Any, io_bytes: int, last_fraction: float = 1.0) -> FloatArray:
    """Total GB written at the end of each second (TGBW): the running sum of the IOPS times
    the bytes per write; a second without a value adds nothing (counted by the caller as
    missing). ``last_fraction``: how much of the last second the job ran (fio logs a cut
    last second as a rate per second)."""
    arr = np.where(np.isnan(as_series(iops)), 0.0, as_series(iops))
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

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
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
    return Wsat(
        span_bytes=span_bytes, io_bytes=io_bytes, goal_multiple=goal_multiple,
        seconds=int(arr.size), written_gb=total, capacity_written=total / span_gb,
        ended_by=ended, fob_iops=valid[0] if valid else None, cliff_at_s=cliff,
        cliff_written_gb=cliff_gb,
        cliff_capacity=None if cliff_gb is None else cliff_gb / span_gb,
        steady_iops=ss.window_mean if ss.reached else None,
        steady_at_s=ss.at_s, steady_written_gb=_at(curve, ss.at_s),
        final_iops=sum(last) / len(last) if last else None, round_s=round_s,
        rounds=rounds, note=note, last_fraction=part)
