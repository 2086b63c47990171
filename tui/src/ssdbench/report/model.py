"""The analysis of one run folder (``RunAnalysis``) and of one drive (``DriveReport``)."""

from __future__ import annotations

import json
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.analysis import (
    FillStats,
    IopsAnalysis,
    LatencyHistogram,
    LatencySummary,
    TrimVerdict,
    analyse_iops,
    fill_stats,
    latency_summary,
    steady_window_start,
    trim_verdict,
)
from ssdbench.analysis.iops import ROUND_S
from ssdbench.analysis.pts import (
    Hir,
    LoopRecordError,
    PtsLoop,
    Wsat,
    hir_state,
    pts_loop,
    wsat,
)
from ssdbench.analysis.trim import TRIM_PHASES
from ssdbench.fio.jobs import parse_block_size
from ssdbench.fio.logs import DDIR, hist_counts, load_hist_log
from ssdbench.report.load import RunData, read_columns
from ssdbench.stages.params import PTS_LOOP_KINDS, parse_waits

ANALYSIS_SCHEMA = 1


@dataclass(frozen=True)
class RunAnalysis:
    run: str
    kind: str  # consistency | trim | diagnose | unknown
    state: str  # run.json state ("unknown" without run.json)
    complete: bool  # state "done" and every file the kind needs was readable
    problems: tuple[str, ...]  # why it is incomplete, or what could not be read
    op_percent: float | None
    steady_start_s: float | None
    iops: IopsAnalysis | None
    latency: LatencySummary | None  # whole torture
    steady_latency: LatencySummary | None  # steady window
    fill: FillStats | None
    trim: TrimVerdict | None
    unreadable: tuple[str, ...] = ()  # files of the run there but not readable (damaged)
    wsat: Wsat | None = None  # a WSAT run's IOPS against the gigabytes written
    hir: Hir | None = None  # a HIR run's idle periods
    pts: tuple[PtsLoop, ...] = ()  # a PTS IOPS, throughput or latency run's round loops

    def to_dict(self) -> dict[str, Any]:
        return {
            "schema": ANALYSIS_SCHEMA,
            "run": self.run,
            "kind": self.kind,
            "state": self.state,
            "complete": self.complete,
            "problems": list(self.problems),
            "op_percent": self.op_percent,
            "steady_start_s": self.steady_start_s,
            "iops": self.iops.to_dict() if self.iops else None,
            "latency": self.latency.to_dict() if self.latency else None,
            "steady_latency": self.steady_latency.to_dict() if self.steady_latency else None,
            "fill": self.fill.to_dict() if self.fill else None,
            "trim": self.trim.to_dict() if self.trim else None,
            "unreadable": list(self.unreadable),
            "wsat": self.wsat.to_dict() if self.wsat else None,
            "hir": self.hir.to_dict() if self.hir else None,
            "pts": [loop.to_dict() for loop in self.pts],
        }


@dataclass(frozen=True)
class DriveReport:
    drive_dir: Path
    identity: dict[str, Any]  # model, serial, firmware, size_bytes, transport, ...
    runs: tuple[RunAnalysis, ...]
    html: Path | None  # report.html (None when it could not be written)
    charts: tuple[Path, ...]  # every PNG/SVG written
    problems: tuple[str, ...]  # drive-level problems (drive.json, a run that crashed)


def _float(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return None if math.isnan(value) else float(value)


def steady_start_for(meta: dict[str, Any], duration_s: int) -> float:
    """The steady window start of a run (:func:`ssdbench.analysis.steady_window_start` of
    run.json ``params`` and ``kind``; ``duration_s``: the rows of iops.csv)."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    assert isinstance(params, dict)
    # NaN or Infinity from an edited run.json: as if the parameter were not there
    finite = {k: v for k, v in params.items()
              if not (isinstance(v, float) and not math.isfinite(v))}
    return steady_window_start(finite, str(meta.get("kind") or ""), duration_s)


def steady_round_for(meta: dict[str, Any]) -> tuple[int, str | None]:
    """The SNIA rounds' length of a run (run.json ``params.steady_round_s``; a run from
    before the parameter was a minute) and, for a value that is not a whole number of
    seconds from 1 to 3600, a problem naming it (the minute is used)."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    assert isinstance(params, dict)
    value = params.get("steady_round_s", ROUND_S)
    if isinstance(value, int) and not isinstance(value, bool) and 1 <= value <= 3600:
        return value, None
    return ROUND_S, (f"run.json params.steady_round_s is {value!r}, not a whole number of "
                     f"seconds from 1 to 3600: SNIA steady state is checked on {ROUND_S}-s "
                     "rounds")


def torture_histogram(run_dir: Path, seconds: int) -> LatencyHistogram | None:
    """The torture's latency histogram log (``fio/torture_clat_hist.1.log``, writes) for
    the pooled window percentiles; None when the run has none or it cannot be read."""
    path = run_dir / "fio" / "torture_clat_hist.1.log"
    if not path.is_file() or path.is_symlink() or path.parent.is_symlink():
        return None  # a FIFO would block the log reader; a link points out of the folder
    try:
        return LatencyHistogram(*hist_counts(load_hist_log(path), DDIR["write"], seconds))
    except (OSError, ValueError):  # LogError is a ValueError
        return None


def analyse(data: RunData) -> RunAnalysis:
    problems = list(data.problems)
    meta = data.meta
    kind = data.kind
    state = data.state
    if state not in ("done", "unknown", "damaged"):  # damaged: the read error says it
        error = meta.get("error")
        problems.insert(0, f"run {state}" + (f": {error}" if error else ""))
    target = meta.get("target") if isinstance(meta.get("target"), dict) else {}
    assert isinstance(target, dict)
    op = _float(target.get("op_percent"))
    iops = latency = steady_latency = None
    fill = trim = None
    start: float | None = None
    if data.iops is not None:
        s = data.iops
        start = steady_start_for(meta, int(s["iops"].size))
        round_s, round_problem = steady_round_for(meta)
        if round_problem:
            problems.append(round_problem)
        iops = analyse_iops(s["iops"], start, round_s)
        cols = ("iops", "lat_mean_us", "lat_p99_us", "lat_p9999_us", "lat_max_us")
        hist = torture_histogram(data.run_dir, int(s["iops"].size))
        latency = latency_summary(*(s[c] for c in cols), hist=hist)
        first = min(math.ceil(start), s["iops"].size)
        steady_latency = latency_summary(*(s[c][first:] for c in cols), hist=hist,
                                         hist_from_s=first)
        if iops.whole.seconds == 0:
            problems.append("iops.csv has no seconds")
    elif kind in ("consistency", "wsat", "hir"):
        problems.append("iops.csv is missing")
    wsat_view = hir_view = None
    if kind in ("wsat", "hir") and iops is not None and data.iops is not None:
        wsat_view, problem = _wsat(data.iops["iops"], iops, meta, target)
        if problem:
            problems.append(problem)
    if kind == "hir":
        hir_view = _hir(data.run_dir, meta, wsat_view)
        problems += list(hir_view.notes) if state == "done" else []
    loops, loop_problems = pts_loops(meta, kind, state)
    problems += loop_problems
    if data.fill is not None:
        fill = fill_stats(data.fill["mib_s"], data.fill["gib_written"])
    elif kind == "consistency":
        problems.append("fill.csv is missing")
    elif kind in PTS_LOOP_KINDS and not (isinstance(wipc := meta.get("wipc"), dict)
                                         and isinstance(wipc.get("fill"), dict)):
        problems.append("run.json says nothing of the preconditioning (wipc)")
    if kind == "trim" or data.probes:
        p = data.probes
        trim = trim_verdict(*(p[ph].mib_s if ph in p else None for ph in TRIM_PHASES),
                            settle_s=_idle_s(meta, "settle"), trim_idle_s=_idle_s(meta, "trim"),
                            series={ph: ser["mib_s"] for ph, ser in data.probe_series.items()
                                    if "mib_s" in ser},
                            seconds={ph: p[ph].seconds for ph in p},
                            block_bytes=_probe_block(meta))
        if trim.verdict == "incomplete":
            problems.append(f"TRIM probes incomplete: {trim.reason}")
    if kind == "diagnose" and data.readscan is None:
        problems.append("readscan.csv is missing")
    complete = state == "done" and not problems
    return RunAnalysis(data.name, kind, state, complete, tuple(problems), op, start, iops,
                       latency, steady_latency, fill, trim, data.unreadable, wsat_view,
                       hir_view, loops)


def pts_loops(meta: dict[str, Any], kind: str, state: str) -> tuple[tuple[PtsLoop, ...],
                                                                    list[str]]:
    """The round loops in run.json ``pts`` and the problems found: an entry that does not
    parse, a loop a finished run left unfinished, a PTS run without its loops."""
    raw = meta.get("pts")
    problems: list[str] = []
    loops: list[PtsLoop] = []
    if raw is not None and not isinstance(raw, dict):
        return (), ["run.json pts is not an object: no PTS tables"]
    for name, entry in (raw or {}).items():
        try:
            loops.append(pts_loop(str(name), entry))
        except LoopRecordError as exc:
            problems.append(f"run.json {exc}: that loop is left out")
    if state == "done":
        problems += [f"PTS loop {loop.name} did not finish its rounds" for loop in loops
                     if loop.reached is None]
        if kind in PTS_LOOP_KINDS and not loops and not problems:
            problems.append("run.json has no PTS round loops")
    return tuple(loops), problems


def _hir(run_dir: Path, meta: dict[str, Any], w: Wsat | None) -> Hir:
    """The HIR view from hir-idle-<s>.csv and hir-base-<s>.csv of each idle period in
    run.json ``params.hir_waits``; a period whose file is missing or unreadable is named in
    ``notes`` (and left out), never guessed."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    assert isinstance(params, dict)
    notes: list[str] = []
    burst = params.get("hir_burst_seconds", 5)
    if isinstance(burst, bool) or not isinstance(burst, int) or burst < 1:
        return Hir(5, None, (), (f"run.json params.hir_burst_seconds is {burst!r}: no HIR "
                                 "view",))
    try:
        waits = parse_waits(str(params.get("hir_waits", "")))
    except ValueError as exc:
        return Hir(burst, None, (), (f"run.json params.hir_waits is "
                                     f"{params.get('hir_waits')!r} ({exc}): no HIR view",))
    baseline = w.final_iops if w is not None else None
    states, series = [], []
    for wait in waits:
        try:
            idle = read_columns(run_dir / f"hir-idle-{wait}.csv", ("time_s", "iops"))
            base = read_columns(run_dir / f"hir-base-{wait}.csv", ("time_s", "iops"))
        except (OSError, ValueError) as exc:
            notes.append(f"HIR idle period {wait} s: {exc}")
            continue
        states.append(hir_state(wait, idle["iops"], base["iops"], burst_s=burst,
                                baseline=baseline))
        series.append((wait, idle["iops"], base["iops"]))
    return Hir(burst, baseline, tuple(states), tuple(notes), tuple(series))


def _wsat(series: Any, it: IopsAnalysis, meta: dict[str, Any],
          target: dict[str, Any]) -> tuple[Wsat | None, str | None]:
    """The WSAT view from run.json's target span, the writes' block size and the goal; a
    value that is missing or not sane is named (and there is no WSAT view), never guessed."""
    params = meta.get("params") if isinstance(meta.get("params"), dict) else {}
    assert isinstance(params, dict)
    span = target.get("span_bytes")
    if isinstance(span, bool) or not isinstance(span, int) or span <= 0:
        return None, f"run.json target.span_bytes is {span!r}: no WSAT view without the span"
    try:
        io_bytes = parse_block_size(str(params.get("block_size_torture", "4k")))
    except ValueError:
        return None, (f"run.json params.block_size_torture is "
                      f"{params.get('block_size_torture')!r}: no WSAT view without the write "
                      "size")
    goal = _float(params.get("wsat_capacity_multiple"))
    problem = None
    if goal is not None and not 0 < goal <= 100:
        problem = (f"run.json params.wsat_capacity_multiple is {goal!r}: what ended the run "
                   "is not said")
        goal = None
    goals = meta.get("goal") if isinstance(meta.get("goal"), dict) else {}
    assert isinstance(goals, dict)
    rec = goals.get("wsat") if isinstance(goals.get("wsat"), dict) else {}
    assert isinstance(rec, dict)
    moved = rec.get("moved_bytes")
    fio_bytes = moved if isinstance(moved, int) and not isinstance(moved, bool) \
        and moved >= 0 else None
    reached = rec.get("reached") if isinstance(rec.get("reached"), bool) else None
    return wsat(series, it, span_bytes=span, io_bytes=io_bytes, goal_multiple=goal,
                fio_bytes=fio_bytes, reached=reached,
                runtime_s=_float(rec.get("runtime_s"))), problem


def _probe_block(meta: dict[str, Any]) -> int | None:
    """run.json ``probes.block_bytes``: the TRIM probes' block size (None: not recorded)."""
    probes = meta.get("probes")
    block = probes.get("block_bytes") if isinstance(probes, dict) else None
    return block if isinstance(block, int) and not isinstance(block, bool) and block > 0 else None


def _idle_s(meta: dict[str, Any], key: str) -> float | None:
    """run.json "settle" / "trim" ``idle_s``: the idle before a later TRIM probe (None when
    the run did not record one: "settle" is missing in runs from before that stage)."""
    section = meta.get(key)
    return _float(section.get("idle_s")) if isinstance(section, dict) else None


def run_warnings(meta: dict[str, Any]) -> list[str]:
    """run.json ``warnings``: what the run noticed but did not fail on (e.g. the per-second
    IOPS not adding up to fio's own total), as sentences."""
    raw = meta.get("warnings")
    if isinstance(raw, str):
        raw = [raw]
    if not isinstance(raw, list):
        return []
    out = []
    for w in raw:
        if isinstance(w, dict):
            text = w.get("message") or w.get("text") or json.dumps(w, sort_keys=True)
            out.append(str(text))
        elif w is not None and str(w).strip():
            out.append(str(w))
    return out
