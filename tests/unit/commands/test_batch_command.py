"""`ssdbench batch DIR --day DAY` (#45): the batch page of a station day from the command
line, and its exit codes (exitcodes.py): 0 written, 1 nothing of that day or a run.json not
read (the page still written), 2 a bad DAY, DIR or --out."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.cli import build_parser, main
from ssdbench.exitcodes import ExitCode
from tests.unit.record.test_batch_day import DAY, hostile_day, station_day
from tests.unit.test_hostile_folder import cli


def test_the_day_page_of_a_stick_and_its_paths(tmp_path: Path,
                                               capsys: pytest.CaptureFixture[str]) -> None:
    station_day(tmp_path / "ssdbench")  # DIR may be the stick holding ssdbench/
    assert main(["batch", str(tmp_path), "--day", DAY, "--no-pdf"]) == ExitCode.OK
    page = tmp_path / "ssdbench" / f"batch-{DAY}.html"
    out = capsys.readouterr()
    assert out.out.splitlines() == [str(page)] and out.err == ""
    assert "station day 2026-11-28" in page.read_text()
    assert "YESTERDAY1" not in page.read_text()


def test_the_pdf_beside_the_page_given_by_out(tmp_path: Path,
                                              capsys: pytest.CaptureFixture[str]) -> None:
    pytest.importorskip("weasyprint")
    station_day(tmp_path / "res")
    out = tmp_path / "day.html"
    assert main(["batch", str(tmp_path / "res"), "--day", DAY, "--out", str(out)]) == 0
    assert capsys.readouterr().out.splitlines() == [str(out), str(out.with_suffix(".pdf"))]
    assert out.with_suffix(".pdf").read_bytes().startswith(b"%PDF")
    assert not list((tmp_path / "res").glob("batch-*"))


def test_exit_codes_of_a_bad_day_dir_out_and_an_empty_day(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    station_day(tmp_path)
    for bad in ("28.11.2026", "2026-13-01", "../../etc", "2026-11-28\n", "\x1b[2J"):
        assert main(["batch", str(tmp_path), "--day", bad]) == ExitCode.USAGE
        assert "\x1b" not in capsys.readouterr().err
    assert main(["batch", str(tmp_path / "missing"), "--day", DAY]) == ExitCode.USAGE
    for out in ("page.pdf", "missing/page.html"):
        assert main(["batch", str(tmp_path), "--day", DAY,
                     "--out", str(tmp_path / out)]) == ExitCode.USAGE
    assert main(["batch", str(tmp_path), "--day", "2026-11-20"]) == ExitCode.FAILURE
    assert "no drive" in capsys.readouterr().err
    stick = tmp_path / "stick"
    stick.mkdir()
    (stick / "ssdbench").symlink_to(tmp_path)
    assert main(["batch", str(stick), "--day", DAY]) == ExitCode.USAGE
    assert "symbolic link" in capsys.readouterr().err
    assert not list(tmp_path.glob("batch-*"))
    with pytest.raises(SystemExit) as exc:  # --day is required
        main(["batch", str(tmp_path)])
    assert exc.value.code == ExitCode.USAGE


def test_a_hostile_folder_is_noted_and_exits_1_with_the_page(tmp_path: Path) -> None:
    root = hostile_day(tmp_path / "stick" / "ssdbench")
    proc = cli("batch", str(tmp_path / "stick"), "--day", DAY, "--no-pdf", timeout=120)
    assert proc.returncode == ExitCode.FAILURE, proc.stderr
    assert proc.stdout.splitlines() == [str(root / f"batch-{DAY}.html")]
    err = proc.stderr
    assert "20261128T130000Z_linked_drive: a symbolic link, not followed" in err
    assert "20261128T110000Z_odd: run.json not read in fifo, huge, nested: said in its row" in err
    assert "20261127T000000Z_huge: run.json not read in consistency-default, trim: its day " \
           "unknown, left out" in err
    assert "\x1b" not in err  # a name as shown: its line break as "?"
    assert "20261128T100000Z_<img src=x onerror=alert(1)>?[b]: run.json not read in " \
           "linked-run (a link): said in its row" in err
    assert "Traceback" not in err


def test_help_lists_the_command() -> None:
    assert "batch" in build_parser().format_help()
