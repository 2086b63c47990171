"""`ssdbench report DIR --batch-day DAY` (#45): the batch page of a station day, every drive
with a run started on that UTC date, made from the results folder alone."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.commands.report import batch_day
from ssdbench.exitcodes import ExitCode
from tests.unit.record.test_batch import results


def test_the_day_page_lists_the_drives_of_that_day(tmp_path: Path,
                                                   capsys: pytest.CaptureFixture[str]) -> None:
    results(tmp_path)
    assert batch_day(tmp_path, "2026-11-28", pdf=False) == ExitCode.OK
    page = (tmp_path / "batch-2026-11-28.html").read_text()
    assert "station day 2026-11-28" in page
    assert "SSDBNVME0001" in page and "FAKE2TB0001" in page
    assert str(tmp_path / "batch-2026-11-28.html") in capsys.readouterr().out


def test_a_day_with_no_drive_and_a_bad_day_are_said(tmp_path: Path,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    results(tmp_path)
    assert batch_day(tmp_path, "2026-11-27", pdf=False) == ExitCode.FAILURE
    assert "no drive" in capsys.readouterr().err
    for bad in ("28.11.2026", "2026-13-01", "../../etc", "2026-11-28\n"):
        assert batch_day(tmp_path, bad, pdf=False) == ExitCode.USAGE
    assert not list(tmp_path.glob("batch-*"))


def test_the_report_command_makes_it(tmp_path: Path) -> None:
    results(tmp_path)
    code = main(["report", str(tmp_path), "--no-svg", "--batch-day", "2026-11-28",
                 "--no-pdf"])
    assert code == ExitCode.OK
    assert (tmp_path / "batch-2026-11-28.html").is_file()
    assert not (tmp_path / "batch-2026-11-28.pdf").exists()
