"""Drive strings written by a counterfeiter (#28 items 5 and 6): a replayed bundle of the
QEMU drives with the SATA disk's model and serial replaced by markup, control characters and
a formula, for the TUI, `ssdbench list`, the station screen and the CSVs."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

BUNDLE = Path(__file__).resolve().parent / "data" / "bundles" / "qemu-nvme-ahci-usb"
# markup that closed a tag that was never opened (MarkupError), ESC [2J (clears a terminal),
# BEL, CR, and a formula for a spreadsheet
EVIL_MODEL = "=HYPERLINK(\"x\")[/]\x1b[2J\x07\rEVIL"
# italic markup around another drive's serial: rendered as markup it showed SSDBNVME0001
EVIL_SERIAL = "[i]SSDBNVME0001[/i]"
MODEL, SERIAL = "SSDBENCH SATA DISK", "SSDBSATA0001"


def hostile_bundle(dest: Path) -> Path:
    """A copy of the QEMU bundle whose SATA disk reports EVIL_MODEL and EVIL_SERIAL."""
    shutil.copytree(BUNDLE, dest)
    for path in (dest / "cmd").iterdir():
        text = path.read_text(encoding="utf-8", errors="surrogateescape")
        if path.suffix == ".out" and text.lstrip().startswith(("{", "[")):
            model, serial = json.dumps(EVIL_MODEL)[1:-1], json.dumps(EVIL_SERIAL)[1:-1]
        else:
            model, serial = EVIL_MODEL, EVIL_SERIAL
        path.write_text(text.replace(MODEL, model).replace(SERIAL, serial), encoding="utf-8",
                        errors="surrogateescape")
    return dest
