"""The file of what a bench sent, ``<prefix>/_fleet/sent/<bench>/<YYYYMMDD>.txt``
(docs/lab.md "S3 at a million runs"): its folder, the files it names and the grammar of its
lines. lab/uploader.py writes it, lab/fleetindex.py reads it; both check it here, so the
writer never writes a line the reader would refuse. Light on purpose: the kiosk's uploader
imports it, and none of the fleet page."""

from __future__ import annotations

import re

SENT_DIR = "_fleet/sent"
# the files the fleet build reads (lab/fleet.py WANTED)
FLEET_FILES = ("status.json", "run.json", "drive.json", "erase-record.json",
               "record-chain.json")
# in a sent file's text: control and invisible characters (only a tab and a line break have
# a place: they end a cell and a line), a backslash
BAD = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e"
                 "\u2060-\u2069\ufeff\\\\]")
# every line <rel>\t<tag>: rel a path below the bench (no empty, . or .. part, no leading
# /), ending in a file the build reads
LINES = re.compile(
    r"(?:(?:(?!\.\.?/)[^/\t\n]+/)*(?:" + "|".join(re.escape(n) for n in FLEET_FILES)
    + r")\t[^\t\n]+\n)*")


def line_ok(line: str) -> bool:
    """One line (without its line break) as the fleet build takes it."""
    return ("\n" not in line and BAD.search(line) is None
            and LINES.fullmatch(line + "\n") is not None)
