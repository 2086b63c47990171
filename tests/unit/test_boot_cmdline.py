"""Every boot menu entry lets TRUSTED SEND/RECEIVE through to SATA drives
(libata.allow_tpm=1), so sedutil-cli can read a TCG drive's state and PSID revert it."""

from __future__ import annotations

import re
from pathlib import Path

GRUB = Path(__file__).resolve().parents[2] / "board" / "ssdbench" / "grub.cfg"


def test_every_menu_entry_has_libata_allow_tpm() -> None:
    text = GRUB.read_text(encoding="utf-8")
    base = re.search(r'set ssdbench_base="([^"]*)"', text)
    assert base is not None
    entries = re.findall(r"eval linux (.*)", text)
    assert len(entries) >= 5
    for line in entries:
        args = line.replace("$ssdbench_base", base.group(1)).split()
        assert "libata.allow_tpm=1" in args, line
