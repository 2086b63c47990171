"""The chart rules of docs/analysis.md "Charts", checked on the matplotlib figures the report
draws: fixed linear top with counted clip markers, shared scales (one drive's runs; every
drive of the stick), legends clear of the data, no series cut by a y range, titles with the
run's block size and queue depth, MB/s beside MiB/s, run.json warnings shown."""

from __future__ import annotations

import csv
import html
import json
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure

from ssdbench.plan.plans import preset
from ssdbench.report import SUMMARY_COLUMNS, render_drive, render_index
from ssdbench.report import charts as ch
from ssdbench.report.load import read_columns
from tests.unit.report.synthetic import DriveSpec, write_drive_folder

# summary.csv before MB/s and warnings were added: these positions never change
SUMMARY_V1 = (
    "drive_dir", "model", "serial", "firmware", "capacity_bytes", "run", "op_percent",
    "duration_s", "iops_mean", "steady_iops_mean", "steady_iops_stddev", "steady_iops_p1",
    "zero_iops_seconds", "longest_stall_s", "steady_state_at_s", "trim_clean_mib_s",
    "trim_after_torture_mib_s", "trim_after_trim_mib_s", "trim_verdict", "erase_method",
    "erase_verified", "run_state",
)

Captured = list[tuple[str, Figure]]


@pytest.fixture
def captured(monkeypatch: pytest.MonkeyPatch) -> Iterator[Captured]:
    """Every figure the report draws, by chart name (the PNGs are still written)."""
    figs: Captured = []

    def many(real: Callable[..., list[tuple[str, Figure]]]) -> Callable[..., Any]:
        def wrap(*args: Any, **kwargs: Any) -> list[tuple[str, Figure]]:
            out = real(*args, **kwargs)
            figs.extend(out)
            return out
        return wrap

    def one(real: Callable[..., Figure | None], name: str) -> Callable[..., Any]:
        def wrap(*args: Any, **kwargs: Any) -> Figure | None:
            fig = real(*args, **kwargs)
            if fig is not None:
                figs.append((name, fig))
            return fig
        return wrap

    monkeypatch.setattr(ch, "iops_figures", many(ch.iops_figures))
    monkeypatch.setattr(ch, "compare_iops_figures", many(ch.compare_iops_figures))
    for name, func in (("latency", "latency_figure"), ("fill", "fill_figure"),
                       ("trim-probes", "trim_figure"), ("compare-trim", "compare_trim_figure")):
        monkeypatch.setattr(ch, func, one(getattr(ch, func), name))
    yield figs


def _title(fig: Figure) -> str:
    return fig.get_suptitle()


def _find(figs: Captured, name: str, run: str) -> Figure:
    found = [f for n, f in figs if n == name and f"— {run}" in _title(f)]
    assert len(found) == 1, (name, run, [(n, _title(f)) for n, f in figs])
    return found[0]


def _data_lines(fig: Figure) -> Iterator[tuple[Any, Any]]:
    for ax in fig.axes:
        for line in ax.get_lines():
            yield ax, line


def assert_legends_clear(fig: Figure) -> int:
    """Each legend lies inside the figure, outside every axes, clear of the title, the
    panel labels and every drawn point. Returns the number of legends."""
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    legends = [leg for ax in fig.axes if (leg := ax.get_legend()) is not None]
    for leg in legends:
        box = leg.get_window_extent(renderer)
        assert box.x0 >= 0 and box.y0 >= 0
        assert box.x1 <= fig.bbox.width and box.y1 <= fig.bbox.height
        assert fig.texts  # the suptitle
        for text in fig.texts:
            assert not box.overlaps(text.get_window_extent(renderer))
        for ax in fig.axes:
            assert not box.overlaps(ax.get_window_extent(renderer)), _title(fig)
            for text in ax.texts:
                if text.get_text().strip():
                    assert not box.overlaps(text.get_window_extent(renderer)), text
        for _ax, line in _data_lines(fig):
            xy = line.get_transform().transform(np.asarray(line.get_xydata(), float))
            xy = xy[np.isfinite(xy).all(axis=1)]
            inside = ((xy[:, 0] >= box.x0) & (xy[:, 0] <= box.x1)
                      & (xy[:, 1] >= box.y0) & (xy[:, 1] <= box.y1))
            assert not inside.any(), (line.get_label(), _title(fig))
    for ax in fig.axes:  # panel names stay clear of the panel above
        for text in ax.texts:
            for other in fig.axes:
                if other is not ax and text.get_text().strip():
                    assert not text.get_window_extent(renderer).overlaps(
                        other.get_window_extent(renderer)), text
    return len(legends)


def assert_no_series_clipped(fig: Figure) -> None:
    """Every value of every data series lies inside its panel's y range."""
    for ax, line in _data_lines(fig):
        if line.get_transform() != ax.transData:
            continue  # axvline / axhline: drawn across the axes
        y = np.asarray(line.get_ydata(), float)
        y = y[np.isfinite(y)]
        if ax.get_yscale() == "log":
            y = y[y > 0]
        lo, hi = ax.get_ylim()
        assert ((y >= lo * (1 - 1e-9)) & (y <= hi * (1 + 1e-9))).all(), (
            line.get_label(), _title(fig), y.max() if y.size else None, hi)


def _line(fig: Figure, gid: str) -> Any:
    found = [line for _, line in _data_lines(fig) if line.get_gid() == gid]
    return found[0] if found else None


def _legend_texts(fig: Figure) -> list[str]:
    return [t.get_text() for ax in fig.axes if (leg := ax.get_legend()) is not None
            for t in leg.get_texts()]


def _set_params(run_dir: Path, **params: Any) -> None:
    path = run_dir / "run.json"
    meta = json.loads(path.read_text())
    meta["params"].update(params)
    path.write_text(json.dumps(meta))


def _drive(root: Path, runs: tuple[str, ...] = ("consistency-default", "consistency-op25",
                                                 "trim"), **spec: Any) -> Path:
    defaults: dict[str, Any] = {"steady_iops": 20_000.0, "cliff_s": 100}
    defaults.update(spec)
    return write_drive_folder(root, DriveSpec(**defaults), duration=300, seed=3, runs=runs)


def test_one_drive_runs_share_log_scales_and_each_has_its_linear_top(
        tmp_path: Path, captured: Captured):
    drive = _drive(tmp_path / "ssdbench")
    _set_params(drive / "consistency-default", block_size_torture="8k", iodepth=16)
    render_drive(drive, svg=False)
    runs = ("consistency-default", "consistency-op25")
    series = {r: read_columns(drive / r / "iops.csv", ("time_s", "iops"))["iops"] for r in runs}
    # the plan's 40K holds the default run (steady 20K); the 25% OP run (steady 44K) gets
    # the round number over its own bulk, as AnandTech's 40K / 50K
    tops = {"consistency-default": 40000.0, "consistency-op25": 60000.0}

    for run in runs:
        top = tops[run]
        linear = _find(captured, "iops-steady-linear", run)
        assert linear.axes[0].get_ylim() == (0.0, top)
        steady = series[run][210:]  # steady_start_s = 70% of 300
        above = int((steady > top).sum())
        assert above <= 0.005 * steady.size + 1  # at most the rarest 0.5% on the edge
        clip = _line(linear, "clip")
        if above:
            assert clip is not None and len(clip.get_ydata()) == above
            assert set(clip.get_ydata()) == {top}
            assert f"{above} s above {ch.si(top)} (drawn on the top edge)" in \
                _legend_texts(linear)
        else:
            assert clip is None
        points = _line(linear, "iops")
        assert points is not None and np.nanmax(points.get_ydata()) <= top
        assert f"linear scale, 0–{ch.si(top)}" in _title(linear)
    assert int((series["consistency-op25"][210:] > 40000).sum()) > 20

    # Default and 25% OP: the same log decades, holding both runs
    for name in ("iops-full-log", "iops-steady-log", "latency", "fill"):
        lims = {run: _find(captured, name, run).axes[0].get_ylim() for run in runs}
        assert lims["consistency-default"] == lims["consistency-op25"], name
    full = _find(captured, "iops-full-log", runs[0])
    xs = np.asarray(_line(full, "iops").get_xdata())  # each second mid-second, off the spine
    assert xs[0] == 0.5 and full.axes[0].get_xlim() == (0.0, 300.0)
    lo, hi = full.axes[0].get_ylim()
    both = np.concatenate(list(series.values()))
    assert lo < both[both > 0].min() and hi > both.max()

    # titles state the run's own block size and queue depth
    assert "8 KiB random write QD16" in _title(_find(captured, "iops-full-log", runs[0]))
    assert "8 KiB random write QD16" in _title(_find(captured, "latency", runs[0]))
    assert "4 KiB random write QD32" in _title(_find(captured, "iops-full-log", runs[1]))
    assert "sequential fill, 128 KiB QD32" in _title(_find(captured, "fill", runs[1]))

    assert len(captured) == 2 * 5 + 1  # two consistency runs, the TRIM probes
    for _, fig in captured:
        assert assert_legends_clear(fig) >= 1
        assert_no_series_clipped(fig)


def test_chart_iops_top_comes_from_the_plan(tmp_path: Path, captured: Captured):
    drive = _drive(tmp_path / "ssdbench", runs=("consistency-op25",))
    _set_params(drive / "consistency-op25", chart_iops_top=60000)
    render_drive(drive, svg=False)
    linear = _find(captured, "iops-steady-linear", "consistency-op25")
    assert linear.axes[0].get_ylim() == (0.0, 60000.0)
    assert _line(linear, "clip") is None  # 44K steady: nothing above 60K
    assert "0–60K" in _title(linear)


def test_presets_record_the_linear_top():
    for name in ("review", "quick", "trim"):
        assert preset(name).params.as_record()["chart_iops_top"] == 40000


def test_stick_comparisons_share_one_scale(tmp_path: Path, captured: Captured):
    root = tmp_path / "ssdbench"
    _drive(root, model="Slow SATA", serial="A1")
    _drive(root, model="Fast NVMe", serial="B2", fob_iops=400_000.0, steady_iops=60_000.0,
           trim_mib_s=(2900.0, 1100.0, 2800.0))
    render_index(root, svg=False)
    names = {n for n, _ in captured}
    assert {f"compare-{r}-iops-{k}" for r in ("consistency-default", "consistency-op25")
            for k in ("full-log", "steady-log", "steady-linear")} | {"compare-trim"} == names
    log_lims = {ax.get_ylim() for n, f in captured if n.endswith("-log") for ax in f.axes}
    assert len(log_lims) == 1  # every panel of every run: the same decades
    lo, hi = log_lims.pop()
    assert lo < 1000 and hi >= 400_000 * 1.05
    tops = {}
    for n, f in captured:
        if n.endswith("steady-linear"):
            lims = {ax.get_ylim() for ax in f.axes}
            assert len(lims) == 1  # every drive of the run: one top
            tops[n] = lims.pop()[1]
            assert "4 KiB random write QD32" in _title(f)
            # the top holds the fast drive's bulk: at most its rarest 0.5% on the edge
            clipped = [np.asarray(line.get_ydata()).size for ax in f.axes
                       for line in ax.get_lines() if line.get_gid() == "clip"]
            assert sum(clipped) <= 0.005 * 90 + 1
        assert assert_legends_clear(f) >= 1
        assert_no_series_clipped(f)
    # one top per run: the fast drive's 25% OP run needs a higher one than its default run
    default = tops["compare-consistency-default-iops-steady-linear"]
    op25 = tops["compare-consistency-op25-iops-steady-linear"]
    assert 60_000 < default < op25


def test_compare_panels_name_their_workload_when_runs_differ():
    t = np.arange(100, dtype=np.float64)
    iops = np.full(100, 30_000.0)
    iops[75:85] = 90_000.0  # steady seconds above 40K: a third, long legend entry
    iops[90] = 0.0
    a, b = "Samsung SSD 870 EVO 1TB S6PTNX0R123456", "loop2 (loop device)"
    drives = [ch.DriveSeries(a, t, iops, 70.0),
              ch.DriveSeries(b, t, iops, 70.0, ch.Workload(torture_bs="16k", iodepth=8))]
    figs = ch.compare_iops_figures("consistency-default", drives)
    assert len(figs) == 3
    for _, fig in figs:
        labels = [t.get_text() for ax in fig.axes for t in ax.texts]
        assert f"{b} — 16 KiB random write QD8" in labels
        assert f"{a} — 4 KiB random write QD32" in labels
        assert "per-drive workload in each panel" in _title(fig)
        assert assert_legends_clear(fig) == 2
        assert_no_series_clipped(fig)


def test_trim_probe_panel_holds_every_second():
    t = np.arange(40, dtype=np.float64)
    clean = np.full(40, 300.0)
    clean[5] = 1200.0  # a burst 4× the mean: the panel must not cut it
    series = {"clean": (t, clean), "after_torture": (t, np.full(40, 180.0)),
              "after_trim": (t, np.full(40, 190.0))}
    fig = ch.trim_figure({"clean": 322.5, "after_torture": 180.0, "after_trim": 190.0},
                         series, title="X — trim, 0% OP", verdict="ineffective",
                         recovery=0.07, workload=ch.Workload.from_meta(
                             {"params": {"probe_preset": "as-ssd", "probe_gib": 1}}))
    bars, over_time = fig.axes
    assert over_time.get_ylim()[1] >= 1200 and bars.get_ylim() == over_time.get_ylim()
    assert_no_series_clipped(fig)
    assert assert_legends_clear(fig) == 1
    labels = [t.get_text() for t in bars.texts]
    assert "322.5 MiB/s\n338.2 MB/s" in labels
    assert "1 GiB in 16 MiB blocks QD1" in _title(fig)


def test_workload_from_run_json():
    old = ch.Workload.from_meta({"params": {"block_size_fill": "1m", "iodepth": 16}})
    assert old.probe == "sequential-write probe, 1 MiB blocks QD16"  # before probe presets
    assert old.torture == "4 KiB random write QD16" and old.iops_top == 40000
    recorded = ch.Workload.from_meta({
        "params": {"probe_preset": "as-ssd", "probe_gib": 1},
        "probes": {"block_bytes": 4 << 20, "iodepth": 2, "probe_bytes": 357_913_600}})
    assert recorded.probe == "sequential-write probe, 341.3 MiB in 4 MiB blocks QD2"
    junk = ch.Workload.from_meta({"params": {"iodepth": "x", "block_size_torture": 7,
                                             "chart_iops_top": -1}, "probes": []})
    assert junk == ch.Workload()
    assert ch.size_text("4k") == "4 KiB" and ch.size_text("1536") == "1.5 KiB"
    assert ch.size_text("weird") == "weird"


def test_mb_s_and_warnings_in_summary_and_pages(tmp_path: Path):
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, DriveSpec(model="W <b>", serial="W1"), duration=120,
                               runs=("consistency-default", "trim"))
    warning = ("iops.csv: the per-second series sums to 1,000 I/Os, fio's own total is "
               "1,200 (-16.67%, more than 0.5%)")
    meta_path = drive / "consistency-default" / "run.json"
    meta = json.loads(meta_path.read_text())
    # the shapes the measure stages record (fio/logs.py reconcile, stages/measure.py)
    meta["warnings"] = [{"kind": "reconciliation", "stage": "torture",
                         "message": warning + " <x>"}]
    meta["reconciliation"] = {
        "torture": {"csv": "iops.csv", "quantity": "ios", "series_total": 1000.0,
                    "fio_total": 1200, "relative_gap": -0.166667, "tolerance": 0.005,
                    "within_tolerance": False, "missing_seconds": 1,
                    "recovered_tail": False},
        "fill": {"csv": "fill.csv", "quantity": "bytes", "series_total": 268443648.0,
                 "fio_total": 268443648, "relative_gap": 0.0, "tolerance": 0.005,
                 "within_tolerance": True, "missing_seconds": 0, "recovered_tail": True}}
    meta_path.write_text(json.dumps(meta))
    render_drive(drive, svg=False)
    render_index(root, svg=False)

    with open(root / "summary.csv", newline="") as f:
        reader = csv.DictReader(f)
        rows = list(reader)
        assert tuple(reader.fieldnames or ()) == SUMMARY_COLUMNS
    assert SUMMARY_COLUMNS[:len(SUMMARY_V1)] == SUMMARY_V1  # only added at the end
    trim = next(r for r in rows if r["run"] == "trim")
    assert (trim["trim_clean_mib_s"], trim["trim_clean_mb_s"]) == ("315.1", "330.4")
    assert (trim["trim_after_torture_mb_s"], trim["trim_after_trim_mb_s"]) == ("192.2", "202.7")
    cons = next(r for r in rows if r["run"] == "consistency-default")
    assert (cons["warnings"], trim["warnings"], cons["trim_clean_mb_s"]) == ("1", "0", "")

    page = (drive / "report.html").read_text()
    assert "315.1 MiB/s · 330.4 MB/s" in page
    shown = html.escape(f"{warning} <x>")
    assert f"warning: {shown}" in page and "<x>" not in page
    assert "Per-second series against fio's totals" in page
    assert "-16.667%" in page and "+0.000%" in page and "268,443,648" in page
    index = (root / "index.html").read_text()
    assert f"consistency-default: {shown}" in index
    assert "trim_clean_mb_s" in index  # every column of summary.csv, one click away


def test_a_one_second_fill_is_visible():
    """A small drive fills in a second: one sample, drawn as a marker inside both panels."""
    fig = ch.fill_figure(np.array([0.0]), np.array([2093.0]), np.array([0.219]),
                         title="loop0 — consistency-default, 0% OP", cliff_s=None,
                         cliff_gib=None, mean_mib_s=2093.0)
    for ax in fig.axes:
        (line, *_) = ax.get_lines()
        assert line.get_marker() == "o" and line.get_markersize() > 0
        x = float(np.asarray(line.get_xdata())[0])
        lo, hi = ax.get_xlim()
        assert lo < x < hi  # not on a spine
    assert_no_series_clipped(fig)
    assert assert_legends_clear(fig) == 1
    assert "2093 MiB/s (2195 MB/s)" in " ".join(_legend_texts(fig))


def test_compare_trim_keeps_long_drive_names_inside_the_figure():
    """A drive label as long as the demo's consumer drive was cut at the figure's left edge."""
    values = {"clean": 3.9, "after_torture": 1.4, "after_trim": 3.9}
    fig = ch.compare_trim_figure([
        ("ssdbench demo consumer SSD DEMOSATA0001", values, "effective",
         "probe: 16 MiB, 16 MiB blocks, QD1"),
        ("QEMU NVMe Ctrl DEMONVME0001", values, "ineffective",
         "probe: 8 GiB, 128 KiB blocks, QD32")])
    assert fig is not None
    renderer = fig.canvas.get_renderer()  # type: ignore[attr-defined]
    width = fig.get_figwidth() * fig.dpi
    labels = fig.axes[0].get_yticklabels()
    assert [t.get_text().split("\n")[-1] for t in labels] == [
        "verdict: effective", "verdict: ineffective"]
    # issue #20 item 3: which probe shape each drive used
    shapes = ["probe: 16 MiB, 16 MiB blocks, QD1", "probe: 8 GiB, 128 KiB blocks, QD32"]
    assert all(shape in t.get_text().replace("\n", " ")
               for t, shape in zip(labels, shapes, strict=True))
    for text in labels:
        box = text.get_window_extent(renderer)
        assert box.x0 >= 0 and box.x1 <= width, (text.get_text(), box)


def test_a_throttle_and_the_cliff_are_drawn_differently():
    # #30: a throttle on the plateau is a red hatched span of its own, the cliff the orange
    # dashed line; the legend names both
    from ssdbench.analysis import analyse_iops

    rng = np.random.default_rng(5)
    iops = np.r_[rng.normal(42_000, 1_200, 700), rng.normal(7_000, 500, 1300)].clip(0)
    iops[300:390] *= 0.35
    a = analyse_iops(iops)
    assert a.events is not None and a.cliff.at_s == 700
    events = [(e.kind, e.at_s, e.duration_s) for e in a.events.events if e.kind != "cliff"]
    assert events == [("throttle", 300, 90)]
    name, fig = ch.iops_figures(np.arange(iops.size, dtype=float), iops, title="t",
                                steady_start_s=1400, cliff_s=a.cliff.at_s,
                                events=events)[0]
    assert name == "iops-full-log"
    ax = fig.axes[0]
    spans = [p for p in ax.patches if p.get_gid() == "event-throttle"]
    assert len(spans) == 1 and spans[0].get_hatch() == "//"
    labels = ax.get_legend_handles_labels()[1]
    assert "spare-area cliff: 700 s" in labels and "throttle: 300 s" in labels
