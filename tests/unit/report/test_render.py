"""render_drive / render_index / `ssdbench report` on generated result folders."""

from __future__ import annotations

import io
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from ssdbench.cli import main
from ssdbench.report import SUMMARY_COLUMNS, DriveReport, analyse_run, render_drive, render_index
from tests.schema_check import check_csv
from tests.unit.report.synthetic import DriveSpec, write_drive_folder

PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


def _png_pixels(path: Path) -> np.ndarray:
    from matplotlib.image import imread

    return np.asarray(imread(io.BytesIO(path.read_bytes()), format="png"))


def _red_pixels(img: np.ndarray) -> int:
    """Pixels of the zero-IOPS colour inside the plot area's lower half (not the legend,
    not the "0" label left of the axis)."""
    img = img[400:640, 100:1170]
    r, g, b = img[..., 0], img[..., 1], img[..., 2]  # ZERO = #d62728
    return int(((abs(r - 0xD6 / 255) < 0.03) & (abs(g - 0x27 / 255) < 0.03)
                & (abs(b - 0x28 / 255) < 0.03)).sum())


@pytest.fixture(scope="module")
def results(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stick") / "ssdbench"
    write_drive_folder(root, DriveSpec(model='Evil <script>alert("x")</script> SSD',
                                       serial="S&1", long_stall_at_s=450),
                       duration=600, runs=("consistency-default", "trim"))
    write_drive_folder(root, DriveSpec(model="Calm NVMe", serial="N2", stall_every_s=0,
                                       long_stall_s=0, trim_mib_s=(2000, 900, 1950)),
                       seed=5, duration=600, runs=("consistency-default", "trim"),
                       interrupted=("consistency-default",))
    return root


@pytest.fixture(scope="module")
def rendered(results: Path) -> dict[str, DriveReport]:
    """Both drives rendered once (SVG for the first), then the index."""
    reports = {
        "evil": render_drive(next(results.glob("*Evil*"))),
        "calm": render_drive(next(results.glob("*Calm*")), svg=False),
    }
    render_index(results, svg=False)
    return reports


def test_analyse_run_reads_the_files_alone(results: Path):
    run_dir = next(results.glob("*Evil*")) / "consistency-default"
    a = analyse_run(run_dir)
    assert a.complete and a.kind == "consistency" and a.state == "done"
    assert a.steady_start_s == 420  # params.steady_start_s = 70% of 600
    assert a.iops is not None and a.iops.duration_s == 600
    assert a.iops.stalls.longest_zero_run_s == 15
    assert a.iops.stalls.longest_zero_run_start_s == 450
    assert a.iops.cliff.at_s == 300
    assert a.latency is not None and a.latency.mean_us is not None
    assert a.fill is not None and a.fill.cliff_gib == pytest.approx(20.0, abs=0.6)
    trim = analyse_run(run_dir.parent / "trim").trim
    assert trim is not None and trim.verdict == "ineffective"
    assert round(trim.recovery or 0, 2) == 0.08


def test_render_drive_writes_charts_html_and_run_json(rendered: dict[str, DriveReport]):
    report = rendered["evil"]
    drive = report.drive_dir
    names = sorted(p.name for p in report.charts)
    run = drive / "consistency-default"
    for stem in ("iops-full-log", "iops-steady-log", "iops-steady-linear", "latency", "fill"):
        assert f"{stem}.png" in names and f"{stem}.svg" in names
        png = (run / f"{stem}.png").read_bytes()
        assert png.startswith(PNG_MAGIC)
        assert _png_pixels(run / f"{stem}.png").shape[:2] == (700, 1200)
        assert (run / f"{stem}.svg").read_text().lstrip().startswith("<?xml")
    assert (drive / "trim" / "trim-probes.png").is_file()
    meta = json.loads((run / "run.json").read_text())
    assert meta["analysis"]["iops"]["stalls"]["longest_zero_run_s"] == 15
    assert meta["analysis"]["complete"] is True
    assert meta["params"]["torture_seconds"] == 600  # the rest of run.json is kept
    html = (drive / "report.html").read_text()
    assert "<script>" not in html and "&lt;script&gt;alert(&quot;x&quot;)" in html
    assert "S&amp;1" in html
    assert html.count("data:image/png;base64,") == 8  # with the two temperature charts
    # SNIA steady state is searched after the cliff (300 s): the 90K plateau before it is
    # not steady, and the 600-s run ends still settling (docs/analysis.md)
    assert "ineffective" in html and "not reached" in html and "reached at" not in html
    assert 'href="consistency-default/iops.csv"' in html
    assert 'href="consistency-default/jobs/torture.fio"' in html


def test_zero_iops_seconds_are_visible_on_the_log_charts(rendered: dict[str, DriveReport]):
    stalls = rendered["evil"].drive_dir / "consistency-default"
    calm = rendered["calm"].drive_dir / "consistency-default"
    assert _red_pixels(_png_pixels(stalls / "iops-full-log.png")) > 200
    assert _red_pixels(_png_pixels(calm / "iops-full-log.png")) == 0


def test_incomplete_run_is_reported_not_fatal(rendered: dict[str, DriveReport]):
    report = rendered["calm"]
    drive = report.drive_dir
    by_name = {r.run: r for r in report.runs}
    bad = by_name["consistency-default"]
    assert not bad.complete and bad.state == "interrupted"
    assert any("interrupted" in p for p in bad.problems)
    assert bad.iops is not None and bad.iops.duration_s == 300
    assert by_name["trim"].complete and by_name["trim"].trim is not None
    assert by_name["trim"].trim.verdict == "effective"
    assert "run interrupted" in (drive / "report.html").read_text()


def test_render_index_summary_and_comparison(rendered: dict[str, DriveReport], results: Path):
    rows = check_csv(results / "summary.csv")  # its schema (ssdbench/schemas)
    assert tuple(rows[0].keys()) == SUMMARY_COLUMNS
    assert len(rows) == 4
    evil = [r for r in rows if r["serial"] == "S&1"]
    cons = next(r for r in evil if r["run"] == "consistency-default")
    assert cons["duration_s"] == "600" and cons["longest_stall_s"] == "15"
    assert float(cons["zero_iops_seconds"]) >= 15
    assert cons["erase_method"] == "ata-security-erase-enhanced"
    assert cons["erase_verified"] == "true"
    trim = next(r for r in evil if r["run"] == "trim")
    assert (trim["trim_clean_mib_s"], trim["trim_after_torture_mib_s"],
            trim["trim_after_trim_mib_s"], trim["trim_verdict"]) == (
        "315.1", "183.3", "193.3", "ineffective")
    assert trim["steady_iops_mean"] == ""
    for stem in ("compare-consistency-default-iops-full-log",
                 "compare-consistency-default-iops-steady-log",
                 "compare-consistency-default-iops-steady-linear", "compare-trim"):
        assert (results / f"{stem}.png").read_bytes().startswith(PNG_MAGIC)
    index = (results / "index.html").read_text()
    assert "&lt;script&gt;" in index and "<script>" not in index
    assert "report.html" in index and index.count("data:image/png;base64,") == 4


def test_a_crashing_run_does_not_stop_the_drive_report(tmp_path: Path):
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=120, runs=("consistency-default", "trim"))
    (drive / "consistency-default" / "iops.csv").write_bytes(b"\xff\xfe garbage")
    (drive / "trim" / "probes.csv").unlink()
    for p in (drive / "trim").glob("probe-after_trim.csv"):
        p.unlink()
    report = render_drive(drive, svg=False)
    by_name = {r.run: r for r in report.runs}
    assert any("iops.csv" in p for p in by_name["consistency-default"].problems)
    assert by_name["trim"].trim is not None and by_name["trim"].trim.verdict == "incomplete"
    assert report.html is not None and report.html.is_file()
    render_index(root, svg=False)
    assert "incomplete" in (root / "summary.csv").read_text()


def test_ssdbench_report_is_reproducible(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    stick = tmp_path / "stick"
    root = stick / "ssdbench"
    write_drive_folder(root, duration=300, runs=("consistency-default", "trim"))
    assert main(["report", "--no-svg", str(stick)]) == 0  # the stick's mount point works too
    out = capsys.readouterr().out
    assert str(root / "index.html") in out
    first = (root / "summary.csv").read_text()
    generated = [p for p in root.rglob("*") if p.suffix in (".png", ".html")
                 or p.name == "summary.csv"]
    assert len(generated) > 5
    for p in generated:
        p.unlink()
    assert main(["report", "--no-svg", str(root)]) == 0
    assert (root / "summary.csv").read_text() == first
    drive = next(p for p in root.iterdir() if p.is_dir())
    assert main(["report", "--no-svg", str(drive)]) == 0  # one drive folder: index refreshed
    assert str(drive / "report.html") in capsys.readouterr().out
    assert (root / "summary.csv").read_text() == first


def test_ssdbench_report_bad_dir(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "no such folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["report", str(tmp_path / "empty")]) == 2
    assert "no ssdbench results" in capsys.readouterr().err


def test_copying_a_folder_elsewhere_keeps_the_report(
    rendered: dict[str, DriveReport], results: Path, tmp_path: Path
):
    """The report is recomputed from the files alone: a copy gives the same summary."""
    copy = tmp_path / "copy"
    shutil.copytree(results, copy)
    for p in copy.glob("summary.csv"):
        p.unlink()
    render_index(copy, svg=False)
    assert (copy / "summary.csv").read_text() == (results / "summary.csv").read_text()


def test_report_labels_say_what_the_numbers_are(rendered: dict[str, DriveReport]):
    """Issue #20 items 1 and 6: the latency table's p99 / p99.99 are of all the window's
    I/Os (pooled histograms), not a median of per-second p99s; the literal SNIA rule's
    answer is shown beside ssdbench's, labelled; the fill cliff's reference is named as the
    code computes it."""
    html = (rendered["evil"].drive_dir / "report.html").read_text()
    assert "p99 median" not in html
    assert "p99 (all I/Os)" in html and "p99.99 worst second" in html
    assert "SNIA PTS rule as written (from round 0, cannot look ahead)" in html
    assert "first 30 s" not in html and "first fall below 70%" in html
