"""`ssdbench fleet SOURCE`: one page (and a CSV) of every bench and drive of a lab, from a
folder laid out like the store or from the store itself (docs/lab.md)."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.exitcodes import ExitCode
from ssdbench.untrusted import shown


def register(subparsers: Any) -> None:
    parser = subparsers.add_parser(
        "fleet",
        help="one HTML page and a CSV of every bench and drive of a lab",
        description=(
            "Build fleet.html (self-contained) and fleet.csv: every bench with its state "
            "(running, done, failed, or silent when its status.json is older than "
            "--silent-after), the drives on each bench now, every drive tested (model, "
            "firmware, serial, verdicts, steady IOPS, erase method, when) and steady IOPS "
            "compared by model. SOURCE is a folder holding <bench>/status.json and "
            "<bench>/<serial>/<run id>/... (a copy of the store's prefix), or the word "
            "'store' with --config FILE: the [store] of that kiosk config, read over the "
            "network. The rows of finished runs are kept in an index in the store "
            "(_fleet/<bench>/<day>.csv.gz, written back by this command; for a folder, in "
            "DIR/_fleet/, the folder is only read): a build reads only the "
            "run.json files that are new or changed since, and what each bench and day gave "
            "the page is kept in DIR/_fleet/.cache/ (build into the same DIR each time: a "
            "day's new runs cost what they are). Every run is in fleet.csv and on "
            "the search pages fleet-serials/ (and fleet-asset-tags/, fleet-lots/); the page "
            "shows summaries and the newest 500 runs. Prints the page's path. Exit status 2 "
            "when SOURCE holds no bench."
        ),
    )
    parser.add_argument("source", metavar="SOURCE", help="a folder, or 'store' with --config")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="a kiosk config whose [store] is read when SOURCE is 'store'")
    parser.add_argument("-o", "--output", type=Path, default=Path("."), metavar="DIR",
                        help="where fleet.html and fleet.csv go (default: here)")
    parser.add_argument("--silent-after", type=float, default=120.0, metavar="SECONDS",
                        help="a running bench whose status is older is 'silent' (default 120)")
    parser.add_argument("--no-index", action="store_true",
                        help="read every run.json, neither read nor write the index (in "
                        "the store under _fleet/, or for a folder in DIR/_fleet/: docs/lab.md), "
                        "and make DIR/_fleet/.cache/ again")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from ssdbench.lab import fleet, fleetindex
    from ssdbench.results import atomic

    source: fleetindex.Source
    if args.source == "store" and args.config is not None:
        from ssdbench.kiosk.config import ConfigError, load_config
        from ssdbench.lab.store import open_store

        try:
            cfg = load_config(args.config).store
        except ConfigError as exc:
            print(f"ssdbench fleet: {exc}", file=sys.stderr)
            return int(ExitCode.USAGE)
        if cfg is None:
            print(f"ssdbench fleet: {args.config} has no [store]", file=sys.stderr)
            return int(ExitCode.USAGE)
        source = fleetindex.StoreSource(open_store(cfg), cfg.prefix)
    elif Path(args.source).is_dir():
        source = fleetindex.FolderSource(Path(args.source), index=args.output / "_fleet",
                                         use_dirs=not args.no_index)
    else:
        print(f"ssdbench fleet: {args.source}: no such folder (or give 'store' with "
              "--config FILE)", file=sys.stderr)
        return int(ExitCode.USAGE)
    from ssdbench.lab.store import StoreError

    args.output.mkdir(parents=True, exist_ok=True)
    try:  # inside -o only, never through a link there
        built = fleetindex.build(source, args.output, silent_after_s=args.silent_after,
                                 use_index=not args.no_index)
        result = built.fleet
        if not result.benches:
            print(f"ssdbench fleet: {args.source}: no bench found (no <bench>/status.json, "
                  "no <bench>/<serial>/<run id>/.../run.json)", file=sys.stderr)
            return int(ExitCode.USAGE)
        page = args.output / "fleet.html"
        atomic.write_text(page, fleet.fleet_html(result), root=args.output)
    except StoreError as exc:
        print(f"ssdbench fleet: {exc}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    except OSError as exc:
        print(f"ssdbench fleet: {shown(str(exc))}", file=sys.stderr)
        return int(ExitCode.FAILURE)
    if result.skipped:
        print(f"ssdbench fleet: {len(result.skipped)} file(s) left out (named on the page), "
              f"first: {shown(result.skipped[0])}", file=sys.stderr)
    print(f"ssdbench fleet: {built.runs:,} runs, {built.read:,} run.json read (the others "
          "from the index)", file=sys.stderr)
    print(page)
    return int(ExitCode.OK)
