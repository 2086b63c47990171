"""hdparm -I and hdparm SG_IO error lines, on real outputs (tests/data/fixtures/hdparm)."""

from __future__ import annotations

import pytest

from ssdbench.devices.hdparm import (
    HdparmErrorKind,
    PassThroughUnavailable,
    classify_hdparm_error,
    parse_hdparm_identify,
)
from ssdbench.devices.model import ParseError

from .fixtures import fixture_text


def ident(name: str):
    return parse_hdparm_identify(fixture_text(f"hdparm/{name}"))


def test_apacer_not_frozen_20_and_60_minutes() -> None:
    a = ident("hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt")
    assert a.model == "Apacer AS340 120GB"
    assert a.serial == "270E0788096C03674465"
    assert a.firmware == "AP612PE0"
    assert a.sectors == 234441648
    assert a.logical_block_size == a.physical_block_size == 512
    assert a.size_bytes == 234441648 * 512
    assert a.rotation_rpm == 0
    assert a.trim_supported and a.trim_limit_blocks == 8
    assert not a.drat and not a.rzat
    s = a.security
    assert s is not None
    assert (s.supported, s.enabled, s.locked, s.frozen, s.expired, s.enhanced_supported) == (
        True, False, False, False, False, True)
    assert (s.erase_minutes, s.enhanced_erase_minutes) == (20, 60)
    assert not s.erase_minutes_lower_bound
    assert s.master_password_revision == 65534
    assert not a.sanitize.supported
    assert "Security Mode feature set" in a.features
    assert "Security Mode feature set" not in a.enabled_features
    assert "Write cache" in a.enabled_features


def test_crucial_mx100_frozen_with_sanitize_and_rzat() -> None:
    a = ident("hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt")
    assert (a.model, a.serial, a.firmware) == ("Crucial_CT512MX100SSD1", "14330CEF1CD1", "MU01")
    assert a.sectors == 1000215216  # LBA48, not the capped LBA28 268435455
    assert (a.logical_block_size, a.physical_block_size) == (512, 4096)
    assert a.trim_supported and a.drat and a.rzat
    s = a.security
    assert s is not None and s.supported and s.frozen and not s.enabled and not s.locked
    assert (s.erase_minutes, s.enhanced_erase_minutes) == (2, 2)
    assert a.sanitize.supported and a.sanitize.block_erase and a.sanitize.crypto_scramble
    assert not a.sanitize.overwrite


def test_wd_blue_whitespace_mangled_parses_on_words() -> None:
    a = ident("hdparm-I_wd-blue-3d-WDS400T2B0A-4T_ssd_not-frozen_WHITESPACE-MANGLED.txt")
    assert a.model == "WDC  WDS400T2B0A-00SM50"
    assert a.serial == "2113CN420743"
    assert a.firmware == "415020WD"
    assert a.sectors == 7814037168
    assert a.size_bytes == 4000787030016
    assert a.trim_supported and a.rzat
    s = a.security
    assert s is not None
    assert (s.supported, s.enabled, s.locked, s.frozen, s.expired, s.enhanced_supported) == (
        True, False, False, False, False, True)
    assert (s.erase_minutes, s.enhanced_erase_minutes) == (2, 2)
    assert a.sanitize.supported and a.sanitize.block_erase and not a.sanitize.crypto_scramble


def test_wd_red_hdd_frozen_504_minutes() -> None:
    a = ident("hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt")
    assert (a.model, a.serial, a.firmware) == (
        "WDC WD40EFRX-68N32N0", "WD-WCC7K4NLX884", "82.00A82")
    assert a.rotation_rpm == 5400
    assert not a.trim_supported
    assert (a.logical_block_size, a.physical_block_size) == (512, 4096)
    s = a.security
    assert s is not None and s.frozen and s.supported and s.enhanced_supported
    assert (s.erase_minutes, s.enhanced_erase_minutes) == (504, 504)
    assert not a.sanitize.supported


def test_cfa_module_without_revision_code_and_drat() -> None:
    a = ident("hdparm-I_M88V29-32g_cfa-satadom_frozen_no-revcode.txt")
    assert a.cfa
    assert (a.model, a.serial, a.firmware) == ("M88V29 32GB", "20211023AA20A0656011", "181019i")
    assert a.sectors == 62533296
    assert a.logical_block_size == a.physical_block_size == 512  # "Logical/Physical" line
    assert a.trim_supported and a.trim_limit_blocks == 1
    assert a.drat and not a.rzat
    s = a.security
    assert s is not None and s.frozen and s.master_password_revision is None
    assert (s.erase_minutes, s.enhanced_erase_minutes) == (4, 4)


def test_usb_bridge_all_zero_identify_is_pass_through_unavailable() -> None:
    with pytest.raises(PassThroughUnavailable) as info:
        ident("hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt")
    assert info.value.error is not None
    assert info.value.error.kind is HdparmErrorKind.BRIDGE_REJECTED
    assert "pass-through" in str(info.value)


def test_more_than_508_minutes_is_a_lower_bound() -> None:
    # The erase line as hdparm prints it when the IDENTIFY field is all ones.
    text = fixture_text("hdparm/hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt").replace(
        "504min for SECURITY ERASE UNIT. 504min for ENHANCED",
        "more than 508min for SECURITY ERASE UNIT. 30min for ENHANCED",
    )
    s = parse_hdparm_identify(text).security
    assert s is not None
    assert s.erase_minutes == 508 and s.erase_minutes_lower_bound
    assert s.enhanced_erase_minutes == 30 and not s.enhanced_erase_minutes_lower_bound


def test_question_mark_supported_line_reads_as_not_supported() -> None:
    text = fixture_text("hdparm/hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt").replace(
        "\t\tsupported\n", "\t(?)\tsupported\n", 1)
    s = parse_hdparm_identify(text).security
    assert s is not None and not s.supported


def test_not_hdparm_output_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_hdparm_identify("hello\nworld\n")


@pytest.mark.parametrize(
    ("name", "frozen", "kind"),
    [
        ("hdparm-error_security-unlock_frozen_fixed-format-sense.txt", None,
         HdparmErrorKind.DRIVE_ABORTED),
        ("hdparm-error_security-unlock_frozen_fixed-format-sense.txt", True,
         HdparmErrorKind.FROZEN),
        ("hdparm-error_security-unlock_usb-enclosure_aborted-command-sense.txt", None,
         HdparmErrorKind.TRANSPORT_ABORTED),
        ("hdparm-error_C_kernel-6.6.44-dsense-regression_wd-red.txt", None,
         HdparmErrorKind.KERNEL_DSENSE_REGRESSION),
        ("hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt", None,
         HdparmErrorKind.BRIDGE_REJECTED),
    ],
)
def test_error_classification(name: str, frozen: bool | None, kind: HdparmErrorKind) -> None:
    err = classify_hdparm_error(fixture_text(f"hdparm/{name}"), frozen=frozen)
    assert err is not None
    assert err.kind is kind
    assert err.explanation


def test_error_details_of_the_frozen_abort() -> None:
    err = classify_hdparm_error(
        fixture_text("hdparm/hdparm-error_security-unlock_frozen_fixed-format-sense.txt"))
    assert err is not None
    assert (err.response_code, err.sense_key, err.asc, err.ascq) == (0x70, 0x05, 0x21, 0x04)
    assert (err.ata_error, err.ata_status) == (0x04, 0x51)


def test_dsense_regression_decodes_success_status() -> None:
    err = classify_hdparm_error(
        fixture_text("hdparm/hdparm-error_C_kernel-6.6.44-dsense-regression_wd-red.txt"))
    assert err is not None
    assert err.sense_key == 0x01 and (err.asc, err.ascq) == (0x00, 0x1D)
    assert err.ata_status == 0x50  # DRDY|DSC: the command succeeded


def test_no_sense_line_is_none() -> None:
    assert classify_hdparm_error("/dev/sda:\n drive state is:  active/idle\n") is None


def test_an_empty_rotation_rate_line_is_no_rotation_not_a_crash() -> None:
    # #28 item 9: "Nominal Media Rotation Rate:" with nothing after it raised IndexError,
    # which discovery did not catch: `ssdbench list` died on that one drive
    text = fixture_text("hdparm/hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt")
    doctored = text.replace("Nominal Media Rotation Rate: Solid State Device",
                            "Nominal Media Rotation Rate:")
    assert doctored != text
    assert parse_hdparm_identify(text).rotation_rpm == 0
    assert parse_hdparm_identify(doctored).rotation_rpm is None
