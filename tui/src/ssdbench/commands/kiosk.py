"""`ssdbench kiosk`: unattended mode. Finds the SSDRESULTS stick and ssdbench.toml, tests
every drive the config selects and consents to (protected drives never), all at once,
with the journal (after a power loss the unfinished plans resume), then powers off,
reboots or stays as the config says. A bad config stops with a message naming the key
(exit 2) before anything is written; a `select` entry that matches no drive is named on
screen and in kiosk.txt, and the exit status is 3. See docs/kiosk.md."""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any, TextIO

from ssdbench.kiosk.run import KioskOptions, run_kiosk
from ssdbench.system import Host, live_host


def register(subparsers: Any) -> None:
    p = subparsers.add_parser(
        "kiosk", help="unattended: test the drives ssdbench.toml names, then power off",
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--config", type=Path, metavar="FILE",
                   help="the config (default: ssdbench.config= on the kernel command line, "
                        "else ssdbench.toml on the SSDRESULTS stick)")
    p.add_argument("--results", type=Path, metavar="DIR",
                   help="results folder (default: ssdbench/ on the SSDRESULTS stick, else RAM)")
    p.add_argument("--dry-run", action="store_true",
                   help="show the plan and the drives it would run on; touch nothing")
    p.add_argument("--include-all", action="store_true",
                   help="also consider loop and virtual devices (tests, demos)")
    p.add_argument("--no-power", action="store_true",
                   help="never power off or reboot, whatever on_finish says")
    p.set_defaults(func=main)


def main(args: argparse.Namespace, *, host: Host | None = None, out: TextIO | None = None,
         err: TextIO | None = None) -> int:
    cancel = threading.Event()
    previous = None
    err = err or sys.stderr
    if threading.current_thread() is threading.main_thread():
        def on_sigint(_signum: int, _frame: FrameType | None) -> None:
            if cancel.is_set():
                raise KeyboardInterrupt
            print("ssdbench: cancelling (Ctrl-C again to abort)", file=err, flush=True)
            cancel.set()

        previous = signal.signal(signal.SIGINT, on_sigint)
    try:
        opts = KioskOptions(config=args.config, results=args.results, dry_run=args.dry_run,
                            include_all=args.include_all, no_power=args.no_power)
        return run_kiosk(opts, host or live_host(), out or sys.stdout, err, cancel)
    finally:
        if previous is not None:
            signal.signal(signal.SIGINT, previous)
