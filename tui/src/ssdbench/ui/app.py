"""The Textual TUI (issue: the TUI and kiosk mode). Not built yet."""

from __future__ import annotations

import sys


def run_tui() -> int:
    print(
        "ssdbench: the text UI is not built yet; use `ssdbench list` (see `ssdbench --help`)",
        file=sys.stderr,
    )
    return 1
