"""The report in a process of its own: ``python -m ssdbench.report.apart drive|index PATH
[--no-svg]`` renders one drive's report (:func:`ssdbench.report.render_drive`) or the
results index (:func:`ssdbench.report.render_index`) and nothing else.

The TUI starts it (``plan.engine.render_apart``) rather than drawing the charts in one of
its own threads: matplotlib then does not share the interpreter with Textual, which drew the
screen in the same process and made the report several times slower under emulation (issue
31: 160 s against 42 s for the same report from the command line in the same guest); a
report that crashes or hangs cannot take the screen down, and its memory goes back when it
ends. Exit status 0, else 1 with one line on stderr saying what failed.
"""

from __future__ import annotations

import sys
from pathlib import Path


def main(argv: list[str]) -> int:
    args = [a for a in argv if a != "--no-svg"]
    if len(args) != 2 or args[0] not in ("drive", "index"):
        print("usage: python -m ssdbench.report.apart drive|index PATH [--no-svg]",
              file=sys.stderr)
        return 2
    what, path = args[0], Path(args[1])
    svg = "--no-svg" not in argv
    try:
        from ssdbench.report import render_drive, render_index

        if what == "drive":
            render_drive(path, svg=svg)
        elif path.is_dir():
            render_index(path, svg=svg)
    except Exception as exc:  # the caller shows this line; the measurements are saved
        print(f"{type(exc).__name__}: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
