"""The drive's own counters and temperature in report.html (#20 item 5), from run folders
written per the engine's contract (docs/results-format.md: run.json "health",
"environment", sensors-<phase>.csv)."""

from __future__ import annotations

import json
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from ssdbench.report import charts as ch
from ssdbench.report import render_drive
from ssdbench.report.load import load_run
from tests.unit.report.synthetic import GIB, DriveSpec, write_drive_folder, write_sensors
from tests.unit.report.test_charts import assert_legends_clear, assert_no_series_clipped


def _counters(page: str, run: str) -> dict[str, list[str]]:
    section = page[page.index(f'<h2 id="{run}">'):]
    start = section.index("<h3>Drive&#x27;s own counters</h3>")
    part = section[start:section.index("</table>", start)]
    out = {}
    for row in re.findall(r"<tr>(.*?)</tr>", part, re.S):
        cells = [re.sub(r"<[^>]+>", "", c).strip()
                 for c in re.findall(r"<t[hd][^>]*>(.*?)</t[hd]>", row, re.S)]
        out[cells[0]] = cells[1:]
    return out


@pytest.fixture
def temperature_figures(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[tuple[str, Any]]]:
    figs: list[tuple[str, Any]] = []
    real = ch.temperature_figure

    def wrap(*args: Any, **kwargs: Any) -> Any:
        fig = real(*args, **kwargs)
        figs.append((kwargs.get("name", ""), fig))
        return fig

    monkeypatch.setattr(ch, "temperature_figure", wrap)
    yield figs


@pytest.fixture
def drive(tmp_path: Path) -> Path:
    return write_drive_folder(tmp_path / "ssdbench", DriveSpec(), duration=300,
                              runs=("consistency-default", "trim"))


def test_sensors_are_read_by_second_with_gaps(drive: Path):
    data = load_run(drive / "consistency-default")
    temp = data.sensors["torture"]["temperature_c"]
    assert temp.size == 300 and np.isnan(temp[7]) and temp[0] == 40
    probes = load_run(drive / "trim").sensors
    assert set(probes) == {"probe-clean", "probe-after_torture", "probe-after_trim"}


def test_counters_table_before_after_change_with_units(drive: Path):
    render_drive(drive, svg=False)
    page = (drive / "report.html").read_text()
    rows = _counters(page, "consistency-default")
    assert rows["Counter"] == ["Before", "After", "Change"]
    assert rows["Temperature"] == ["41 °C", "58 °C", "+17 °C"]
    meta = json.loads((drive / "consistency-default" / "run.json").read_text())
    host = meta["health"]["delta"]["host_writes_bytes"]
    assert rows["Host writes"][2] == "+" + _both(host)
    assert rows["Write amplification (NAND ÷ host writes)"] == ["", "", "2.50"]
    assert rows["Power-on time"] == ["12 h", "13 h", "+1 h"]
    assert rows["Percentage used"] == ["0%", "1%", "+1%"]
    assert "nvme smart-log" in page and "smart/before.json" in page
    trim = _counters(page, "trim")
    assert trim["NAND writes"] == ["not reported", "not reported", "not reported"]
    assert trim["Write amplification (NAND ÷ host writes)"][2] == \
        "not known (the drive reports no NAND writes)"
    assert trim["Thermal throttle events"] == ["0", "2", "+2"]
    env = page[page.index("<h3>Environment</h3>"):]
    assert "I/O scheduler" in env and "write back" in env and "fio-3.33" in env


def _both(n: int) -> str:
    from ssdbench.report.html import bytes_both

    return bytes_both(n)


def test_bytes_both():
    from ssdbench.report.html import bytes_both

    assert bytes_both(0) == "0 B"
    assert bytes_both(3 * GIB) == "3.2 GB (3 GiB)"


def test_old_runs_without_health_say_so(drive: Path):
    path = drive / "consistency-default" / "run.json"
    meta = json.loads(path.read_text())
    del meta["health"], meta["environment"]
    path.write_text(json.dumps(meta))
    render_drive(drive, svg=False)
    page = (drive / "report.html").read_text()
    section = page[page.index('<h2 id="consistency-default">'):page.index('<h2 id="trim">')]
    assert "not recorded by this run" in section


def test_unavailable_counters_name_the_reason(drive: Path):
    path = drive / "consistency-default" / "run.json"
    meta = json.loads(path.read_text())
    meta["health"] = {"tool": None, "before": None, "after": None, "delta": {},
                      "unavailable": "smartctl: Unknown USB bridge"}
    path.write_text(json.dumps(meta))
    render_drive(drive, svg=False)
    assert "smartctl: Unknown USB bridge" in (drive / "report.html").read_text()


def test_temperature_charts_under_the_iops_and_probe_charts(
        drive: Path, temperature_figures: list[tuple[str, Any]]):
    report = render_drive(drive, svg=False)
    names = [p.name for p in report.charts]
    assert "temperature-torture.png" in names and "temperature-probes.png" in names
    page = (drive / "report.html").read_text()
    order = re.findall(r'alt="consistency-default: ([\w-]+)"', page)
    assert order.index("temperature-torture") == order.index("iops-full-log") + 1
    trim_order = re.findall(r'alt="trim: ([\w-]+)"', page)
    assert trim_order.index("temperature-probes") == trim_order.index("trim-probes") + 1
    torture = next(f for n, f in temperature_figures if n == "temperature-torture")
    ax = torture.axes[-1]
    assert ax.get_xlim() == (0.0, 300.0)  # the IOPS chart's time axis
    line = next(ln for ln in ax.get_lines() if ln.get_gid() == "temperature")
    y = np.asarray(line.get_ydata(), float)
    assert np.isnan(y[7]) and np.nanmax(y) <= ax.get_ylim()[1]
    for _, fig in temperature_figures:  # the chart rules of docs/analysis.md hold
        assert assert_legends_clear(fig) >= 1
        assert_no_series_clipped(fig)
    # the plot area lines up with the IOPS chart's above it
    iops_fig, _ = ch._figure()
    assert torture.axes[-1].get_position().x0 == pytest.approx(iops_fig.axes[0].get_position().x0)
    assert torture.axes[-1].get_position().x1 == pytest.approx(iops_fig.axes[0].get_position().x1)


def test_no_sensors_file_no_temperature_chart(drive: Path):
    (drive / "consistency-default" / "sensors-torture.csv").unlink()
    for p in (drive / "trim").glob("sensors-*.csv"):
        p.unlink()
    report = render_drive(drive, svg=False)
    assert not [p for p in report.charts if p.name.startswith("temperature")]


def test_a_sensors_file_of_empty_cells_is_not_charted(drive: Path):
    write_sensors(drive / "consistency-default" / "sensors-torture.csv", 5,
                  gaps=(0, 1, 2, 3, 4))
    report = render_drive(drive, svg=False)
    assert "temperature-torture.png" not in [p.name for p in report.charts]


def test_no_read_at_no_empty_row(drive: Path):
    """The engine as it runs in QEMU today records no ``read_at``: no row of blanks."""
    path = drive / "consistency-default" / "run.json"
    meta = json.loads(path.read_text())
    for when in ("before", "after"):
        del meta["health"][when]["read_at"]
    path.write_text(json.dumps(meta))
    render_drive(drive, svg=False)
    rows = _counters((drive / "report.html").read_text(), "consistency-default")
    assert "Read at" not in rows and "Host writes" in rows
