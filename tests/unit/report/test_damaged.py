"""A damaged or cancelled run says so where it is read: the runs table, summary.csv,
index.html's comparison panels and the exit code of `ssdbench report` (#24 items 7, 10)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.report import charts as ch
from ssdbench.report import render_drive, render_index
from tests.schema_check import check_csv
from tests.unit.report.synthetic import DriveSpec, write_drive_folder


def _rows(root: Path) -> list[dict[str, str]]:
    return check_csv(root / "summary.csv")  # its schema too (ssdbench/schemas)


def test_report_on_a_corrupted_run_json_says_so_and_exits_non_zero(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=120, runs=("consistency-default", "trim"))
    (drive / "consistency-default" / "run.json").write_text('{"schema": 1, "state": "do')
    assert main(["report", "--no-svg", str(root)]) == int(ExitCode.FAILURE)
    err = capsys.readouterr().err
    assert "consistency-default" in err and "run.json" in err and "damaged" in err
    row = next(r for r in _rows(root) if r["run"] == "consistency-default")
    assert row["run_state"] == "damaged"
    assert row["warnings"] == ""  # not known: run.json, which holds them, is unreadable
    page = (drive / "report.html").read_text()
    runs_table = page[page.index("<h3>Runs</h3>"):page.index("</table>",
                                                             page.index("<h3>Runs</h3>"))]
    assert "damaged" in runs_table and "unknown" not in runs_table
    assert "run.json unreadable" in runs_table
    index = (root / "index.html").read_text()
    assert "damaged" in index
    # the trim run beside it is reported as usual
    assert next(r for r in _rows(root) if r["run"] == "trim")["run_state"] == "done"


def test_a_missing_run_json_is_not_damage(tmp_path: Path, capsys: pytest.CaptureFixture[str]):
    """An interrupted run (no run.json written yet) is a state, not a damaged file."""
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=120, runs=("consistency-default",))
    (drive / "consistency-default" / "run.json").unlink()
    assert main(["report", "--no-svg", str(root)]) == 0


def test_a_cancelled_run_has_its_own_label_and_no_empty_steady_panel(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch):
    """The same drive tested twice: first cancelled 100 s into a 300-s torture, then whole.
    index.html's comparison must not show two panels of the same name, one empty."""
    root = tmp_path / "ssdbench"
    spec = DriveSpec(model="Same SSD", serial="S1")
    write_drive_folder(root, spec, duration=300, runs=("consistency-default",))
    first = write_drive_folder(root, DriveSpec(model="Same SSD", serial="S1",
                                               started="20261120T100000Z"),
                               duration=300, runs=("consistency-default",))
    run = first / "consistency-default"
    lines = (run / "iops.csv").read_text().splitlines()[:101]
    (run / "iops.csv").write_text("\n".join(lines) + "\n")
    meta = json.loads((run / "run.json").read_text())
    meta["state"] = "cancelled"
    meta["params"]["steady_start_s"] = 210
    (run / "run.json").write_text(json.dumps(meta))

    figs: list[tuple[str, Any]] = []
    real = ch.compare_iops_figures

    def wrap(*args: Any, **kwargs: Any) -> list[tuple[str, Any]]:
        out = real(*args, **kwargs)
        figs.extend(out)
        return out

    monkeypatch.setattr(ch, "compare_iops_figures", wrap)
    render_index(root, svg=False)
    by_name = dict(figs)
    full = by_name["compare-consistency-default-iops-full-log"]
    labels = [t.get_text() for ax in full.axes for t in ax.texts
              if "Same SSD" in t.get_text()]
    assert len(labels) == 2 and len(set(labels)) == 2
    assert any(re.search(r"cancelled after 100 s", label) for label in labels)
    for kind in ("steady-log", "steady-linear"):
        fig = by_name[f"compare-consistency-default-iops-{kind}"]
        assert len(fig.axes) == 1
        texts = " ".join(t.get_text() for ax in fig.axes for t in ax.texts)
        assert "cancelled" not in texts
        title = fig.get_suptitle()
        assert "without a steady window" in title and "cancelled" in title


def test_render_drive_keeps_a_damaged_run_visible(tmp_path: Path):
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=120, runs=("consistency-default",))
    (drive / "consistency-default" / "run.json").write_bytes(b"\xff\xfe")
    report = render_drive(drive, svg=False)
    run = report.runs[0]
    assert run.state == "damaged" and not run.complete
    assert run.unreadable == ("run.json",)
    assert run.to_dict()["unreadable"] == ["run.json"]


def test_a_run_too_short_for_the_checks_says_so(tmp_path: Path):
    """#24 item 4, report side: the analysis' ``note`` replaces "not found" / "not reached"
    (a 30-s torture, a fill of a few seconds)."""
    from ssdbench.report import analyse_run

    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, DriveSpec(size_bytes=1000**3), duration=30,
                               runs=("consistency-default",))
    a = analyse_run(drive / "consistency-default")
    assert a.iops is not None and a.fill is not None
    notes = [a.iops.steady_state.note, a.iops.cliff.note, a.fill.note]
    assert all(notes), notes
    render_drive(drive, svg=False)
    page = (drive / "report.html").read_text()
    import html as h

    for note in notes:
        assert h.escape(str(note)) in page
    stats = page[page.index("Stalls, steady state, cliff"):page.index("Drive&#x27;s own")]
    assert "not found" not in stats and "not reached (searched" not in stats


@pytest.mark.parametrize("value", [15, 0, "15", True, None])
def test_the_snia_round_length_comes_from_run_json_and_a_bad_one_is_named(
        tmp_path: Path, value: object):
    """params.steady_round_s: 15 gives 15-s rounds in the analysis and the page; a value
    that is not a whole number of seconds from 1 to 3600 (a hand-edited or forged run.json)
    is named as a problem and the PTS's minute is used, never a crash."""
    import json

    from ssdbench.report import analyse_run

    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=150, runs=("consistency-default",))
    path = drive / "consistency-default" / "run.json"
    meta = json.loads(path.read_text())
    meta["params"]["steady_round_s"] = value
    path.write_text(json.dumps(meta))
    a = analyse_run(drive / "consistency-default")
    assert a.iops is not None
    named = [p for p in a.problems if "steady_round_s" in p]
    if value == 15:
        assert a.iops.steady_state.round_s == 15 and named == []
        render_drive(drive, svg=False)
        assert "5 × 15 s rounds, shorter than the PTS" in (drive / "report.html").read_text()
    else:
        assert a.iops.steady_state.round_s == 60
        assert len(named) == 1 and repr(value) in named[0], a.problems
