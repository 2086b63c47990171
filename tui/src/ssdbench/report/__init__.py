"""Reports: summary.csv, charts, report.html per drive, index.html for the results folder.

Public API (the run engine, kiosk mode and the TUI call these):

* :func:`analyse_run` — the analysis of one run folder, from its files alone;
* :func:`render_drive` — charts, ``run.json["analysis"]`` and ``report.html`` of one drive
  folder;
* :func:`render_index` — ``summary.csv``, ``compare-*.png/svg`` and ``index.html`` of the
  ``ssdbench/`` root holding drive folders.

A damaged or incomplete run (interrupted, failed, a CSV missing or unreadable) is reported
as such; it never stops the report of the other runs and drives. Layout and formats:
docs/results-format.md; definitions: docs/analysis.md.

The folder may come from anywhere: every file is written inside the folder being reported
(``atomic.write_*(..., root=)``: never through a link, never out of it), a name taken from a
file (a PTS loop of run.json) goes through :func:`ssdbench.untrusted.path_part`, and every
CSV through the csv module and :func:`ssdbench.untrusted.csv_row`.
"""

from __future__ import annotations

import csv
import io
import sys
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from ssdbench import jsonfile
from ssdbench.analysis.trim import TRIM_PHASES
from ssdbench.report.charts import MB_PER_MIB
from ssdbench.report.load import (
    RunData,
    drive_dirs,
    drive_identity,
    is_drive_dir,
    links,
    load_run,
    run_dirs,
)
from ssdbench.report.model import DriveReport, RunAnalysis, analyse, run_warnings
from ssdbench.report.summary import SUMMARY_COLUMNS, summary_csv, summary_row
from ssdbench.results import atomic
from ssdbench.stages.surface import BAND_NAMES as SURFACE_BANDS
from ssdbench.untrusted import csv_row

__all__ = [
    "SUMMARY_COLUMNS",
    "DriveReport",
    "RunAnalysis",
    "analyse_run",
    "drive_dirs",
    "is_drive_dir",
    "render_drive",
    "render_index",
]


def analyse_run(run_dir: Path) -> RunAnalysis:
    """Analyse one run folder (CSV files rebuilt from the fio logs first when possible)."""
    return analyse(load_run(Path(run_dir)))


def _label(identity: dict[str, Any], fallback: str) -> str:
    """Model and serial; a drive without them (a loop device) by its kernel name."""
    from ssdbench.report.html import drive_label

    model = identity.get("model")
    serial = identity.get("serial")
    text = " ".join(str(x) for x in (model, serial) if x)
    return text or drive_label(identity, fallback)


@dataclass(frozen=True)
class SharedScales:
    """What charts drawn side by side share: the IOPS log decades, the latency decades and
    the fill MiB/s top. One drive's runs (Default and 25% OP) share them in report.html;
    every run of every drive shares them in the comparison charts of index.html. The
    linear IOPS top is per run (:func:`charts.steady_linear_top`), not shared."""

    iops: Any  # charts.LogScale
    latency: Any  # charts.LogScale
    fill_top: float


def _has_iops(data: RunData) -> bool:
    return data.iops is not None and bool(data.iops["iops"].size)


def _workload(data: RunData) -> Any:
    from ssdbench.report import charts as ch

    return ch.Workload.from_meta(data.meta)


def shared_scales(datas: Sequence[RunData]) -> SharedScales:
    """The scales these runs' charts share."""
    from ssdbench.report import charts as ch

    with_iops = [d.iops for d in datas if d.iops is not None and _has_iops(d)]
    return SharedScales(
        iops=ch.log_scale(*(s["iops"] for s in with_iops)),
        latency=ch.latency_scale(*with_iops),
        fill_top=ch.fill_top(*(d.fill["mib_s"] for d in datas if d.fill is not None)))


def _marks(events: Any) -> list[tuple[str, int, int]]:
    """(kind, at_s, duration_s) of a run's events for the charts, the cliff left out (it has
    its own line), at most 200."""
    if events is None:
        return []
    return [(e.kind, e.at_s, e.duration_s) for e in events.events if e.kind != "cliff"][:200]


def _run_charts(data: RunData, run: RunAnalysis, model: str, svg: bool,
                scales: SharedScales | None = None) -> list[Any]:
    from ssdbench.report import charts as ch

    scales = scales or shared_scales([data])
    title = ch.title_for(model, run.run, run.op_percent)
    workload = _workload(data)
    out: list[ch.Chart] = []
    if data.iops is not None and run.iops is not None and data.iops["iops"].size:
        s = data.iops
        it = run.iops
        out += ch.iops_charts(
            s["time_s"], s["iops"], title=title, steady_start_s=it.steady_start_s,
            cliff_s=it.cliff.at_s, steady_state_s=it.steady_state.at_s,
            fob_end_s=getattr(it.cliff, "fob_end_s", None),
            steady_mean=it.steady.mean, scale=scales.iops,
            linear_top=ch.steady_linear_top(s["iops"][s["time_s"] >= it.steady_start_s],
                                            workload.iops_top),
            workload=workload, svg=svg,
            events=_marks(it.events))
        if run.wsat is not None:  # right after the whole-run chart: the same seconds
            w = run.wsat
            out.insert(1, ch.wsat_chart(
                w.curve, s["iops"], io_bytes=w.io_bytes,
                span_gb=w.span_bytes / 1e9, title=title, cliff_gb=w.cliff_written_gb,
                fob_end_gb=(w.fob_end_written_gb if w.fob_end_s != w.cliff_at_s else None),
                final_iops=w.final_iops, scale=scales.iops, workload=workload, svg=svg))
        if run.hir is not None and run.hir.series:
            out.append(ch.hir_chart(
                run.hir.series, title=title, burst_iops={st.wait_s: st.burst_iops
                                                         for st in run.hir.states},
                baseline=run.hir.baseline_iops,
                base_iops={st.wait_s: st.base_iops for st in run.hir.states},
                workload=workload, svg=svg))
        temp = data.sensors.get("torture") or data.sensors.get("wsat")
        if temp is not None and np.isfinite(temp["temperature_c"]).any():
            # under the full-log chart, on its time axis (the steady charts are its zoom)
            out.insert(1, ch.temperature_chart(
                {"torture": (temp["time_s"], temp["temperature_c"])}, title=title,
                end=float(s["time_s"][-1] + 1), name="temperature-torture",
                steady_start_s=it.steady_start_s, svg=svg))
        if np.isfinite(s["lat_mean_us"]).any():
            out.append(ch.latency_chart(s["time_s"], s, s["iops"], title=title,
                                        scale=scales.latency, workload=workload, svg=svg))
    if data.surface is not None and data.surface["region"].size:
        found = data.meta.get("surface")
        sf: dict[str, Any] = found if isinstance(found, dict) else {}
        counts: dict[str, Any] = sf["bands"] if isinstance(sf.get("bands"), dict) else {}
        bands = [v if isinstance(v, int) and not isinstance(v, bool) else 0
                 for v in (counts.get(k) for k in SURFACE_BANDS)]
        unread = sf.get("unreadable_blocks")
        out.append(ch.surface_chart(
            data.surface, title=title, bands=bands,
            unreadable=unread if isinstance(unread, int) and not isinstance(unread, bool)
            else int(np.nansum(data.surface["unreadable_blocks"])), svg=svg))
    for loop in run.pts:
        if loop.rounds:
            out.append(ch.pts_convergence_chart(loop, title=title, svg=svg))
        if loop.test == "iops" and loop.window is not None:
            out.append(ch.pts_iops_chart(loop, title=title, svg=svg))
    if data.fill is not None and run.fill is not None and run.fill.mean_mib_s is not None:
        f = data.fill
        out.append(ch.fill_chart(
            f["time_s"], f["mib_s"], f["gib_written"], title=title,
            cliff_s=run.fill.cliff_at_s, cliff_gib=run.fill.cliff_gib,
            mean_mib_s=run.fill.mean_mib_s, top=scales.fill_top, workload=workload, svg=svg,
            events=_marks(run.fill.events)))
    if data.probes and run.trim is not None:
        out.append(ch.trim_chart(
            {p: v.mib_s for p, v in data.probes.items()},
            {p: (v["time_s"], v["mib_s"]) for p, v in data.probe_series.items()},
            title=title, verdict=run.trim.verdict, recovery=run.trim.recovery,
            workload=workload, svg=svg))
        temps = {f"probe-{p}": (v["time_s"], v["temperature_c"]) for p in TRIM_PHASES
                 if (v := data.sensors.get(f"probe-{p}")) is not None
                 and np.isfinite(v["temperature_c"]).any()}
        if temps:
            # under trim-probes' "probes over time", on the same time axis
            end = max((float(v["time_s"][-1]) + 1 for v in data.probe_series.values()
                       if v["time_s"].size), default=0.0)
            end = max(end, *(float(t[-1]) + 1 for t, _ in temps.values()))
            out.append(ch.temperature_chart(temps, title=title, end=end,
                                            name="temperature-probes", probes=True, svg=svg))
    return out


def _warn(message: str) -> None:
    print(f"ssdbench report: {message}", file=sys.stderr)


def csv_text(header: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A CSV through the csv module, every text cell through :func:`csv_row` (a workload
    name from run.json never becomes a formula or another column)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in (header, *rows):
        writer.writerow(csv_row({str(i): v for i, v in enumerate(row)}).values())
    return buf.getvalue()


def hir_csv(h: Any) -> str:
    """hir.csv: each idle period's bursts, their IOPS, the recovery, the return's mean."""
    def cell(value: float | None, digits: int) -> str:
        return "" if value is None else f"{value:.{digits}f}"

    header = ["wait_s", "bursts", "burst_iops", "recovery", "base_iops",
              f"vs_return (bursts of {h.burst_s} s; before the idle periods: "
              f"{cell(h.baseline_iops, 1)} IOPS)", "stall_seconds"]
    return csv_text(header, ([st.wait_s, st.bursts, cell(st.burst_iops, 1),
                              cell(st.recovery, 4), cell(st.base_iops, 1),
                              cell(st.vs_return, 4), st.stall_seconds] for st in h.states))


def wsat_csvs(iops: Any, w: Any) -> dict[str, str]:
    """wsat.csv (each second: its IOPS, the gigabytes written by its end and in capacities)
    and wsat-rounds.csv (each round: its end, gigabytes written, mean IOPS)."""
    tgbw = w.curve
    span_gb = w.span_bytes / 1e9
    seconds = [[i, "" if np.isnan(v) else f"{v:.1f}", f"{g:.6f}", f"{g / span_gb:.6f}"]
               for i, (v, g) in enumerate(zip(np.asarray(iops, dtype=float), tgbw,
                                              strict=True))]
    rounds = [[r.index, r.end_s, f"{r.written_gb:.6f}", f"{r.written_gb / span_gb:.6f}",
               "" if r.iops is None else f"{r.iops:.1f}"] for r in w.rounds]
    return {"wsat.csv": csv_text(["time_s", "iops", "written_gb", "capacities_written"],
                                 seconds),
            "wsat-rounds.csv": csv_text(["round", "end_s", "written_gb", "capacities_written",
                                         f"iops (rounds of {w.round_s} s)"], rounds)}


PTS_CSV_COLUMNS = ("workload", "read_percent", "block_size", "sequential", "iops", "mb_s",
                   "lat_mean_us", "lat_p99999_us", "lat_max_us")


def pts_stem(loop: Any) -> str:
    """``pts-<loop>``: the start of a PTS loop's file names. The loop's name is a key of
    run.json ``pts``: through :func:`path_part` (distinct: two names never share files)."""
    from ssdbench.report.charts import file_part

    return f"pts-{file_part(loop.name)}"


def pts_csvs(loop: Any) -> dict[str, str]:
    """pts-<loop>.csv (each workload over the measurement window: the rounds' mean, the
    maximum of the maximum latency) and pts-<loop>-rounds.csv (each round, each workload);
    MB/s in decimal units, latencies in microseconds."""
    def row(w: Any, f: dict[str, float | None]) -> list[object]:
        def cell(key: str, digits: int, scale: float = 1.0) -> str:
            v = f.get(key)
            return "" if v is None else f"{v * scale:.{digits}f}"
        return [w.name, w.read_percent, w.block_size, int(w.sequential), cell("iops", 1),
                cell("mib_s", 3, MB_PER_MIB), cell("lat_mean_us", 2),
                cell("lat_p99999_us", 2), cell("lat_max_us", 2)]

    state = ("steady" if loop.reached else "not steady") if loop.window else "no window"
    where = f"rounds {loop.window[0]}-{loop.window[1]}" if loop.window else "none"
    head = list(PTS_CSV_COLUMNS)
    figs = loop.window_figures
    window = csv_text([*head[:-1], f"{head[-1]} (measurement window: {where}, {state})"],
                      (row(w, figs[w.name]) for w in loop.workloads if w.name in figs))
    rounds = csv_text(["round", *head[:-1], f"{head[-1]} (rounds of {loop.round_s} s)"],
                      ([i, *row(w, r.get(w.name, {}))] for i, r in enumerate(loop.rounds, 1)
                       for w in loop.workloads))
    stem = pts_stem(loop)
    return {f"{stem}.csv": window, f"{stem}-rounds.csv": rounds}


def _left_out_links(folder: Path, what: str) -> list[str]:
    """A sentence per symbolic link in ``folder``: never read or written through."""
    return [f"{name}: a symbolic link, left out (a results {what} holds none; nothing is "
            "read or written through it)" for name in links(folder)]


def render_drive(drive_dir: Path, *, svg: bool = True) -> DriveReport:
    """Analyse every run of a drive folder, write its charts (PNG + SVG) into the run
    folders, ``run.json["analysis"]`` (atomically) and ``report.html``."""
    from ssdbench.report import html

    drive_dir = Path(drive_dir)
    if not drive_dir.is_dir():
        raise FileNotFoundError(f"not a folder: {drive_dir}")
    loaded: list[tuple[RunData, RunAnalysis]] = []
    problems: list[str] = _left_out_links(drive_dir, "drive folder")
    for rd in run_dirs(drive_dir):
        try:
            data = load_run(rd)
            loaded.append((data, analyse(data)))
        except Exception as exc:  # one broken run must not hide the others
            problems.append(f"{rd.name}: could not be analysed: {exc!r}")
            _warn(f"{rd}: could not be analysed: {exc!r}")
    identity, document, id_problems = drive_identity(drive_dir, [d for d, _ in loaded])
    problems[:0] = id_problems
    model = html.drive_label(identity, drive_dir.name)
    sections: list[str] = []
    written: list[Path] = []
    scales = shared_scales([d for d, _ in loaded])
    for data, run in loaded:
        charts = []
        try:
            charts = _run_charts(data, run, model, svg, scales)
            for c in charts:
                atomic.write_bytes(data.run_dir / f"{c.name}.png", c.png, root=drive_dir)
                written.append(data.run_dir / f"{c.name}.png")
                if c.svg is not None:
                    atomic.write_bytes(data.run_dir / f"{c.name}.svg", c.svg, root=drive_dir)
                    written.append(data.run_dir / f"{c.name}.svg")
        except Exception as exc:
            problems.append(f"{run.run}: charts failed: {exc!r}")
            _warn(f"{data.run_dir}: charts failed: {exc!r}")
        if run.wsat is not None and data.iops is not None:
            try:
                tables = wsat_csvs(data.iops["iops"], run.wsat)
                if run.hir is not None:
                    tables["hir.csv"] = hir_csv(run.hir)
                for name, text in tables.items():
                    atomic.write_text(data.run_dir / name, text, root=drive_dir)
                    written.append(data.run_dir / name)
            except OSError as exc:
                problems.append(f"{run.run}: PTS tables not written: {exc}")
        for loop in run.pts:
            try:
                for name, text in pts_csvs(loop).items():
                    atomic.write_text(data.run_dir / name, text, root=drive_dir)
                    written.append(data.run_dir / name)
            except OSError as exc:
                problems.append(f"{run.run}: PTS tables of {loop.name} not written: {exc}")
        if data.meta and (data.run_dir / "run.json").is_file():
            meta = dict(data.meta)
            meta["analysis"] = run.to_dict()
            try:
                atomic.write_json(data.run_dir / "run.json", meta, root=drive_dir)
            except OSError as exc:
                problems.append(f"{run.run}: run.json not updated: {exc}")
        try:
            sections.append(html.run_section(run, data.meta, charts,
                                             html.relative_files(data.run_dir)))
        except Exception as exc:  # a value no page expects (an edited run.json): said
            problems.append(f"{run.run}: its section could not be made: {exc!r}")
            _warn(f"{data.run_dir}: its section could not be made: {exc!r}")
    runs = tuple(r for _, r in loaded)
    page = html.drive_page(identity, document, drive_dir.name, sections=sections,
                           runs=runs, problems=problems,
                           warnings={d.name: run_warnings(d.meta) for d, _ in loaded},
                           metas={r.run: d.meta for d, r in loaded})
    out: Path | None = drive_dir / "report.html"
    try:
        atomic.write_text(drive_dir / "report.html", page, root=drive_dir)
    except OSError as exc:  # a link where report.html goes: refused, said
        problems.append(f"report.html not written: {exc}")
        _warn(f"{drive_dir}: report.html not written: {exc}")
        out = None
    return DriveReport(drive_dir, identity, runs, out, tuple(written), tuple(problems))


def _index_data(root: Path) -> tuple[list[tuple[Path, dict[str, Any], list[RunData],
                                                  list[RunAnalysis]]], list[str]]:
    drives = []
    problems: list[str] = _left_out_links(root, "folder")
    for dd in drive_dirs(root):
        datas: list[RunData] = []
        runs: list[RunAnalysis] = []
        for rd in run_dirs(dd):
            try:
                data = load_run(rd, rebuild=False)
                runs.append(analyse(data))
                datas.append(data)
            except Exception as exc:
                problems.append(f"{dd.name}/{rd.name}: could not be analysed: {exc!r}")
        identity, _, _ = drive_identity(dd, datas)
        drives.append((dd, identity, datas, runs))
    return drives, problems


def _unfinished(run: RunAnalysis) -> str:
    """What a comparison panel adds to a run that did not finish: "cancelled after 100 s"."""
    if run.state == "done":
        return ""
    seconds = run.iops.duration_s if run.iops is not None else 0
    if run.state in ("cancelled", "interrupted", "failed"):
        return f"{run.state} after {seconds} s"
    return f"{run.state}, {seconds} s"


IOPS_CHART_KINDS = ("full-log", "steady-log", "steady-linear")


def _single_drive_charts(run: str, run_dir: Path, svg: bool) -> list[Any] | None:
    """With one drive, a run's comparison charts are that drive's own IOPS charts: reuse
    the files render_drive wrote (a third of the report's time) instead of drawing them
    again. None when they are not there (then they are drawn)."""
    from ssdbench.report import charts as ch

    out = []
    for kind in IOPS_CHART_KINDS:
        png = run_dir / f"iops-{kind}.png"
        svg_path = run_dir / f"iops-{kind}.svg"
        try:  # what render_drive wrote: a regular file (a link or a FIFO: drawn again)
            out.append(ch.Chart(f"compare-{ch.file_part(run)}-iops-{kind}",
                                jsonfile.read_bytes(png, limit=CHART_LIMIT, follow=False),
                                jsonfile.read_bytes(svg_path, limit=CHART_LIMIT, follow=False)
                                if svg else None))
        except OSError:
            return None
    return out


CHART_LIMIT = 64 << 20  # bytes: a chart render_drive wrote is well under


def render_index(root: Path, *, svg: bool = True) -> None:
    """``summary.csv``, ``compare-*.png/svg`` and ``index.html`` for every drive folder
    under ``root`` (the ``ssdbench/`` folder), from the CSV files as they are. Written
    inside ``root`` only; OSError (``atomic.OutsideRoot``: a link where index.html goes)
    when index.html cannot be written, the other files' failures are on the page."""
    from ssdbench.report import charts as ch
    from ssdbench.report import html

    root = Path(root)
    if not root.is_dir():
        raise FileNotFoundError(f"not a folder: {root}")
    drives, problems = _index_data(root)
    rows = []
    for dd, identity, datas, runs in drives:
        report = DriveReport(dd, identity, tuple(runs), None, (), ())
        for data, run in zip(datas, runs, strict=True):
            rows.append(summary_row(report, run, data.meta))
    try:
        atomic.write_text(root / "summary.csv", summary_csv(rows), root=root)
    except OSError as exc:
        problems.append(f"summary.csv not written: {exc}")
        _warn(f"{root}: summary.csv not written: {exc}")

    charts: list[ch.Chart] = []
    try:
        every = [d for _, _, datas, _ in drives for d in datas if _has_iops(d)]
        scales = shared_scales(every)  # one scale for every drive and run of the stick
        names = sorted({d.name for d in every})
        charted = {dd for dd, _, datas, _ in drives if any(_has_iops(d) for d in datas)}
        order = {n: i for i, n in enumerate(("consistency-default", "consistency-op25"))}
        for name in sorted(names, key=lambda n: (order.get(n, 99), n)):
            having = [
                (dd, identity, d, r)
                for dd, identity, datas, runs in drives
                for d, r in zip(datas, runs, strict=True)
                if d.name == name and d.iops is not None and d.iops["iops"].size
            ]
            # a lone drive's own charts already use the stick's scales (its runs are all)
            reused = _single_drive_charts(name, having[0][2].run_dir, svg) \
                if len(having) == 1 and len(charted) == 1 else None
            if reused is not None:
                charts += reused
                continue
            series = [
                ch.DriveSeries(_label(identity, dd.name), d.iops["time_s"], d.iops["iops"],
                               r.steady_start_s or 0.0, _workload(d), _unfinished(r))
                for dd, identity, d, r in having
                if d.iops is not None
            ]
            charts += ch.compare_iops_charts(name, series, scale=scales.iops, svg=svg)
        trim_rows = [
            (_label(identity, dd.name), {p: v.mib_s for p, v in d.probes.items()},
             r.trim.verdict, _workload(d).probe_shape)
            for dd, identity, datas, runs in drives
            for d, r in zip(datas, runs, strict=True) if d.probes and r.trim is not None
        ]
        trim_chart = ch.compare_trim_chart(trim_rows, svg=svg)
        if trim_chart is not None:
            charts.append(trim_chart)
        for c in charts:
            atomic.write_bytes(root / f"{c.name}.png", c.png, root=root)
            if c.svg is not None:
                atomic.write_bytes(root / f"{c.name}.svg", c.svg, root=root)
    except Exception as exc:
        problems.append(f"comparison charts failed: {exc!r}")
        _warn(f"{root}: comparison charts failed: {exc!r}")
    drive_links = [(dd.name, f"{_label(identity, dd.name)} — {dd.name}")
                   for dd, identity, _, _ in drives]
    warnings = [f"{dd.name}/{d.name}: {w}" for dd, _, datas, _ in drives for d in datas
                for w in run_warnings(d.meta)]
    loops = [(_label(identity, dd.name), loop) for dd, identity, _, runs in drives
             for r in runs for loop in r.pts]
    atomic.write_text(root / "index.html",
                      html.index_page(rows, drive_links, charts, problems, warnings, pts=loops),
                      root=root)


def render_all(root: Path, *, svg: bool = True) -> Sequence[DriveReport]:
    """Every drive folder's report, then the index (what ``ssdbench report ROOT`` does)."""
    reports = [render_drive(dd, svg=svg) for dd in drive_dirs(Path(root))]
    render_index(root, svg=svg)
    return reports
