"""#42 item 7 and the rig's finding: a drive's serial reads the same on report.html and
index.html as on the certificate, in the CSVs and on screen (control and invisible
characters as ``?``), and a browser loads nothing for those pages; the kiosk's console and
kiosk.txt lines quote a drive's words on one line, without escapes."""

from __future__ import annotations

import io
from pathlib import Path
from typing import Any

import pytest

from ssdbench.kiosk import run as kiosk_run
from ssdbench.kiosk.station import StationRow, station_lines
from ssdbench.plan.engine import DriveOutcome
from ssdbench.report import render_drive, render_index
from ssdbench.untrusted import visible

from .synthetic import DriveSpec, write_drive_folder

SERIAL = "SN\u202e1\u200b2\n</style>\x1b[2J\x07"
CSP = "Content-Security-Policy"


# a control character drawn on a chart is a glyph matplotlib's font lacks: it warns
@pytest.mark.filterwarnings("error:Glyph")
def test_report_pages_show_a_serial_as_every_other_surface_and_load_nothing(
        tmp_path: Path) -> None:
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, DriveSpec(serial=SERIAL), duration=300, seed=3,
                               runs=("consistency-default",))
    render_drive(drive, svg=False)
    render_index(root)
    for page in (drive / "report.html", root / "index.html"):
        text = page.read_text(encoding="utf-8")
        assert "SN?1?2?&lt;/style&gt;?[2J?" in text, page.name
        for raw in ("\u202e", "\u200b", "\x1b", "\x07"):
            assert raw not in text, (page.name, repr(raw))
        assert text.count("</style>") == 1
        head = text.split("<title>")[0]
        assert CSP in head and "default-src 'none'" in head


def test_console_and_kiosk_txt_lines_quote_a_drive_on_one_line() -> None:
    row: Any = StationRow("sdb", SERIAL, "M\x1b]0;owned\x07", "erasing")
    for line in station_lines([row]):
        assert "\n" not in line and "\x1b" not in line and "\u202e" not in line
        assert visible(SERIAL) in line
    out = io.StringIO()
    outcome = DriveOutcome("sdb", SERIAL, None, (), notes=("note\x1b[2J",))
    kiosk_run._summary([outcome], out)
    text = out.getvalue()
    assert "\x1b" not in text and "\u202e" not in text and "\u200b" not in text
    assert all(line.startswith("ssdbench: ") for line in text.splitlines())
