"""The rigs' drive identities (issue #42, simdrive/identity.py): the hostile one fits the
fields it is meant for, the emulated ATA drive reports its strings byte for byte in
IDENTIFY and in the SCSI serial page (U+202E as its three UTF-8 bytes: what a counterfeit
drive's firmware may send), a drive without a serial reports blanks, and `simdrive start`
takes the identity by name."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from simdrive import cli
from simdrive.ata.__main__ import main as ata_main
from simdrive.ata.drive import AtaDrive
from simdrive.ata.scsi import SatTarget
from simdrive.identity import HOSTILE, ORDINARY, Identity, named
from tests.hostile import HOSTILE_MODEL, HOSTILE_SERIAL, HOSTILE_SHARED_SERIAL


def ata_field(raw: bytes, first: int, last: int) -> bytes:
    """IDENTIFY words first..last as the bytes of an ATA string (each word byte-swapped)."""
    return bytes(raw[i ^ 1] for i in range(2 * first, 2 * (last + 1)))


def test_the_hostile_identity_fits_its_fields_and_carries_every_hazard() -> None:
    assert HOSTILE.problems() == [] and ORDINARY.problems() == []
    for hazard in ("[b]", "<script>", "</style>", "$\\frac{a}{b}$"):
        assert hazard in HOSTILE.model
    assert "\n" in HOSTILE.serial and "\u202e" in HOSTILE.serial and "</" in HOSTILE.serial
    assert HOSTILE.shared_serial.startswith("=")
    assert (HOSTILE.model, HOSTILE.serial, HOSTILE.shared_serial) == \
        (HOSTILE_MODEL, HOSTILE_SERIAL, HOSTILE_SHARED_SERIAL)
    too_long = Identity(model="M" * 41, serial="\u202e" * 7, firmware="F", shared_serial="a,b")
    assert [p.split(" ")[0] for p in too_long.problems()] == ["model", "serial", "shared_serial"]
    assert named("hostile") is HOSTILE
    with pytest.raises(ValueError, match="unknown identity 'evil'"):
        named("evil")


def test_the_emulated_ata_drive_reports_the_hostile_strings_byte_for_byte(
        tmp_path: Path) -> None:
    assert ata_main(["create", str(tmp_path / "d"), "--identity", "hostile"]) == 0
    d = AtaDrive(tmp_path / "d")
    raw = d.identify()
    assert sum(raw) % 256 == 0  # the checksum still holds
    serial = HOSTILE.serial.encode()
    assert ata_field(raw, 10, 19) == serial.rjust(20)  # right-aligned, as drives do
    assert ata_field(raw, 23, 26) == HOSTILE.firmware.encode().ljust(8)
    assert ata_field(raw, 27, 46) == HOSTILE.model.encode().ljust(40)
    target = SatTarget(d, lambda line: None)
    page = target._inquiry(bytes([0x12, 1, 0x80, 0, 0xFF, 0]), b"").data
    assert page[4:] == serial.rjust(20)


def test_the_emulated_ata_drive_without_a_serial_reports_blanks(tmp_path: Path) -> None:
    assert ata_main(["create", str(tmp_path / "d"), "--no-serial", "--serial", "X1",
                     "--firmware", "FW9"]) == 0
    config = json.loads((tmp_path / "d" / "config.json").read_text())
    assert config["serial"] == "" and config["firmware"] == "FW9"
    raw = AtaDrive(tmp_path / "d").identify()
    assert ata_field(raw, 10, 19) == b" " * 20
    assert ata_field(raw, 23, 26) == b"FW9".ljust(8)


def test_an_ata_string_longer_than_its_field_is_refused(tmp_path: Path) -> None:
    with pytest.raises(SystemExit):
        ata_main(["create", str(tmp_path / "d"), "--serial", "S" * 21])
    assert not (tmp_path / "d").exists()


def test_simdrive_start_takes_the_identity_by_name() -> None:
    args = cli.parse_args(["start", "--preset", "consumer", "--size", "64M", "--dir", "/x",
                           "--identity", "hostile"])
    assert (args.serial, args.model, args.firmware) == \
        (HOSTILE.serial, HOSTILE.model, HOSTILE.firmware)
    plain = cli.parse_args(["start", "--preset", "consumer", "--size", "64M", "--dir", "/x",
                            "--serial", "S9"])
    assert (plain.serial, plain.model) == ("S9", "")
    mixed = cli.parse_args(["start", "--preset", "consumer", "--size", "64M", "--dir", "/x",
                            "--identity", "hostile", "--serial", "S9"])
    assert (mixed.serial, mixed.model) == ("S9", HOSTILE.model)  # a flag given wins


def test_a_hostile_simulated_drive_records_its_identity_as_given(tmp_path: Path) -> None:
    """Through nbdkit's key=value parameters (a line break and all) into the truth log's
    start event and simdrive.json."""
    d = tmp_path / "sim"
    assert cli.main(["start", "--preset", "enterprise", "--size", "58M", "--dir", str(d),
                     "--identity", "hostile"]) == 0
    try:
        start = next(json.loads(line) for line in (d / "truth.jsonl").read_text().splitlines()
                     if json.loads(line)["event"] == "start")
        state = json.loads((d / "simdrive.json").read_text())
    finally:
        assert cli.main(["stop", "--dir", str(d)]) == 0
    assert (start["serial"], start["model"]) == (HOSTILE.serial, HOSTILE.model)
    assert (state["serial"], state["model"], state["firmware"]) == \
        (HOSTILE.serial, HOSTILE.model, HOSTILE.firmware)
