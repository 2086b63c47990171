"""What every guest erase script (guest_ata_erase.py, guest_sas_erase.py) starts with, INSIDE
the QEMU guest: its output folder with a scratch folder, and a live host whose every command
is logged to OUT_DIR/log.txt."""

from __future__ import annotations

from pathlib import Path

from ssdbench.system import CommandLogFile, Host, LiveFS, SystemRunner


def guest_host(out: Path) -> tuple[Host, Path]:
    """(the live host logging to ``out``/log.txt, ``out``/scratch), both folders made."""
    out.mkdir(parents=True, exist_ok=True)
    scratch = out / "scratch"
    scratch.mkdir(exist_ok=True)
    runner = SystemRunner()
    runner.add_sink(CommandLogFile(out / "log.txt"))
    return Host(runner, LiveFS()), scratch
