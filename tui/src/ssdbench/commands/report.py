"""`ssdbench report DIR`: recompute summary.csv, charts, report.html and index.html from the
CSV files and fio logs already in a results folder (the ``ssdbench/`` root, the stick's
mount point holding it, or one drive folder)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode
from ssdbench.untrusted import shown


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "report",
        help="recompute summary, charts and HTML from a results folder",
        description=(
            "Recompute summary.csv, the charts (PNG and SVG), each drive's report.html and "
            "index.html from the CSV files and fio logs in DIR. DIR is the ssdbench/ "
            "results folder, a folder holding it (e.g. the SSDRESULTS stick), or one "
            "drive folder. Prints the path of the report. Exit status 1 when a run's file "
            "is there but cannot be read (a damaged run; the pages still say which), 2 when "
            "DIR holds no results."
        ),
    )
    parser.add_argument("dir", metavar="DIR", type=Path, help="results or drive folder")
    parser.add_argument("--no-svg", action="store_true",
                        help="write PNG charts only (faster)")
    parser.add_argument("--batch-day", metavar="YYYY-MM-DD", default=None,
                        help="also the batch page of a station day, as `ssdbench batch "
                             "DIR --day DAY` makes it: every drive with a run started on "
                             "that UTC date, batch-<day>.html and .pdf in the results folder "
                             "('today': the UTC date now)")
    parser.add_argument("--no-pdf", action="store_true",
                        help="with --batch-day: the HTML page only (no WeasyPrint)")
    parser.set_defaults(func=run)


def batch_day(root: Path, day: str, *, pdf: bool) -> int:
    """The station day's batch page in ``root``: what `ssdbench batch ROOT --day DAY` makes
    (commands/batch.py ``day_page``, the one implementation); prints its paths."""
    from datetime import UTC, datetime

    from ssdbench.commands.batch import day_page, parse_day

    try:
        day = parse_day(day, datetime.now(UTC))
    except ValueError as exc:
        print(f"ssdbench report: {str(exc).replace('--day', '--batch-day', 1)}",
              file=sys.stderr)
        return int(ExitCode.USAGE)
    return day_page(root, day, pdf=pdf)


def resolve(directory: Path) -> tuple[str, Path]:
    """("root", path) or ("drive", path); ValueError with a sentence when DIR is neither."""
    from ssdbench.report import drive_dirs, is_drive_dir

    if not directory.is_dir():
        raise ValueError(f"{directory}: no such folder")
    directory = directory.resolve()  # DIR may be reached through a link; nothing under it
    if (directory / "ssdbench").is_symlink():  # the folder's content, not the user's choice
        raise ValueError(f"{directory / 'ssdbench'}: a symbolic link: not reported (give the "
                         "folder it points to, if it is yours)")
    if (directory / "ssdbench").is_dir() and drive_dirs(directory / "ssdbench"):
        return "root", directory / "ssdbench"
    if drive_dirs(directory):
        return "root", directory
    if is_drive_dir(directory):
        return "drive", directory
    raise ValueError(
        f"{directory}: no ssdbench results here (expected drive folders holding run "
        "folders with run.json / iops.csv, or a drive folder itself)"
    )


def run(args: argparse.Namespace) -> int:
    from ssdbench.report import render_all, render_drive, render_index

    try:
        kind, path = resolve(Path(args.dir))
    except ValueError as exc:
        print(f"ssdbench report: {shown(str(exc))}", file=sys.stderr)
        return int(ExitCode.USAGE)
    svg = not args.no_svg
    try:  # every file inside DIR; a link in the way is refused (OSError), never followed
        if kind == "root":
            reports = render_all(path, svg=svg)
        else:
            reports = [render_drive(path, svg=svg)]
            parent = path.parent
            if (parent / "summary.csv").is_file() or (parent / "index.html").is_file():
                render_index(parent, svg=svg)
                print(parent / "index.html")
    except OSError as exc:
        print(f"ssdbench report: {shown(str(exc))}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    failed = False
    for report in reports:
        for problem in report.problems:
            print(f"ssdbench report: {report.drive_dir.name}: {shown(problem, 2000)}",
                  file=sys.stderr)
        for r in report.runs:
            if r.unreadable:  # a damaged results file: the report is not the whole story
                failed = True
                print(f"ssdbench report: {report.drive_dir.name}/{r.run}: damaged: cannot "
                      f"read {', '.join(r.unreadable)}", file=sys.stderr)
            if not r.complete:
                print(f"ssdbench report: {report.drive_dir.name}/{r.run}: incomplete: "
                      + "; ".join(r.problems), file=sys.stderr)
        if report.html is None:
            failed = True
        else:
            print(report.html)
    if kind == "root":
        print(path / "index.html")
        print(path / "summary.csv")
    if args.batch_day is not None:
        if kind != "root":
            print("ssdbench report: --batch-day needs the results folder, not one drive's",
                  file=sys.stderr)
            return int(ExitCode.USAGE)
        code = batch_day(path, args.batch_day, pdf=not args.no_pdf)
        if code != ExitCode.OK:
            return code
    # 1: a report could not be written, or a run's file is there but unreadable (the pages
    # are still written and say which); an interrupted or cancelled run is not a failure
    return int(ExitCode.FAILURE if failed else ExitCode.OK)
