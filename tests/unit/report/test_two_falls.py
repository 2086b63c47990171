"""#43: the report shows what the analysis computes. A drive that leaves its first level in
two falls has the end of fresh-out-of-box named beside the cliff, in the consistency table,
on the IOPS chart, in the WSAT table and on the WSAT chart; a HIR with stall seconds shows
them (docs/analysis.md "Two falls", "Host idle recovery")."""

from __future__ import annotations

import csv
import io
import re
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import numpy as np
import pytest
from matplotlib.figure import Figure
from matplotlib.lines import Line2D

from ssdbench.analysis.pts import Hir, HirState, Wsat
from ssdbench.report import charts as ch
from ssdbench.report import hir_csv, render_drive
from ssdbench.report.html import _hir_html, _wsat_html
from tests.unit.report.synthetic import DriveSpec, write_drive_folder

TWO_LEVELS = DriveSpec(model="Two Level SSD", fob_iops=80_000.0, mid_iops=24_000.0,
                       steady_iops=6_000.0, fob_end_s=300, cliff_s=700)


def _vlines(fig: Figure) -> dict[str, Line2D]:
    """The labelled vertical lines of a figure's first axes, by label."""
    ax = fig.axes[0]
    out = {}
    for ln in ax.get_lines():
        label = str(ln.get_label())
        if len(set(np.atleast_1d(np.asarray(ln.get_xdata())))) == 1 and not label.startswith("_"):
            out[label] = ln
    return out


def _x(line: Line2D) -> float:
    return float(np.atleast_1d(np.asarray(line.get_xdata()))[0])


def test_a_two_level_drive_names_both_falls_and_its_chart_marks_both(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    figs: list[tuple[str, Figure]] = []

    def capture(real: Callable[..., list[tuple[str, Figure]]]) -> Callable[..., Any]:
        def wrap(*args: Any, **kwargs: Any) -> list[tuple[str, Figure]]:
            out = real(*args, **kwargs)
            figs.extend(out)
            return out
        return wrap

    monkeypatch.setattr(ch, "iops_figures", capture(ch.iops_figures))
    drive = write_drive_folder(tmp_path, TWO_LEVELS, runs=("consistency-default",))
    render_drive(drive, svg=False)
    html = (drive / "report.html").read_text()
    assert re.search(r"End of fresh-out-of-box: 300 s, from (79|80),\d{3} IOPS \(held 300 s\)",
                     html)
    assert "the fall into steady state" in html

    [full] = [fig for name, fig in figs if name == "iops-full-log"]
    lines = _vlines(full)
    assert "end of FOB: 300 s" in lines
    assert "spare-area cliff (fall into steady state): 700 s" in lines
    fob, cliff = lines["end of FOB: 300 s"], lines["spare-area cliff (fall into steady state): 700 s"]
    assert _x(fob) == 300 and _x(cliff) == 700
    # drawn differently from the cliff's orange dashed line
    assert (fob.get_color(), fob.get_linestyle()) != (cliff.get_color(), cliff.get_linestyle())
    assert fob.get_linestyle() == "-." and cliff.get_linestyle() == "--"
    assert not any(lab.startswith("step") for lab in lines)  # that step is the end of FOB


def test_a_drive_with_one_fall_has_one_marker(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    figs: list[tuple[str, Figure]] = []
    real = ch.iops_figures

    def capture(*args: Any, **kwargs: Any) -> list[tuple[str, Figure]]:
        out = real(*args, **kwargs)
        figs.extend(out)
        return out

    monkeypatch.setattr(ch, "iops_figures", capture)
    drive = write_drive_folder(tmp_path, DriveSpec(), runs=("consistency-default",))
    render_drive(drive, svg=False)
    html = (drive / "report.html").read_text()
    assert "End of fresh-out-of-box" not in html and "fall into steady state" not in html
    labels = list(_vlines(figs[0][1]))
    assert "spare-area cliff: 300 s" in labels
    assert not any("FOB" in lab for lab in labels)


def _wsat(**kwargs: Any) -> Wsat:
    base: dict[str, Any] = dict(
        span_bytes=100 * 10**9, io_bytes=4096, goal_multiple=2.0, seconds=2000,
        written_gb=200.0, capacity_written=2.0, ended_by="capacity", fob_iops=99_000.0,
        cliff_at_s=1400, cliff_written_gb=160.0, cliff_capacity=1.6, steady_iops=10_000.0,
        steady_at_s=1800, steady_written_gb=190.0, final_iops=10_000.0, round_s=60,
        rounds=(), fob_end_s=800, fob_end_written_gb=100.0, fob_end_capacity=1.0,
        fob_level_iops=100_000.0, curve=np.linspace(0.1, 200.0, 2000))
    base.update(kwargs)
    return Wsat(**base)


def test_the_wsat_table_names_the_end_of_fresh_out_of_box() -> None:
    html = _wsat_html(SimpleNamespace(wsat=_wsat()))  # type: ignore[arg-type]
    assert ("end of fresh-out-of-box" in html
            and "800 s, after 100.000 GB = 1.00 × the capacity, from 100,000 IOPS" in html)
    assert "cliff: the fall into steady state" in html
    one = _wsat_html(SimpleNamespace(wsat=_wsat(fob_end_s=1400)))  # type: ignore[arg-type]
    assert "end of fresh-out-of-box" not in one


def test_the_wsat_chart_marks_the_end_of_fresh_out_of_box() -> None:
    w = _wsat()
    iops = np.r_[np.full(800, 100_000.0), np.full(600, 40_000.0), np.full(600, 10_000.0)]
    fig = ch.wsat_figure(w.curve, iops, io_bytes=4096, span_gb=100.0, title="t",
                         cliff_gb=160.0, fob_end_gb=100.0, final_iops=10_000.0)
    lines = _vlines(fig)
    fob = lines["end of FOB at 100.00 GB (1.00 × capacity)"]
    cliff = lines["cliff (fall into steady state) at 160.00 GB (1.60 × capacity)"]
    assert _x(fob) == 100.0 and fob.get_linestyle() == "-."
    assert cliff.get_linestyle() == "--"


def _hir() -> Hir:
    return Hir(burst_s=5, baseline_iops=10_000.0, states=(
        HirState(5, 30, 11_000.0, 1.1, 10_000.0, 1.1),
        HirState(10, 30, 9_000.0, 0.9, 10_000.0, 0.9, stall_seconds=7,
                 note="7 second(s) without writes inside the bursts")))


def test_a_hir_with_stalls_shows_its_stall_seconds_and_notes() -> None:
    rows = list(csv.reader(io.StringIO(hir_csv(_hir()))))
    assert rows[0][-1] == "stall_seconds"
    assert [r[-1] for r in rows[1:]] == ["0", "7"]
    assert rows[0][:5] == ["wait_s", "bursts", "burst_iops", "recovery", "base_iops"]
    html = _hir_html(SimpleNamespace(hir=_hir()))  # type: ignore[arg-type]
    assert "stall seconds in the bursts" in html
    assert "7 second(s) without writes inside the bursts" in html
    assert '<td class="num">7</td>' in html
