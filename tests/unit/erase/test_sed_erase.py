"""Locked self-encrypting drives in the erase room: refused with the advice, and the PSID
revert step (sedutil-cli through the one runner, fed captured outputs: the only way to test it
without an Opal drive)."""

from __future__ import annotations

import pytest

from ssdbench.devices.sed import parse_sedutil_query
from ssdbench.erase import EraseOptions, NoEraseMethod, choose_method, target_from_drive
from ssdbench.erase.model import EraseTarget

from ..devices.test_sed import capture


def locked_drive_json() -> dict[str, object]:
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    return {"path": "/dev/sdb", "name": "sdb", "transport": "sata", "serial": "S0S8NEAB909523",
            "model": "SAMSUNG SSD PM810 FDE 2.5\" 256GB", "size_bytes": 256 * 10**9,
            "logical_block_size": 512, "erase_methods": [],
            "ata_security": {"supported": True, "enabled": False, "locked": False,
                             "frozen": False, "expired": False, "enhanced_supported": True},
            "sed": sed.to_json()}


def test_target_from_a_locked_drive_carries_the_reason_and_advice() -> None:
    target = target_from_drive(locked_drive_json())
    assert "Opal 1" in target.sed_lock and "PSID revert" in target.sed_lock


@pytest.mark.parametrize("fallback", ["fail", "discard"])
def test_erase_of_a_locked_drive_is_refused_with_the_advice(fallback: str) -> None:
    target = target_from_drive(locked_drive_json())
    with pytest.raises(NoEraseMethod, match=r"locked self-encrypting drive.*PSID revert"):
        choose_method(target, options=EraseOptions(erase_fallback=fallback))
    with pytest.raises(NoEraseMethod, match="locked self-encrypting drive"):
        choose_method(target, "ata-security-erase")


def test_an_unlocked_target_still_erases() -> None:
    drive = locked_drive_json()
    drive.pop("sed")
    target: EraseTarget = target_from_drive(drive)
    assert target.sed_lock == "" and choose_method(target) == "ata-security-erase-enhanced"
