"""A locked self-encrypting drive on the drives screen: marked LOCK in the list, the reason
and what to do in the details (#22 item 5)."""

from __future__ import annotations

from dataclasses import replace

from ssdbench.devices import Drive, discover
from ssdbench.devices.sed import parse_sedutil_query
from ssdbench.ui.drives import details, drive_row
from tests.ui.conftest import replay_host
from tests.unit.devices.test_sed import capture


def _loop1_locked() -> tuple[Drive, Drive]:
    drive = next(d for d in discover(replay_host()) if d.name == "loop1")
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    return drive, replace(drive, sed=sed)


def test_locked_drive_row_and_details() -> None:
    plain, locked = _loop1_locked()
    assert str(drive_row(plain, False)[0]) == "[ ]"
    row = drive_row(locked, False)
    assert str(row[0]) == "LOCK" and "PSID revert" in str(row[-1])
    assert str(drive_row(locked, True)[0]) == "[x]"
    text = details(locked).plain
    assert "TCG" in text and "Opal 1: locking enabled, LOCKED, SHADOW MBR" in text
    assert "no erase until it is unlocked" in text and "PSID" in text
    assert "TCG" not in details(plain).plain
