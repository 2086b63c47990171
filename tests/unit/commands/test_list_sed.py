"""`ssdbench list`'s table says a self-encrypting drive is locked (#22 item 5): the SECURITY
column, from the Level 0 Discovery of a real locked drive (sedutil issue 325's capture)."""

from __future__ import annotations

from dataclasses import replace

from ssdbench.commands.list import format_table
from ssdbench.devices import discover
from ssdbench.devices.sed import parse_sedutil_query
from tests.ui.conftest import replay_host
from tests.unit.devices.test_sed import capture


def test_locked_sed_in_the_security_column() -> None:
    drives = [d for d in discover(replay_host()) if d.name == "loop1"]
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    assert "LOCKED" not in format_table(drives)
    row = format_table([replace(drives[0], sed=sed)]).splitlines()[1]
    assert "Opal 1 LOCKED" in row
