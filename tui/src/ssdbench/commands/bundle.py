"""`ssdbench bundle OUT`: a support bundle of everything discovery runs and reads."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from ssdbench.commands.list import drives_json, format_table
from ssdbench.devices import discover
from ssdbench.devices.bundle import RecordingFS, RecordingRunner, write_bundle
from ssdbench.devices.discover import is_listed
from ssdbench.exitcodes import ExitCode
from ssdbench.system import Host, LiveFS, SystemRunner


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "bundle",
        help="write a support bundle (raw discovery output) to a folder",
        description=(
            "Run drive discovery and write every command's stdout/stderr verbatim "
            "(cmd/), every sysfs/proc value read (fs/), manifest.json and the list "
            "answer (list.json, list.txt) to OUT. `ssdbench list --from-bundle OUT` "
            "replays it. Nothing is written to any drive."
        ),
    )
    p.add_argument("out", metavar="OUT", type=Path, help="folder to create (absent or empty)")
    p.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    out: Path = args.out
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        print(f"ssdbench bundle: {out} exists and is not an empty folder", file=sys.stderr)
        return int(ExitCode.USAGE)
    runner = RecordingRunner(SystemRunner())
    fs = RecordingFS(LiveFS())
    host = Host(runner, fs)
    everything = discover(host, include_all=True)
    listed = [d for d in everything if is_listed(host, d.name)]
    write_bundle(out, runner, fs, extra_files={
        "list.json": drives_json(listed).encode(),
        "list-all.json": drives_json(everything).encode(),
        "list.txt": (format_table(listed) + "\n").encode(),
    })
    print(f"ssdbench bundle: {len(runner.recordings)} commands, "
          f"{len(fs.record.files)} files, {len(listed)} drives -> {out}", file=sys.stderr)
    return int(ExitCode.OK)


def main(argv: list[str] | None = None) -> int:
    """`python -m ssdbench.commands.bundle OUT`: the bundle without loading the other
    subcommands (a rescue shell, or a CPU the numerical libraries do not run on)."""
    parser = argparse.ArgumentParser(prog="ssdbench bundle")
    parser.add_argument("out", metavar="OUT", type=Path)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
