"""report.html leads with what each plan answers (#45): an intake's capacity verdict, grade
and the erase's FAIL with its reason and record; a grade's reasons; a speed run's corners.
The runs table has the columns of the runs' kinds only, each section a proper heading and
only the parameters its kind uses."""

from __future__ import annotations

import re
from pathlib import Path

from ssdbench.report import render_drive
from ssdbench.report.answer import answer, columns_for
from tests.unit.report.plan_runs import (
    NO_FIRMWARE_ERASE,
    SPEED_CORNERS,
    write_grade,
    write_intake,
    write_speed,
)


def _page(drive_dir: Path) -> str:
    render_drive(drive_dir)
    return (drive_dir / "report.html").read_text(encoding="utf-8")


def _runs_header(page: str) -> list[str]:
    runs = page[page.index("<h3>Runs</h3>"):]
    head = runs[: runs.index("</tr>")]
    return [re.sub("<[^>]+>", "", h) for h in re.findall(r"<th[^>]*>(.*?)</th>", head)]


def test_intake_page_leads_with_capacity_grade_and_the_erase_reason(tmp_path: Path) -> None:
    drive_dir, _ = write_intake(tmp_path)
    page = _page(drive_dir)
    lead = page[: page.index("<h2>Drive</h2>")] + page[page.index("<h2>Answer</h2>"):
                                                       page.index("<h3>Runs</h3>")]
    assert "capacity genuine" in lead and "grade note" in lead and "erase FAIL" in lead
    assert page.index("<h2>Answer</h2>") < page.index("<h3>Runs</h3>")
    assert _runs_header(page) == ["run", "state", "capacity check", "grade", "erase result",
                                  "warnings"]
    assert "steady IOPS" not in page and "TRIM verdict" not in page
    assert "Capacity check (intake)" in page and "authenticity · 0% OP" not in page
    assert "Erase and record (intake)" in page
    assert NO_FIRMWARE_ERASE in page and 'href="erase/record.json"' in page
    # an unsigned record says so beside its link, with its certificate (#45 F)
    answer_part = page[page.index("<h2>Answer</h2>"): page.index("<h2>Drive</h2>")]
    assert "UNSIGNED" in answer_part and 'href="erase/certificate.html"' in answer_part
    section = page[page.index("Erase and record (intake)"):]
    assert "UNSIGNED" in section and 'href="erase/certificate.html"' in section
    # the consistency plan's parameters are not an intake's
    assert "torture_seconds" not in page and "trim_torture_seconds" not in page
    assert "capacity_check" in page


def test_grade_and_speed_pages_have_their_columns(tmp_path: Path) -> None:
    drive_dir, _ = write_grade(tmp_path / "g")
    page = _page(drive_dir)
    assert _runs_header(page) == ["run", "state", "grade", "warnings"]
    assert "Health grade (grade)" not in page and "Health grade" in page
    assert "power-on hours 51,000" in page[: page.index("<h3>Runs</h3>")]
    # no SMART: the counters and the health stage are "not available", not failed/empty
    counters = page[page.index("Drive&#x27;s own counters"):page.index("<h3>Stages</h3>")]
    assert "not available" in counters and "no SMART" in counters, counters
    assert "reported none of these counters" not in counters
    drive_dir, _ = write_speed(tmp_path / "s")
    page = _page(drive_dir)
    assert _runs_header(page) == ["run", "state", "speed verdict", "warnings"]
    answer_part = page[page.index("<h2>Answer</h2>"): page.index("<h3>Runs</h3>")]
    assert "as fast as its class" in answer_part
    # the run's name leads its answer once: not "speed: speed: as fast…" (#45 B)
    assert "speed: speed:" not in re.sub("<[^>]+>", "", answer_part)
    assert "speed</a>: <span" in answer_part
    # the section says the verdict once (its answer), the corners' table then its class
    assert page[page.index('id="speed"'):].count("as fast as its class") == 1
    section = page[page.index('id="speed"'):]
    for label, mb in SPEED_CORNERS:
        assert f"{label} read {mb:,.0f} MB/s" in section
    # a speed run reads no counters by design: not "an older ssdbench"
    assert "the speed plan reads the four corners only" in section
    assert "before 2026-11" not in section


def test_answer_reads_run_json_as_untrusted() -> None:
    odd = {"grade": {"grade": 5, "reasons": "x"}, "erase_record": {"result": ["FAIL"]},
           "speed": {"corners": [{"label": None, "mb_s": float("nan")}], "verdict": 3},
           "authenticity": {"verdict": "<b>"}}
    for kind in ("grade", "erase", "speed", "authenticity", "diagnose", "iops", "trim"):
        a = answer(kind, odd, None, state="done")
        assert a.headline and "nan" not in a.headline
    assert answer("erase", odd).headline == "erase FAIL: no record"
    assert columns_for(["authenticity", "erase"]) == ("capacity", "grade", "erase")
    assert columns_for(["consistency", "trim"]) == ("IOPS", "TRIM", "stalls", "steady at")


def test_the_record_link_is_a_file_of_the_run_folder_only() -> None:
    for bad in ("../../etc/passwd", "javascript:alert(1)", "/abs/record.json", ".hidden", 7):
        meta = {"erase_record": {"json": bad, "result": {"status": "PASS", "reason": "ok"}}}
        assert answer("erase", meta).record == ""
    good = {"erase_record": {"json": "record.json", "result": {"status": "PASS"}}}
    assert answer("erase", good).record == "record.json"


def test_a_speed_run_reaches_summary_csv_and_index_html(tmp_path: Path) -> None:
    """#45: the speed plan's answer in index.html too, through summary.csv's two trailing
    columns (a schema's optional columns: older files lack them)."""
    import csv

    from ssdbench.report import render_drive, render_index
    from tests.schema_check import check_csv

    drive_dir, _ = write_speed(tmp_path / "s" / "ssdbench")
    render_drive(drive_dir, svg=False)
    root = drive_dir.parent
    render_index(root, svg=False)
    check_csv(root / "summary.csv")
    rows = list(csv.DictReader((root / "summary.csv").open(encoding="utf-8")))
    speed = [r for r in rows if r["run"] == "speed"]
    assert speed and speed[0]["speed_verdict"] == "as fast as its class"
    assert "SEQ1M Q8T1 read 520 MB/s" in speed[0]["speed_corners"]
    index = (root / "index.html").read_text(encoding="utf-8")
    assert "speed: as fast as its class</span>" in index
