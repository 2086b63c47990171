"""The `ssdbench` command line: one front end over the engine.

Data goes to stdout, diagnostics to stderr; exit codes are :class:`ExitCode`.
With no subcommand, the Textual TUI starts (imported only then).
"""

from __future__ import annotations

import argparse
import importlib
import os
import sys
from collections.abc import Sequence

from ssdbench import __version__
from ssdbench.devices.discover import ATA_PASSTHROUGH_ENV
from ssdbench.exitcodes import ExitCode

# Subcommand modules under ssdbench.commands, in the order `--help` lists them.
COMMAND_MODULES = ("list", "bundle", "run", "report", "batch", "kiosk", "verify_record",
                   "fleet")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ssdbench",
        description=(
            "Test SSDs the way hardware reviewers do: secure erase, sequential fill, "
            "4 KiB random-write torture with per-second IOPS, over-provisioning, TRIM "
            "validation; CSV, charts and an HTML report. Without a subcommand the "
            "text UI starts."
        ),
        epilog="Exit codes: " + ", ".join(f"{c.value} {c.name.lower()}" for c in ExitCode),
    )
    parser.add_argument("--version", action="version", version=f"ssdbench {__version__}")
    parser.add_argument(
        "--ata-passthrough", action="append", default=[], metavar="DRIVE",
        help="a SATA drive behind a SAS HBA that passes ATA commands through (serial, kernel "
             "name or /dev path; repeatable): its SCSI/SAS path is allowed ATA secure erase, "
             "refused by default. Also SSDBENCH_ATA_PASSTHROUGH, or ssdbench.ata_passthrough= "
             "on the appliance's kernel command line (docs/devices.md)")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name in COMMAND_MODULES:
        try:
            module = importlib.import_module(f"ssdbench.commands.{name}")
        except ModuleNotFoundError as exc:
            if exc.name != f"ssdbench.commands.{name}":
                raise
            continue
        module.register(sub)
    return parser


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.ata_passthrough:  # discovery reads it wherever it runs (TUI, kiosk, commands)
        os.environ[ATA_PASSTHROUGH_ENV] = ",".join(
            [os.environ.get(ATA_PASSTHROUGH_ENV, ""), *args.ata_passthrough]).strip(",")
    if args.command is None:
        from ssdbench.ui.app import run_tui  # the only import of the UI from the engine side

        return int(run_tui())
    try:
        return int(args.func(args))
    except KeyboardInterrupt:
        print("ssdbench: interrupted", file=sys.stderr)
        return int(ExitCode.INTERRUPTED)
