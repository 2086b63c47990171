"""`ssdbench batch DIR --day DAY`: the batch page of a station day (#45), made from the
results folder alone: every drive with a run started on that UTC date, over every session
of the day (a reboot at lunch is two sessions), with only that day's runs in its row.

The folder is read as untrusted (record/batch.py): a link is not followed, a FIFO is never
opened, a huge or malformed run.json is a note on stderr and in the drive's row, and every
string on the page is escaped. Nothing but the page (and its PDF) is written."""

from __future__ import annotations

import argparse
import re
import sys
from datetime import UTC, date, datetime
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode
from ssdbench.untrusted import shown

DAY = re.compile(r"^\d{4}-\d{2}-\d{2}$")
LINE_LIMIT = 2000  # characters of one printed line


def _say(text: str) -> None:
    print(shown(f"ssdbench batch: {text}", LINE_LIMIT), file=sys.stderr)


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "batch",
        help="the batch page of a station day: every drive of the day on one printable page",
        description=(
            "Write the batch page of a station day (docs/kiosk.md \"The batch page\"): one "
            "printable page of every drive with a run started on DAY (UTC), over all the "
            "day's sessions: serial, model, capacity, grade, capacity check, erase method "
            "and result, record id; only the runs of DAY count in a drive's row, and a "
            "drive with a folder in several sessions (same serial and model) is one row. "
            "DIR is the "
            "ssdbench/ results folder or the folder holding it (the SSDRESULTS stick). "
            "Writes DIR/batch-DAY.html and .pdf (or --out) and prints their paths. The "
            "folder is read as untrusted: links are not followed, FIFOs and files over the "
            "JSON limit are not read, each is said on stderr. Exit status 0 when the page "
            "is written; 1 when no drive has a run on DAY, when a run.json could not be "
            "read (the page is still written and its row says which), or when the page or "
            "its PDF could not be written; 2 for a bad DAY, DIR or --out."
        ),
    )
    parser.add_argument("dir", metavar="DIR", type=Path, help="results folder")
    parser.add_argument("--day", metavar="YYYY-MM-DD", required=True,
                        help="the UTC date of the station day ('today': the UTC date now)")
    parser.add_argument("--out", metavar="FILE.html", type=Path, default=None,
                        help="write the page here (the PDF beside it) instead of "
                             "DIR/batch-DAY.html")
    parser.add_argument("--no-pdf", action="store_true",
                        help="the HTML page only (no WeasyPrint)")
    parser.set_defaults(func=run)


def parse_day(text: str, now: datetime) -> str:
    """``YYYY-MM-DD`` (a real date) or ``today`` (UTC); ValueError with a sentence."""
    day = f"{now:%Y-%m-%d}" if text == "today" else text
    try:
        if not DAY.match(day):
            raise ValueError
        date.fromisoformat(day)
    except ValueError:
        raise ValueError(f"--day {shown(text, 40)!r}: expected a date as YYYY-MM-DD (UTC) "
                         "or 'today'") from None
    return day


def results_root(directory: Path) -> Path:
    """DIR, or DIR/ssdbench when DIR holds it; ValueError with a sentence."""
    if not directory.is_dir():
        raise ValueError(f"{directory}: no such folder")
    inner = directory / "ssdbench"
    if inner.is_symlink():  # the folder's content, not the user's choice
        raise ValueError(f"{inner}: a symbolic link: not read (give the folder it points "
                         "to, if it is yours)")
    return inner if inner.is_dir() else directory


def day_page(root: Path, day: str, *, pdf: bool = True, out: Path | None = None,
             now: datetime | None = None) -> int:
    """The station day's page of ``root`` (record/batch.py); prints its paths, notes to
    stderr; the exit status."""
    from ssdbench.record.batch import scan_day, write_batch
    from ssdbench.results.layout import utc_stamp

    scan = scan_day(root, day)
    if scan.problem:
        _say(scan.problem)
        return int(ExitCode.FAILURE)
    for name in scan.links:
        _say(f"{name}: a symbolic link, not followed")
    on_page = {d.name for d in scan.dirs}
    for name, runs in scan.unreadable:  # a FIFO, a link, over the limit, not JSON
        _say(f"{name}: run.json not read in {', '.join(runs)}: "
             + ("said in its row" if name in on_page else "its day unknown, left out"))
    if not scan.dirs:
        _say(f"no drive in {root} has a run started on {day} (UTC): no batch page")
        return int(ExitCode.FAILURE)
    try:
        html, problem = write_batch(root, scan.dirs, title=f"station day {day}",
                                    made=utc_stamp(now), stem=f"batch-{day}", pdf=pdf,
                                    day=day, out=out)
    except OSError as exc:
        _say(f"batch page not written: {exc}")
        return int(ExitCode.FAILURE)
    print(shown(html, LINE_LIMIT))
    if problem is None:
        print(shown(html.with_suffix(".pdf"), LINE_LIMIT))
    elif pdf:
        _say(f"batch page: {problem}")
        return int(ExitCode.FAILURE)
    # a run.json not read: the page may miss a run or a drive (it says which)
    return int(ExitCode.FAILURE if scan.unreadable else ExitCode.OK)


def run(args: argparse.Namespace) -> int:
    try:
        day = parse_day(args.day, datetime.now(UTC))
        root = results_root(Path(args.dir))
        if args.out is not None and (args.out.suffix != ".html" or not args.out.parent.is_dir()):
            raise ValueError(f"--out {args.out}: expected FILE.html in a folder that exists")
    except ValueError as exc:
        _say(str(exc))
        return int(ExitCode.USAGE)
    return day_page(root, day, pdf=not args.no_pdf, out=args.out)
