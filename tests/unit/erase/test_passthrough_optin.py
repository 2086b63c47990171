"""A SATA drive behind a SAS HBA (or the emulated drive behind tcm_loop) shows a SAS/SCSI
transport: ATA security erase there only with the per-drive opt-in (docs/erase.md)."""

from __future__ import annotations

from dataclasses import replace

import pytest

from ssdbench.erase import NoEraseMethod, choose_method
from ssdbench.erase.adapter import target_from_drive
from ssdbench.erase.model import ATA_SECURITY_ERASE, ATA_SECURITY_ERASE_ENHANCED

from .test_ata import APACER, CRUCIAL_FROZEN, target_from


@pytest.mark.parametrize("transport", ["sas", "scsi"])
def test_scsi_transport_refused_without_opt_in(transport: str) -> None:
    with pytest.raises(NoEraseMethod, match="SAS/RAID/SCSI"):
        choose_method(target_from(APACER, transport=transport))


@pytest.mark.parametrize("transport", ["sas", "scsi"])
def test_opt_in_allows_ata_methods_on_scsi_transport(transport: str) -> None:
    target = replace(target_from(APACER, transport=transport), ata_passthrough=True)
    assert choose_method(target) == ATA_SECURITY_ERASE_ENHANCED


def test_opt_in_does_not_open_usb_or_virtual() -> None:
    for transport in ("usb", "virtio", "loop"):
        target = replace(target_from(APACER, transport=transport), ata_passthrough=True)
        with pytest.raises(NoEraseMethod):
            choose_method(target)


def test_adapter_carries_the_drive_opt_in() -> None:
    drive = {"path": "/dev/sda", "name": "sda", "transport": "scsi", "serial": "S1",
             "size_bytes": 1 << 20, "ata_passthrough": True}
    assert target_from_drive(drive).ata_passthrough is True
    assert target_from_drive({**drive, "ata_passthrough": False}).ata_passthrough is False


def test_explicit_security_erase_on_frozen_drive_names_the_reason() -> None:
    target = target_from(CRUCIAL_FROZEN)
    with pytest.raises(NoEraseMethod, match=r"frozen.*allow_suspend") as exc:
        choose_method(target, ATA_SECURITY_ERASE)
    assert "hot-plugging" in str(exc.value)  # the advice, not only the reason
