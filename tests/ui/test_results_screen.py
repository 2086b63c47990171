"""The results screen tells where report.html and index.html are, shows the TRIM probes and
the verdict in words, and its table has a TRIM column an 80-column console shows
(#24 item 6)."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import DataTable, Static

from ssdbench.plan.engine import DriveOutcome, RunOutcome
from ssdbench.ui.results import ResultsScreen
from tests.ui.conftest import make_app, wait_for
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
