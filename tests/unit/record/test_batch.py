"""The batch page (issue #45): one page of every drive of a kiosk run or a station day,
made from a results folder: three drives, one with a hostile serial, one a FAKE (the quick
capacity check found it wraps), one erased with a signed-or-not PASS record."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from ssdbench.record import batch, dump_record
from ssdbench.record.write import RECORD_JSON
from tests.hostile import HOSTILE_MODEL, HOSTILE_SERIAL
from tests.unit.record.test_host_record import HOST, _record

GB = 1_000_000_000


def _run(drive_dir: Path, run: str, **meta: Any) -> Path:
    run_dir = drive_dir / run
    run_dir.mkdir(parents=True)
    (run_dir / "run.json").write_text(json.dumps({"run": run, "state": "done", **meta}))
    return run_dir


def results(root: Path) -> list[Path]:
    """Three drive folders as a kiosk run leaves them."""
    a = root / "2026-11-28T1200Z_QEMU_NVMe_Ctrl_SSDBNVME0001"
    run = _run(a, "erase", kind="erase", started="2026-11-28T12:00:00Z", host=HOST,
               drive={"serial": "SSDBNVME0001", "model": "QEMU NVMe Ctrl",
                      "size_bytes": 268_435_456},
               grade={"grade": "A", "reasons": []}, erase={"method": "nvme-format-user-data"},
               authenticity={"verdict": "genuine", "claimed_bytes": 268_435_456,
                             "real_bytes": 268_435_456, "summary": "genuine"})
    (run / RECORD_JSON).write_bytes(dump_record(_record(HOST)))
    b = root / "2026-11-28T1210Z_evil"
    _run(b, "grade", kind="grade", started="2026-11-28T12:10:00Z",
         drive={"serial": HOSTILE_SERIAL, "model": HOSTILE_MODEL, "size_bytes": 480 * GB},
         grade={"grade": "C", "reasons": [{"text": "12 reallocated sectors"}]})
    _run(b, "erase", kind="erase", started="2026-11-28T12:20:00Z", state="failed",
         drive={"serial": HOSTILE_SERIAL, "model": HOSTILE_MODEL, "size_bytes": 480 * GB},
         erase={"method": "ata-security-erase-enhanced"})
    c = root / "2026-11-28T1230Z_FAKE_USB_2TB"
    _run(c, "authenticity", kind="authenticity", started="2026-11-28T12:30:00Z",
         drive={"serial": "FAKE2TB0001", "model": "USB Flash 2TB", "size_bytes": 2000 * GB},
         authenticity={"verdict": "wraps", "claimed_bytes": 2000 * GB, "real_bytes": 32 * GB,
                       "summary": "FAKE: writes wrap around after 32 GB"})
    return [a, b, c]


def test_rows_read_from_the_folders(tmp_path: Path) -> None:
    a, b, c = (batch.drive_row(d) for d in results(tmp_path))
    assert (a.serial, a.grade, a.capacity_verdict, a.erase_result) == (
        "SSDBNVME0001", "A", "genuine", "PASS")
    assert a.record_id == "00000000-0000-4000-8000-000000000045"
    assert a.erase_method == "nvme-format-user-data"
    assert b.serial == HOSTILE_SERIAL and b.grade == "C"
    assert b.erase_result == "no erase record (run failed)"
    assert c.fake and c.capacity_verdict == "wraps" and c.erase_result == "not erased"


def test_page_escapes_and_marks_the_fake(tmp_path: Path) -> None:
    rows = [batch.drive_row(d) for d in results(tmp_path)]
    page = batch.batch_html(rows, title="kiosk run 2026-11-28", made="2026-11-28T13:00Z",
                            host=HOST)
    assert "<h1>Batch of 3 drives</h1>" in page
    assert "\u202e" not in page and "<script>" not in page and "</style>$" not in page
    assert "[i]$x$?" in page  # the hostile serial's line break and U+202E as "?"
    assert re.search(r'<td class="fake">FAKE \(wraps\)</td>', page)
    assert '<td class="PASS">PASS</td>' in page
    assert "fake capacity found on 1" in page
    assert "Tested in: &lt;b&gt;Evil&lt;/b&gt; Corp" in page


def test_unreadable_and_linked_folders_are_said_not_followed(tmp_path: Path) -> None:
    d = tmp_path / "drive"
    (d / "r1").mkdir(parents=True)
    (d / "r1" / "run.json").write_text("[" * 100_000 + "]" * 100_000)
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "run.json").write_text(json.dumps({"drive": {"serial": "STOLEN"}}))
    (d / "r2").symlink_to(outside)
    row = batch.drive_row(d)
    assert row.serial == "" and "unreadable run.json in r1" in row.problem


def test_station_day_picks_the_days_drives(tmp_path: Path) -> None:
    dirs = results(tmp_path)
    _run(tmp_path / "yesterday", "grade", started="2026-11-27T09:00:00Z")
    assert batch.drive_dirs_of_day(tmp_path, "2026-11-28") == sorted(dirs)


def test_batch_pdf_made_and_fetches_nothing(tmp_path: Path) -> None:
    pytest.importorskip("weasyprint")
    dirs = results(tmp_path / "res")
    html, problem = batch.write_batch(tmp_path / "res", dirs, title="kiosk run",
                                      made="2026-11-28T13:00Z", stem="batch-test")
    assert problem is None, problem
    pdf = (tmp_path / "res" / "batch-test.pdf").read_bytes()
    assert pdf.startswith(b"%PDF") and html.read_text().count("<tr>") == 4


def test_kiosk_run_ends_with_the_batch_page(tmp_path: Path) -> None:
    import io
    from types import SimpleNamespace
    from typing import cast

    from ssdbench.kiosk import run as kiosk_run
    from ssdbench.plan.engine import DriveOutcome
    from ssdbench.plan.plans import Plan

    dirs = results(tmp_path)
    outcomes = [DriveOutcome(f"sd{i}", f"c{i}", d, ()) for i, d in enumerate(dirs)]
    outcomes.append(DriveOutcome("sdz", "cz", None, ()))  # gone before its folder was made
    plan = cast(Plan, SimpleNamespace(name="erase", params=SimpleNamespace(record_pdf=False)))
    out = io.StringIO()
    kiosk_run._batch_page(tmp_path, outcomes, plan, out)
    pages = list(tmp_path.glob("batch-*.html"))
    assert len(pages) == 1 and pages[0].read_text().count("<tr>") == 4
    assert "batch page of 3 drives" in out.getvalue()


def test_a_lot_handed_on_names_its_lot_tags_devices_and_why_a_drive_failed(
        tmp_path: Path) -> None:
    """#45 G, F: drives with no serial read "– —" with no device, asset tag or lot; a FAIL
    gave no reason; an unsigned record was called signed; "made …Z (UTC)"."""
    def drive(name: str, tag: str, status: str, reason: str, lot: str = "L-9") -> Path:
        d = tmp_path / f"2026-11-28T1200Z_unknown_{name}"
        run = _run(d, "erase", kind="erase", started="2026-11-28T12:00:00Z",
                   drive={"name": name, "size_bytes": 300_000_000},
                   params={"asset_tag": tag, "lot": lot, "operator": "Ann"},
                   erase={"method": "overwrite"})
        (run / RECORD_JSON).write_text(json.dumps({
            "record_id": f"id-{name}", "sanitization": {"method": "overwrite"},
            "result": {"status": status, "reason": reason},
            "signature": {"unsigned": True, "reason": "no lab key"}}))
        return d

    dirs = [drive("loop1", "A-1", "PASS", ""),
            drive("loop2", "A-2", "FAIL", "secure erase failed: /dev/loop2: cannot open for "
                  "the overwrite: Device or resource busy")]
    rows = [batch.drive_row(d) for d in dirs]
    assert (rows[0].device, rows[0].asset_tag, rows[0].lot, rows[0].signed) == (
        "loop1", "A-1", "L-9", False)
    page = batch.batch_html(rows, title="kiosk run", made="2026-11-28T13:00Z")
    assert "<h1>Batch of 2 drives · lot L-9</h1>" in page and "<th>Lot</th>" not in page
    assert "<td>loop1 <i>(no serial)</i></td>" in page and "<td>A-2</td>" in page
    assert "operator Ann" in page
    assert "Device or resource busy" in page  # the FAIL's reason, short
    assert "2026-11-28T13:00Z ·" in page or page.count("2026-11-28T13:00Z</div>") == 1
    assert "(UTC)" not in page
    assert "signed erase record" not in page and "2 of the 2 records are UNSIGNED" in page
    assert page.count("UNSIGNED</b>") == 2
    # two lots: a column, not the heading
    rows.append(batch.drive_row(drive("loop3", "A-3", "PASS", "", lot="L-10")))
    page = batch.batch_html(rows, title="kiosk run", made="2026-11-28T13:00Z")
    assert "<th>Lot</th>" in page and "<td>L-10</td>" in page and "· lot" not in page
