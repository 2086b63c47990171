"""The results screen tells where report.html and index.html are, shows the TRIM probes and
the verdict in words, and its table has a TRIM column an 80-column console shows
(#24 item 6)."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.widgets import DataTable, Static

from ssdbench.plan.engine import DriveOutcome, RunOutcome
from ssdbench.ui.results import ResultsScreen
from tests.ui.conftest import make_app, wait_for
from tests.unit.report.plan_runs import (
    NO_FIRMWARE_ERASE,
    SPEED_CORNERS,
    write_grade,
    write_intake,
    write_speed,
)
from tests.unit.report.synthetic import DriveSpec, write_drive_folder


def text_of(screen: ResultsScreen, selector: str) -> str:
    return str(screen.query_one(selector, Static).content)


async def test_results_name_the_pages_and_show_the_trim_probes(tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    drive_dir = write_drive_folder(root, DriveSpec(), duration=120, runs=("trim",))
    outcome = DriveOutcome("sda", "S1", drive_dir,
                           (RunOutcome("trim", "done", None, drive_dir / "trim"),))
    app = make_app(results_root=root)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = ResultsScreen([outcome], root, [])
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.summaries), what="results")
        await pilot.pause()
        where = text_of(screen, "#results-where")
        assert str(drive_dir / "report.html") in where
        assert str(root / "index.html") in where
        detail = text_of(screen, "#results-detail")
        clean, torture, trim = DriveSpec().trim_mib_s
        assert (f"clean {clean:,.1f}, after torture {torture:,.1f}, "
                f"after TRIM {trim:,.1f} MiB/s") in detail, detail
        assert "won back" in detail  # the verdict in words, not a bare ratio
        table = screen.query_one("#results", DataTable)
        right = 0
        for column in table.ordered_columns:
            right += column.get_render_width(table)
            if str(column.label) == "TRIM":
                break
        else:
            raise AssertionError("no TRIM column")
        assert right <= 80, "the TRIM column is off an 80-column screen"


async def results_for(tmp_path: Path, write: Any) -> tuple[bool, str, list[str]]:
    """(the answer is above the table, the answer's text, the table's columns) at 80x25."""
    root = tmp_path / "ssdbench"
    _drive_dir, outcome = write(root)
    app = make_app(results_root=root)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = ResultsScreen([outcome], root, [])
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.summaries), what="results")
        await pilot.pause()
        table = screen.query_one("#results", DataTable)
        first = screen.query_one("#results-answer", Static).region.y < table.region.y
        return first, text_of(screen, "#results-answer"), [
            str(c.label) for c in table.ordered_columns]


async def test_intake_leads_with_capacity_grade_and_the_erase_reason(tmp_path: Path) -> None:
    """#45: after an intake on a drive with no firmware erase, the capacity verdict, the
    grade and why the erase failed lead the screen; no consistency columns."""
    first, answer, columns = await results_for(tmp_path, write_intake)
    assert "capacity genuine" in answer
    assert "grade note" in answer
    assert "erase FAIL" in answer and NO_FIRMWARE_ERASE[:40] in answer
    assert "erase record: erase/record.json UNSIGNED" in answer  # #45 F
    assert columns == ["drive", "run", "state", "capacity", "grade", "erase"], columns
    assert first, "the answer is not above the table"


async def test_grade_and_speed_have_their_own_columns(tmp_path: Path) -> None:
    _s, answer, columns = await results_for(tmp_path / "g", write_grade)
    assert columns == ["drive", "run", "state", "grade"], columns
    assert "grade note" in answer and "power-on hours" in answer
    _s, answer, columns = await results_for(tmp_path / "s", write_speed)
    assert columns == ["drive", "run", "state", "speed"], columns
    assert "as fast as its class" in answer
    for label, mb in SPEED_CORNERS:
        assert f"{label} read {mb:,.0f} MB/s" in answer, answer


async def test_three_intakes_fit_80x25_with_whole_cells_and_the_detail_pane(
        tmp_path: Path) -> None:
    """#45 C, D: three drives' intakes overflowed 80x25 (the detail pane never showed, the
    third report path hidden without a sign), the grade cell read "not gra" and a wrapped
    reason went back to column 0."""
    import dataclasses

    from ssdbench.ui.results import column_widths

    root = tmp_path / "ssdbench"
    outcomes = []
    for n in (1, 2, 3):
        _d, outcome = write_intake(root / f"d{n}")
        outcomes.append(dataclasses.replace(outcome, drive=f"loop{n}"))
    app = make_app(results_root=root)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = ResultsScreen(outcomes, root, [])
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.summaries), what="results")
        await pilot.pause()
        detail = screen.query_one("#results-detail", Static)
        top = screen.query_one("#results-top")
        assert detail.region.height >= 3 and detail.region.bottom <= 24, detail.region
        # what does not fit scrolls, with its bar showing; every report path is in it
        assert top.max_scroll_y > 0 and top.show_vertical_scrollbar
        where = text_of(screen, "#results-where")
        assert all(f"{o.drive_dir}/report.html" in where for o in outcomes)
        # a reason that wraps keeps its indent
        from rich.console import Console

        console = Console(width=40, record=True, color_system=None)
        console.print(screen.query_one("#results-answer", Static).content)
        lines = console.export_text().splitlines()
        reason = lines.index(next(ln for ln in lines if "erase FAIL:" in ln))
        assert lines[reason].startswith("  erase FAIL:")
        assert lines[reason + 1].startswith("  ") and lines[reason + 1].strip(), lines
    rows = [("loop1", "erase", "failed", "", "not gradable", "FAIL"),
            ("loop1", "speed", "done", "no reference for this model", "", "")]
    widths = column_widths(("drive", "run", "state", "capacity", "grade", "erase"), rows)
    assert widths[4] == len("not gradable") and sum(w + 2 for w in widths) <= 80
    widths = column_widths(("drive", "run", "state", "speed"), [r[:4] for r in rows[1:]])
    assert widths[3] == len("no reference for this model")


async def test_a_speed_run_says_its_verdict_once_above_and_once_in_its_row(
        tmp_path: Path) -> None:
    """#45 B: "no reference for this model" three times on the speed screen (the answer,
    its corners' line, the detail pane) besides the row's cell."""
    root = tmp_path / "ssdbench"
    _d, outcome = write_speed(root)
    app = make_app(results_root=root)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = ResultsScreen([outcome], root, [])
        app.push_screen(screen)
        await wait_for(pilot, lambda: bool(screen.summaries), what="results")
        await pilot.pause()
        answer = text_of(screen, "#results-answer")
        detail = text_of(screen, "#results-detail")
    assert answer.count("as fast as its class") == 1, answer
    assert "as fast as its class" not in detail and "SEQ1M Q8T1 read" in detail, detail
