"""#42 items 3 and 7 on the fleet page: a browser that opens it loads nothing (a
Content-Security-Policy; the page's style and charts are inline), and a drive's U+202E or
U+200B reads as ``?`` there and in fleet.csv, as on every screen and the certificate.
Before: no policy, and both characters went into the page and fleet.csv raw."""

from __future__ import annotations

import csv
import io
import re

from ssdbench.lab import fleet
from ssdbench.untrusted import shown

SERIAL = "AB\u202eDC\u200bEF"
SEEN = "AB?DC?EF"


def _rows() -> list[dict[str, str]]:
    return [dict.fromkeys(fleet.CSV_COLUMNS, "") | {
        "bench": "b1", "model": '<img src="http://127.0.0.1:9/m">\u2066X', "serial": SERIAL,
        "run": "consistency-default", "state": "done", "steady_iops": "100",
        "steady_iops_stddev": "1", "started": "2026-11-27T10:00:00Z"}]


def test_the_fleet_page_loads_nothing_and_shows_bidi_as_every_screen_does() -> None:
    page = fleet.fleet_html(fleet.Fleet({}, _rows(), "2026-11-27T10:00:00Z"))
    assert ("<meta http-equiv='Content-Security-Policy' content=\"default-src 'none'; "
            "style-src 'unsafe-inline'\">") in page
    assert page.index("Content-Security-Policy") < page.index("<style>")
    assert "<img" not in page and "&lt;img src=&quot;http://127.0.0.1:9/m&quot;&gt;?X" in page
    assert not re.search("[\u200b-\u200f\u202a-\u202e\u2066-\u2069]", page)
    assert f"<td>{SEEN}</td>" in page and shown(SERIAL) == SEEN
    row = next(csv.DictReader(io.StringIO(fleet.fleet_csv(
        fleet.Fleet({}, _rows(), "2026-11-27T10:00:00Z")))))
    assert row["serial"] == SEEN
