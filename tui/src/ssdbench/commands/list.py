"""`ssdbench list [--json] [--all] [--from-bundle DIR]`: the drives and their safety."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from ssdbench.devices import Drive, discover
from ssdbench.devices.bundle import BundleError, load_bundle
from ssdbench.exitcodes import ExitCode
from ssdbench.system import Host, live_host
from ssdbench.units import decimal_size
from ssdbench.untrusted import shown


def register(subparsers: Any) -> None:
    p: argparse.ArgumentParser = subparsers.add_parser(
        "list",
        help="list drives: identity, TRIM, erase capabilities, protection",
        description=(
            "List the drives ssdbench sees. Protected drives (boot medium, results "
            "partition, mounted, swap, md/dm/LVM) are never written. Hidden unless --all: "
            "ram/zram/dm/md/sr/fd devices, NVMe multipath paths, and size-0 devices "
            "(detached loop devices, card readers without media)."
        ),
    )
    p.add_argument("--json", action="store_true", help="a JSON array, one object per drive")
    p.add_argument("--all", action="store_true", help="also list the devices hidden by default")
    p.add_argument("--from-bundle", metavar="DIR", type=Path,
                   help="replay discovery from a support bundle (ssdbench bundle) offline")
    p.set_defaults(func=run)


def human_size(n: int) -> str:
    if n <= 0:
        return "unknown"  # no size from sysfs, id-ns or a sane nvme list
    return decimal_size(n)


def security_state(d: Drive) -> str:
    if d.sed is not None and d.sed.blocks_erase:  # before ATA: a locked SED erases nothing
        return f"{'/'.join(d.sed.ssc) or 'TCG'} LOCKED"
    s = d.ata_security
    if s is not None:
        if not s.supported:
            return "unsupported"
        for flag, word in ((s.locked, "locked"), (s.expired, "expired"),
                           (s.frozen, "frozen"), (s.enabled, "enabled")):
            if flag:
                return word
        return "not frozen"
    if d.nvme is not None:
        san = [w for w, ok in (("block", d.nvme.controller.sanitize_block),
                               ("crypto", d.nvme.controller.sanitize_crypto),
                               ("overwrite", d.nvme.controller.sanitize_overwrite)) if ok]
        return "sanitize:" + ",".join(san) if san else "format only" if d.erase_methods else "-"
    return "-"


def format_table(drives: list[Drive]) -> str:
    header = ("DEVICE", "TRAN", "MODEL", "SIZE", "SERIAL", "FW", "TRIM", "SECURITY", "PROTECTED")
    rows: list[tuple[str, ...]] = [header]
    for d in drives:  # drive-reported strings: no control character reaches the terminal
        rows.append(tuple(shown(c, limit=80) for c in (
            d.path, d.transport, d.model or "-", human_size(d.size_bytes), d.serial or "-",
            d.firmware or "-", "yes" if d.trim_supported else "no", security_state(d),
            ("yes: " + ", ".join(d.protect_reasons)) if d.protected else "no",
        )))
    widths = [max(len(r[i]) for r in rows) for i in range(len(header) - 1)]
    lines = []
    for r in rows:
        cells = [c.ljust(w) for c, w in zip(r[:-1], widths, strict=True)]
        lines.append("  ".join([*cells, r[-1]]).rstrip())
    return "\n".join(lines)


def drives_json(drives: list[Drive]) -> str:
    return json.dumps([d.to_json() for d in drives], indent=2) + "\n"


def run(args: argparse.Namespace) -> int:
    host: Host
    if args.from_bundle is not None:
        try:
            bundle = load_bundle(args.from_bundle)
        except BundleError as exc:
            print(f"ssdbench list: {exc}", file=sys.stderr)
            return int(ExitCode.FAILURE)
        host = Host(bundle.runner, bundle.fs)
    else:
        host = live_host()
    drives = discover(host, include_all=args.all)
    if args.json:
        sys.stdout.write(drives_json(drives))
    else:
        print(format_table(drives) if drives else "no drives found")
        for d in drives:
            for p in d.problems:
                print(shown(f"ssdbench list: {d.name}: {p.tool}: {p.kind}: "
                            f"{(p.message.splitlines() or [''])[0]}", limit=400),
                      file=sys.stderr)
    return int(ExitCode.OK)
