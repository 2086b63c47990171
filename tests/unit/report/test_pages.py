"""Where the verdicts are read (#20 item 7): index.html leads with a table a reader can
read at 1280 px, the full summary.csv one click away; report.html's drive table in units
and words; the TRIM facts of IDENTIFY and of the kernel side by side."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssdbench.report import render_drive, render_index
from ssdbench.report.html import capacity_text, drive_rows, health_html, trim_support_text
from tests.unit.report.synthetic import DriveSpec, write_drive_folder


def _table_after(page: str, heading: str) -> tuple[list[str], list[list[str]]]:
    """Header cells and body rows (cell text, tags stripped) of the first table after
    ``heading``."""
    start = page.index(heading)
    table = page[page.index("<table>", start):page.index("</table>", start)]
    rows = re.findall(r"<tr>(.*?)</tr>", table, re.S)

    def cells(row: str, tag: str) -> list[str]:
        return [re.sub(r"<[^>]+>", "", c).strip()
                for c in re.findall(rf"<{tag}[^>]*>(.*?)</{tag}>", row, re.S)]

    return cells(rows[0], "th"), [cells(r, "td") for r in rows[1:]]


@pytest.fixture(scope="module")
def stick(tmp_path_factory: pytest.TempPathFactory) -> Path:
    root = tmp_path_factory.mktemp("stick") / "ssdbench"
    write_drive_folder(root, DriveSpec(model="Synthetic SSD 530", serial="SYN1",
                                       size_bytes=244_193_280),
                       duration=300, runs=("consistency-default", "trim"))
    for dd in root.iterdir():
        render_drive(dd, svg=False)
    render_index(root, svg=False)
    return root


def test_index_leads_with_a_readable_summary(stick: Path):
    page = (stick / "index.html").read_text()
    header, rows = _table_after(page, "<h2>Summary</h2>")
    assert header == ["Drive", "Run", "Steady IOPS (mean ± sd)",
                      "Steady state, cliff and events", "Seconds at 0 IOPS",
                      "Longest stall", "TRIM verdict (probes: clean → after torture → "
                      "after TRIM)", "Erase", "Grade, capacity check, speed"]
    by_run = {r[1].split()[0]: r for r in rows}
    cons, trim = by_run["consistency-default"], by_run["trim"]
    assert cons[0] == "Synthetic SSD 530 SYN1"
    # the headline says where its window starts; the next cell where steady state was
    # reached and at what level (#30)
    assert re.fullmatch(r"[\d,]+ ± [\d,]+ \(from [\d,]+ s\)", cons[2]), cons[2]
    assert re.match(r"(at [\d,]+ s, [\d,]+ IOPS|not reached)", cons[3]), cons[3]
    assert cons[5].endswith(" s")
    assert trim[6] == "ineffective 315.1 → 183.3 → 193.3 MiB/s"
    assert cons[7] == "ata-security-erase-enhanced, verified"
    # machine headers are not what leads, the full CSV is one click away
    lead = page[:page.index("<details")]
    assert "trim clean mib s" not in lead and "op percent" not in lead
    assert '<a href="summary.csv">' in lead
    details = page[page.index("<details"):page.index("</details>")]
    assert "trim_clean_mib_s" in details and "op_percent" in details


def test_capacity_in_decimal_and_binary_units():
    assert capacity_text(244_193_280) == "244.2 MB (232.9 MiB)"
    assert capacity_text(240 * 1000**3) == "240.0 GB (223.5 GiB)"
    assert capacity_text(2 * 1000**4) == "2.0 TB (1.819 TiB)"
    assert capacity_text(0) == "unknown"


def test_report_drive_table_is_in_words(stick: Path):
    drive = next(stick.glob("*/drive.json")).parent
    page = (drive / "report.html").read_text()
    start = page.index("<h2>Drive</h2>")
    part = page[start:page.index("</table>", start)]
    table = dict(re.findall(r"<tr><th>(.*?)</th><td>(.*?)</td></tr>", part))
    assert table["Capacity"] == "244.2 MB (232.9 MiB)"
    assert table["Sectors"] == "512 B logical, 4096 B physical"
    assert "size_bytes" not in page[:page.index("<h3>Runs</h3>")]


QEMU_AHCI = {"name": "sda", "path": "/dev/sda", "transport": "sata",
             "model": "QEMU HARDDISK", "serial": "QM00001", "size_bytes": 244_193_280,
             "trim_supported": False, "discard_max_bytes": 4294966784,
             "logical_block_size": 512, "physical_block_size": 512, "rotational": False}


def test_trim_facts_of_identify_and_kernel_side_by_side():
    assert trim_support_text(QEMU_AHCI) == (
        "IDENTIFY: not listed; kernel: discards (up to 4 GiB a request)")
    listed = dict(QEMU_AHCI, trim_supported=True)
    assert trim_support_text(listed).startswith("IDENTIFY: listed; kernel: discards")
    no_discard = dict(QEMU_AHCI, discard_max_bytes=0)
    assert trim_support_text(no_discard) == "IDENTIFY: not recorded; kernel: does not discard"
    nvme = dict(QEMU_AHCI, transport="nvme", trim_supported=True,
                nvme={"decoded": {"dsm": True}})
    assert trim_support_text(nvme).startswith("NVMe ONCS: Dataset Management listed; ")
    loop = {"transport": "loop", "trim_supported": True, "discard_max_bytes": 4096}
    assert trim_support_text(loop) == "no IDENTIFY (loop device); kernel: discards " \
        "(up to 4 KiB a request)"
    old = {"transport": "sata", "trim_supported": False}  # drive.json before discard facts
    assert trim_support_text(old) == "not listed (drive.json records no kernel discard facts)"


def test_no_bare_no_next_to_an_effective_trim_verdict(tmp_path: Path):
    """The demo's consumer SATA drive: QEMU's AHCI disk does not list TRIM, the kernel
    discards, and the TRIM run says effective."""
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, DriveSpec(trim_mib_s=(300.0, 150.0, 295.0)),
                               duration=120, runs=("trim",))
    doc = json.loads((drive / "drive.json").read_text())
    doc["drive"] = QEMU_AHCI
    (drive / "drive.json").write_text(json.dumps(doc))
    render_drive(drive, svg=False)
    page = (drive / "report.html").read_text()
    assert "effective" in page
    rows = dict(drive_rows(QEMU_AHCI))
    assert rows["TRIM"] == "IDENTIFY: not listed; kernel: discards (up to 4 GiB a request)"
    assert not re.search(r"<td>no</td>", page[:page.index("<h3>Runs</h3>")])
    assert "kernel: discards" in page


def test_an_authenticity_run_says_why_it_has_no_counters() -> None:
    text = health_html({"kind": "authenticity"}, "")
    assert "not read by this run" in text and "before 2026-11" not in text
    assert "before 2026-11" in health_html({"kind": "consistency"}, "")  # an old run.json


def test_counters_read_once_show_what_the_drive_said_and_nothing_empty() -> None:
    """The grade and erase plans read the drive's health once, before the run: one column
    of what it reported, no empty "After" and "Change" columns, no links to raw files the
    run never wrote."""
    text = health_html({"kind": "grade", "health": {"before": {
        "available": True, "passed": False, "temperature_c": 42, "power_on_hours": 46000,
        "reallocated_sectors": 1520, "percentage_used": None}}}, "")
    assert "Read before the run" in text and "After" not in text
    assert "<td>FAILED</td>" in text and "1,520" in text and "46,000 h" in text
    assert "Percentage used" not in text and "smart/before.json" not in text


def test_index_shows_the_capacity_check_beside_the_grade() -> None:
    """#32 item 4: the authenticity result on index.html (a fake with what it holds)."""
    from ssdbench.report.html import overview_table
    from ssdbench.report.summary import SUMMARY_COLUMNS

    row = dict.fromkeys(SUMMARY_COLUMNS, "")
    row.update(drive_dir="d", run="authenticity", run_state="failed",
               authenticity="wraps", real_capacity_bytes="67108864")
    text = overview_table([row])
    assert "Grade, capacity check" in text and "FAKE: wraps</span>" in text
    assert "holds 67.1 MB (64 MiB)" in text
    row.update(authenticity="genuine", real_capacity_bytes="")
    assert "capacity: genuine" in overview_table([row])
