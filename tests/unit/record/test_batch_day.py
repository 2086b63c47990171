"""The batch page of a station day (#45): every drive with a run started on the day, over
the day's sessions (a reboot at lunch), only the runs of that day in a drive's row; and a
hostile results folder read for it: links, FIFOs, huge and malformed run.json files and
hostile strings give a note or a row that says so, never a crash, a hang, markup or a path
on the page."""

from __future__ import annotations

import json
import os
from pathlib import Path

from ssdbench.record import batch
from ssdbench.record.write import RECORD_JSON
from tests.hostile import (
    HOSTILE_MODEL,
    HOSTILE_SERIAL,
    HUGE,
    NESTED,
    _fifo,
    _huge,
    _put,
    hostile_results_folder,
)
from tests.unit.record.test_batch import _run
from tests.unit.test_hostile_folder import fifo_unblocked, tree

DAY = "2026-11-28"


def _erase(run_dir: Path, record_id: str, status: str = "PASS") -> None:
    (run_dir / RECORD_JSON).write_text(json.dumps({
        "record_id": record_id, "sanitization": {"method": "nvme-format-user-data"},
        "result": {"status": status, "reason": ""}, "signature": {"key": "k"}}))


def station_day(root: Path) -> dict[str, Path]:
    """Two sessions of 2026-11-28 (before and after a reboot at 13:00), a drive of the day
    before, and a drive run on both days in one folder (a resume across midnight)."""
    morning = root / "20261128T090000Z_M1_MORNING01"
    _run(morning, "grade", kind="grade", started="2026-11-28T09:00:00Z",
         drive={"serial": "MORNING01", "model": "M1", "size_bytes": 256 * 10**9},
         grade={"grade": "A", "reasons": []})
    run = _run(morning, "erase", kind="erase", started="2026-11-28T09:30:00Z",
               drive={"serial": "MORNING01", "model": "M1", "size_bytes": 256 * 10**9},
               erase={"method": "nvme-format-user-data"})
    _erase(run, "rec-morning")
    afternoon = root / "20261128T140000Z_M2_AFTERNOON1"
    run = _run(afternoon, "erase", kind="erase", started="2026-11-28T14:00:00Z",
               drive={"serial": "AFTERNOON1", "model": "M2", "size_bytes": 512 * 10**9},
               erase={"method": "nvme-format-user-data"})
    _erase(run, "rec-afternoon")
    yesterday = root / "20261127T160000Z_M3_YESTERDAY1"
    run = _run(yesterday, "erase", kind="erase", started="2026-11-27T16:00:00Z",
               drive={"serial": "YESTERDAY1", "model": "M3", "size_bytes": 10**12},
               erase={"method": "nvme-format-user-data"})
    _erase(run, "rec-yesterday")
    both = root / "20261127T230000Z_M4_BOTHDAYS1"
    run = _run(both, "erase", kind="erase", started="2026-11-27T23:30:00Z",
               drive={"serial": "BOTHDAYS1", "model": "M4", "size_bytes": 10**12},
               erase={"method": "nvme-format-user-data"})
    _erase(run, "rec-of-the-day-before")
    _run(both, "grade", kind="grade", started="2026-11-28T00:10:00Z",
         drive={"serial": "BOTHDAYS1", "model": "M4", "size_bytes": 10**12},
         grade={"grade": "C", "reasons": []})
    return {"morning": morning, "afternoon": afternoon, "yesterday": yesterday, "both": both}


def test_a_day_of_two_sessions_lists_its_drives_and_only_their_runs_of_the_day(
        tmp_path: Path) -> None:
    d = station_day(tmp_path)
    assert batch.drive_dirs_of_day(tmp_path, DAY) == sorted(
        [d["morning"], d["afternoon"], d["both"]])
    html, problem = batch.write_batch(tmp_path, batch.drive_dirs_of_day(tmp_path, DAY),
                                      title=f"station day {DAY}", made="2026-11-28T18:00:00Z",
                                      stem=f"batch-{DAY}", pdf=False, day=DAY)
    assert problem == "no PDF: switched off" and html == tmp_path / f"batch-{DAY}.html"
    page = html.read_text()
    assert "MORNING01" in page and "AFTERNOON1" in page and "rec-afternoon" in page
    assert "YESTERDAY1" not in page and "rec-yesterday" not in page
    both = batch.drive_row(d["both"], DAY)  # the erase of the day before is not this day's
    assert (both.grade, both.erase_result, both.record_id) == ("C", "not erased", "")
    assert "rec-of-the-day-before" not in page
    assert batch.drive_row(d["both"]).record_id == "rec-of-the-day-before"  # a kiosk run's
    assert "<h1>Batch of 3 drives</h1>" in page and "erase PASS 2" in page


def test_one_drive_in_two_sessions_is_one_row_and_twins_stay_two(tmp_path: Path) -> None:
    """A drive graded before a reboot and erased after it has a folder in each session:
    one row, the morning's grade and the afternoon's erase. Two drives reporting one serial
    in one session (twins), and drives without a serial, are never merged."""
    same = {"serial": "SAME0001", "model": "M1", "size_bytes": 256 * 10**9}
    _run(tmp_path / "20261128T090000Z_M1_SAME0001", "grade", kind="grade",
         started="2026-11-28T09:00:00Z", drive=same, grade={"grade": "B", "reasons": []})
    run = _run(tmp_path / "20261128T140000Z_M1_SAME0001", "erase", kind="erase",
               started="2026-11-28T14:00:00Z", drive=same,
               erase={"method": "nvme-format-user-data"})
    _erase(run, "rec-same")
    twin = {"serial": "TWIN0001", "model": "M2", "size_bytes": 10**12}
    for folder in ("20261128T150000Z_M2_TWIN0001", "20261128T150000Z_M2_TWIN0001-2"):
        _erase(_run(tmp_path / folder, "erase", kind="erase", started="2026-11-28T15:00:00Z",
                    drive=twin, erase={"method": "nvme-format-user-data"}), f"rec-{folder}")
    for folder in ("20261128T100000Z_unknown_loop4", "20261128T110000Z_unknown_loop4"):
        _run(tmp_path / folder, "grade", kind="grade", started="2026-11-28T10:00:00Z",
             drive={"name": "loop4", "serial": "", "model": ""},
             grade={"grade": "not gradable", "reasons": []})
    dirs = batch.drive_dirs_of_day(tmp_path, DAY)
    groups = batch.one_drive_each(dirs, DAY)
    assert sorted(len(g) for g in groups) == [1, 1, 1, 1, 2], groups
    html, _ = batch.write_batch(tmp_path, dirs, title="t", made="m", stem="b", pdf=False,
                                day=DAY)
    page = html.read_text()
    assert "<h1>Batch of 5 drives</h1>" in page, page
    (merged,) = [batch.drive_row(g, DAY) for g in groups if len(g) == 2]
    assert (merged.serial, merged.grade, merged.erase_result, merged.record_id) == (
        "SAME0001", "B", "PASS", "rec-same")
    assert page.count("SAME0001") == 1 and page.count("rec-20261128T150000Z_M2_TWIN0001") == 2


def test_the_page_goes_to_out_never_through_a_link(tmp_path: Path) -> None:
    station_day(tmp_path / "res")
    dirs = batch.drive_dirs_of_day(tmp_path / "res", DAY)
    out = tmp_path / "elsewhere" / "day.html"
    out.parent.mkdir()
    html, _ = batch.write_batch(tmp_path / "res", dirs, title="t", made="m", stem="x",
                                pdf=False, day=DAY, out=out)
    assert html == out and out.is_file() and not (tmp_path / "res" / "x.html").exists()
    victim = tmp_path / "victim.html"
    victim.write_text("kept")
    (tmp_path / "res" / "batch-planted.html").symlink_to(victim)
    try:
        batch.write_batch(tmp_path / "res", dirs, title="t", made="m", stem="batch-planted",
                          pdf=False, day=DAY)
    except OSError as exc:
        assert "symbolic link" in str(exc)
    else:
        raise AssertionError("written through a planted link")
    assert victim.read_text() == "kept"


def hostile_day(root: Path) -> Path:
    """The hostile results folder of tests/hostile.py, and drives of DAY made to break the
    page: hostile strings, a folder name with markup and a line break, a run folder linked
    out of the folder, FIFOs, a huge and a nested run.json, wrong types, a linked record."""
    hostile_results_folder(root)
    victim = root.parent / "victim"
    _put(victim / "day" / "run.json", json.dumps({
        "started": "2026-11-28T08:00:00Z", "drive": {"serial": "STOLEN", "model": "VICTIM"},
        "host": {"machine": {"vendor": "VICTIMHOST"}}}))
    _put(victim / "record.json", json.dumps({"record_id": "STOLEN-RECORD",
                                             "result": {"status": "PASS"}}))
    evil = root / "20261128T100000Z_<img src=x onerror=alert(1)>\n[b]"
    run = _run(evil, "erase", kind="erase", started="2026-11-28T10:00:00Z",
               drive={"serial": HOSTILE_SERIAL, "model": HOSTILE_MODEL + "x" * 5000,
                      "size_bytes": "1e99"},
               erase={"method": "<b>m</b>"}, grade={"grade": "<script>alert(1)</script>"},
               params={"asset_tag": "../../etc/passwd", "lot": "\x1b[2J"})
    (run / RECORD_JSON).write_text(json.dumps({
        "record_id": "</td><script>x</script>", "sanitization": {"method": ["x"]},
        "result": {"status": "<i>PASS</i>", "reason": "\u202e" + "r" * 100_000},
        "signature": "x"}))
    (evil / "linked-run").symlink_to(victim / "day")  # a run of the day outside the folder
    odd = root / "20261128T110000Z_odd"
    _run(odd, "grade", kind="grade", started="2026-11-28T11:00:00Z",
         drive={"serial": 5, "model": None, "size_bytes": -1, "name": ["sda"]},
         grade="A", erase=[1], authenticity="wraps", params=[])
    _fifo(odd / "fifo" / "run.json")
    _huge(odd / "huge" / "run.json", HUGE)
    _put(odd / "nested" / "run.json", NESTED)
    linked_record = _run(odd, "erase", kind="erase", started="2026-11-28T11:30:00Z")
    (linked_record / RECORD_JSON).symlink_to(victim / "record.json")
    _fifo(root / "20261128T120000Z_fifo_record" / "erase" / RECORD_JSON)
    _put(root / "20261128T120000Z_fifo_record" / "erase" / "run.json", json.dumps(
        {"kind": "erase", "started": "2026-11-28T12:00:00Z", "drive": {"serial": "FIFOREC"}}))
    (root / "20261128T130000Z_linked_drive").symlink_to(victim / "drive")
    _run(victim / "drive", "day", started="2026-11-28T13:00:00Z",
         drive={"serial": "STOLEN-DRIVE"})
    _fifo(root / "20261128T140000Z_a_fifo")  # a FIFO where a drive folder goes
    return root


def test_a_hostile_folder_gives_notes_and_rows_never_markup_a_path_or_a_hang(
        tmp_path: Path) -> None:
    root = hostile_day(tmp_path / "stick" / "ssdbench")
    before = tree(tmp_path, skip=(root,))
    scan = fifo_unblocked(root / "20261128T110000Z_odd" / "fifo" / "run.json",
                          lambda: batch.scan_day(root, DAY))
    names = sorted(d.name for d in scan.dirs)
    unread = dict(scan.unreadable)
    assert names == ["20261128T100000Z_<img src=x onerror=alert(1)>\n[b]",
                     "20261128T110000Z_odd", "20261128T120000Z_fifo_record"]
    assert "20261128T130000Z_linked_drive" in scan.links
    assert "20261127T000000Z_linked" in scan.links
    assert unread["20261128T100000Z_<img src=x onerror=alert(1)>\n[b]"] == (
        "linked-run (a link)",)
    assert unread["20261128T110000Z_odd"] == ("fifo", "huge", "nested")
    assert unread["20261127T000000Z_huge"] == ("consistency-default", "trim")
    html, _ = fifo_unblocked(
        root / "20261128T120000Z_fifo_record" / "erase" / RECORD_JSON,
        lambda: batch.write_batch(root, scan.dirs, title=f"station day {DAY}",
                                  made="2026-11-28T18:00:00Z", stem=f"batch-{DAY}",
                                  pdf=False, day=DAY))
    page = html.read_text()
    for bad in ("<script", "<img", "<b>m", "<i>PASS", "\u202e", "\x1b", "STOLEN", "VICTIM",
                str(tmp_path), "onerror=alert(1)>"):
        assert bad not in page, bad
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page  # the grade, escaped
    assert "<td>../../etc/passwd</td>" in page  # what the run says, as text: no path read
    assert "unreadable run.json in fifo, huge, nested" in page
    assert len(page) < 60_000  # the 5,000-character model and the 100,000 reason cut
    assert "FIFOREC" in page and "<h1>Batch of 3 drives</h1>" in page
    assert tree(tmp_path, skip=(root,)) == before  # nothing written outside the folder
    assert {p.name for p in root.glob("batch-*")} == {f"batch-{DAY}.html"}


def test_an_unreadable_results_folder_is_a_problem_not_a_crash(tmp_path: Path) -> None:
    scan = batch.scan_day(tmp_path / "missing", DAY)
    assert scan.dirs == () and "cannot be read" in scan.problem
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    assert batch.drive_dirs_of_day(fifo, DAY) == []
