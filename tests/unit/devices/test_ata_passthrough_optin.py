"""The ATA pass-through opt-in (docs/devices.md) on a real capture: the emulated SATA SSD
of docs/ata-emulator.md behind tcm_loop shows a SCSI transport (bundle qemu-tcmu-ata-emu,
captured in QEMU with SSDBENCH_ATA_PASSTHROUGH set, so its list.json is the opted-in
answer and hdparm -I is recorded)."""

from __future__ import annotations

import json

import pytest

from ssdbench.devices import discover
from ssdbench.devices.bundle import load_bundle
from ssdbench.devices.discover import ata_passthrough_optins
from ssdbench.system import Host

from .fixtures import BUNDLES

BUNDLE = BUNDLES / "qemu-tcmu-ata-emu"


def drive_json(**kw: object) -> dict[str, object]:
    bundle = load_bundle(BUNDLE)
    drives = discover(Host(bundle.runner, bundle.fs), **kw)  # type: ignore[arg-type]
    assert len(drives) == 1
    out: dict[str, object] = drives[0].to_json()
    return out


def test_without_opt_in_scsi_drive_is_refused_and_not_asked(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("SSDBENCH_ATA_PASSTHROUGH", raising=False)
    d = drive_json()
    assert d["transport"] == "scsi" and d["serial"] == "ATAEMU0023"  # from VPD page 0x80
    assert d["erase_methods"] == [] and d["erase_refusal"] == ["scsi-not-supported"]
    assert d["ata_security"] is None and "ata_passthrough" not in d


@pytest.mark.parametrize("optin", ["ATAEMU0023", "sda", "/dev/sda"])
def test_opt_in_by_serial_name_or_path_gives_ata_methods(optin: str) -> None:
    d = drive_json(ata_passthrough={optin})
    assert d == json.loads((BUNDLE / "list.json").read_text())[0]
    assert d["transport"] == "scsi" and d["ata_passthrough"] is True
    assert d["erase_refusal"] == []
    assert d["erase_methods"] == ["ata-security-erase", "ata-security-erase-enhanced",
                                  "ata-sanitize-block", "ata-sanitize-crypto"]
    sec = d["ata_security"]
    assert isinstance(sec, dict) and sec["supported"] and not sec["frozen"]


def test_opt_in_for_another_drive_changes_nothing() -> None:
    assert drive_json(ata_passthrough={"OTHER123"})["erase_refusal"] == ["scsi-not-supported"]


def test_environment_variable_is_the_default(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("SSDBENCH_ATA_PASSTHROUGH", "OTHER, ATAEMU0023")
    assert drive_json()["ata_passthrough"] is True
    assert ata_passthrough_optins({"SSDBENCH_ATA_PASSTHROUGH": " a,b  c "}) == {"a", "b", "c"}


def test_command_line_flag_opts_a_drive_in(monkeypatch: pytest.MonkeyPatch,
                                           capsys: pytest.CaptureFixture[str]) -> None:
    """`ssdbench --ata-passthrough SERIAL list`: the per-drive opt-in from the command line
    (every front end: it reaches discovery through SSDBENCH_ATA_PASSTHROUGH)."""
    from ssdbench.cli import main

    monkeypatch.setenv("SSDBENCH_ATA_PASSTHROUGH", "")  # main() sets it: restored after
    assert main(["list", "--json", "--from-bundle", str(BUNDLE)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["erase_refusal"] == ["scsi-not-supported"]
    assert main(["--ata-passthrough", "ATAEMU0023", "list", "--json",
                 "--from-bundle", str(BUNDLE)]) == 0
    assert json.loads(capsys.readouterr().out)[0]["ata_passthrough"] is True
