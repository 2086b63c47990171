"""TCG Opal / Pyrite / Enterprise detection and the locked state, parsed from public
captures (tests/data/sed, each file's header names its source)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.devices.sed import (
    UNLOCK_ADVICE,
    level0_from_hexdump,
    nvme_level0_argv,
    parse_level0,
    parse_sedutil_query,
    parse_sedutil_scan,
)

SED = Path(__file__).resolve().parents[2] / "data" / "sed"


def capture(name: str) -> str:
    text = (SED / name).read_text(encoding="utf-8")
    return "".join(line for line in text.splitlines(keepends=True) if not line.startswith("#"))


def level0(name: str) -> bytes:
    return level0_from_hexdump(capture(name))


def test_level0_wd_sn730_opal2_not_locked_with_a_cut_block_sid_descriptor() -> None:
    data = level0("level0-hexdump_wd-sn730-nvme_sedutil-507.txt")
    assert len(data) == 0xb0  # sedutil dumped 0xb0 bytes; the header says 0xb4 in all
    sed = parse_level0(data)
    assert sed.ssc == ("Opal 2",)
    assert sed.features == (0x0001, 0x0002, 0x0003, 0x0201, 0x0202, 0x0203, 0x0402)
    assert (sed.locking_supported, sed.locking_enabled, sed.locked) == (True, False, False)
    assert sed.media_encryption and not sed.blocks_erase and sed.lock_reason == ""


def test_level0_crucial_mx500_locking_enabled() -> None:
    sed = parse_level0(level0("level0-hexdump_crucial-mx500-sata_sedutil-340.txt"))
    assert sed.ssc == ("Opal 2",)
    assert (sed.locking_enabled, sed.locked, sed.mbr_enabled) == (True, False, False)


def test_level0_vendor_feature_and_mbr_done() -> None:
    sed = parse_level0(level0("level0-hexdump_opal-sata-vendor-feature_sedutil-392.txt"))
    assert sed.features == (0x0001, 0x0002, 0x0203, 0x0201, 0x0202, 0xC001, 0x0003)
    assert (sed.locking_enabled, sed.locked, sed.mbr_enabled, sed.mbr_done) == (
        True, False, True, True)
    assert not sed.blocks_erase  # MBR done: the data is shown


def test_level0_nvmetool_win_dump_format() -> None:
    data = level0("level0-hexdump_opal-nvme_nvmetool-win-2.txt")
    assert data[:8] == bytes.fromhex("000000a000000001") and len(data) == 0xa0
    sed = parse_level0(data)
    assert sed.ssc == ("Opal 2",) and sed.locking_supported and not sed.locking_enabled


def test_level0_locked_bit_from_a_real_dump_with_the_locking_byte_changed() -> None:
    # No public binary capture of a locked drive was found: the MX500 dump with its Locking
    # byte set to what a locked drive with a shadow MBR reports (0x17 = supported, enabled,
    # locked, MBR enabled; the text captures below show such drives).
    data = bytearray(level0("level0-hexdump_crucial-mx500-sata_sedutil-340.txt"))
    assert data[0x44] == 0x0B
    data[0x44] = 0x17
    sed = parse_level0(bytes(data))
    assert sed.locked and sed.shadow_mbr and sed.blocks_erase
    assert "Locked = Y" in sed.lock_reason and "shadow MBR" in sed.lock_reason


def test_level0_empty_answers_are_errors() -> None:
    with pytest.raises(ParseError, match="48-byte header"):
        parse_level0(b"\x00" * 10)
    with pytest.raises(ParseError, match="length 0"):
        parse_level0(b"\x00" * 2048)


def test_sedutil_query_locked_opal1_drive() -> None:
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    assert sed.ssc == ("Opal 1",) and sed.source == "sedutil-cli --query"
    assert (sed.locked, sed.locking_enabled, sed.mbr_enabled, sed.mbr_done) == (
        True, True, True, False)
    assert sed.blocks_erase
    out = sed.to_json()
    assert out["blocks_erase"] and out["advice"] == UNLOCK_ADVICE
    assert "PSID revert" in out["advice"] and "Opal 1" in out["lock_reason"]


def test_sedutil_query_unlocked_and_locking_enabled_drives() -> None:
    evo = parse_sedutil_query(capture("sedutil-query_samsung-960evo_opal2-unlocked_sedutil-101.txt"))
    assert evo.ssc == ("Opal 2",) and not evo.locking_enabled and not evo.blocks_erase
    kioxia = parse_sedutil_query(
        capture("sedutil-query_kioxia-nvme_locking-enabled_sedutil-503.txt"))
    assert kioxia.ssc == ("Opal 2",)
    assert (kioxia.locking_enabled, kioxia.locked, kioxia.blocks_erase) == (True, False, False)
    assert kioxia.features == (0x0001, 0x0002, 0x0003, 0x0201, 0x0202, 0x0203)


def test_sedutil_149_query_without_locking_supported_word() -> None:
    sed = parse_sedutil_query(capture("sedutil-query_crucial-t710_opal215_sedutil-520.txt"))
    assert sed.ssc == ("Opal 2",) and sed.locking_supported and sed.locking_enabled
    assert 0x0404 in sed.features and not sed.locked


def test_sedutil_query_without_features_is_an_error() -> None:
    with pytest.raises(ParseError, match="function"):
        parse_sedutil_query("NVME Security Command Error:8194\n"
                            "- 13:45:34.633 ERR : Invalid or unsupported disk /dev/nvme0\n")


def test_sedutil_scan_outputs() -> None:
    sas = parse_sedutil_scan(capture("sedutil-scan_sas-enterprise_sedutil-368.txt"))
    assert [(e.device, e.ssc) for e in sas] == [
        ("/dev/sda", ("Enterprise",)), ("/dev/sdb", ()), ("/dev/sdc", ())]
    pm810 = parse_sedutil_scan(capture("sedutil-scan_opal1-pm810_sedutil-325.txt"))
    assert [(e.device, e.codes, e.ssc) for e in pm810] == [
        ("/dev/sda", "No", ()), ("/dev/sdb", "1", ("Opal 1",))]
    assert pm810[1].model.startswith("SAMSUNG SSD PM810")
    new = parse_sedutil_scan(capture("sedutil-scan_v1.49-opal12-usb_sedutil-502.txt"))
    assert [(e.device, e.ssc) for e in new] == [
        ("/dev/nvme0n1", ("Opal 1", "Opal 2")), ("/dev/sda", ())]


def test_lock_reason_for_a_shadow_mbr_alone() -> None:
    sed = parse_sedutil_query(capture("sedutil-query_samsung-960evo_opal2-unlocked_sedutil-101.txt"))
    shadow = replace(sed, locking_enabled=True, mbr_enabled=True, mbr_done=False)
    assert shadow.blocks_erase and "shadow MBR" in shadow.lock_reason and not shadow.locked


def _locked_mx500() -> bytes:
    data = bytearray(level0("level0-hexdump_crucial-mx500-sata_sedutil-340.txt"))
    data[0x44] = 0x07  # supported, enabled, locked (see the test above)
    return bytes(data)


def test_discovery_marks_a_locked_nvme_drive_and_refuses_its_erase() -> None:
    from ssdbench.devices import discover

    from .test_discover import PM1733, nvme_machine

    m = nvme_machine(PM1733)
    m.runner.add(nvme_level0_argv("/dev/nvme0"), stdout=_locked_mx500())
    (d,) = discover(m.finish())
    assert d.sed is not None and d.sed_locked
    assert d.erase_methods == () and "sed-locked" in d.erase_refusal
    j = d.to_json()["sed"]
    assert j["locked"] and j["blocks_erase"] and "PSID revert" in j["advice"]
    assert j["features"][:2] == ["0x0001", "0x0002"]


def test_discovery_of_an_unlocked_opal_nvme_drive_keeps_its_methods() -> None:
    from ssdbench.devices import discover

    from .test_discover import PM1733, nvme_machine

    m = nvme_machine(PM1733)
    m.runner.add(nvme_level0_argv("/dev/nvme0"),
                 stdout=level0("level0-hexdump_wd-sn730-nvme_sedutil-507.txt"))
    (d,) = discover(m.finish())
    assert d.sed is not None and not d.sed_locked and d.sed.ssc == ("Opal 2",)
    assert "nvme-sanitize-block" in d.erase_methods and "sed-locked" not in d.erase_refusal


def test_discovery_without_a_level0_answer_has_no_sed_key() -> None:
    from ssdbench.devices import discover

    from .test_discover import PM1733, nvme_machine

    (d,) = discover(nvme_machine(PM1733).finish())  # security-recv not recorded: fails
    assert d.sed is None and "sed" not in d.to_json()
