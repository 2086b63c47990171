"""Parsers of the erase room on real (and clearly marked derived) tool output."""

from __future__ import annotations

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.devices.nvme import (
    current_lbaf,
    parse_id_ctrl_json,
    parse_id_ns_json,
    parse_sanitize_log_json,
)
from ssdbench.erase import erase_timeout_s
from ssdbench.erase.adapter import nvme_caps
from ssdbench.erase.hdparm import IdentifyUnavailable, parse_identify, parse_sanitize_status
from ssdbench.erase.nvme import SSTAT_FAILED, SSTAT_NEVER, SSTAT_OK, SSTAT_RUNNING

from .replay import fixture

# file -> (supported, enabled, locked, frozen, expired, enhanced, normal min, enhanced min)
HDPARM = {
    "hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt": (
        True, False, False, False, False, True, 20, 60),
    "hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt": (
        True, False, False, True, False, True, 2, 2),
    "hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt": (
        True, False, False, True, False, True, 504, 504),
    "hdparm-I_M88V29-32g_cfa-satadom_frozen_no-revcode.txt": (
        True, False, False, True, False, True, 4, 4),
    "hdparm-I_wd-blue-3d-WDS400T2B0A-4T_ssd_not-frozen_WHITESPACE-MANGLED.txt": (
        True, False, False, False, False, True, 2, 2),
    "DERIVED_hdparm-I_apacer-AS340_after-set-pass_enabled.txt": (
        True, True, False, False, False, True, 20, 60),
    "DERIVED_hdparm-I_apacer-AS340_locked-after-power-cycle.txt": (
        True, True, True, False, False, True, 20, 60),
    # the real hdparm against the emulated drive (docs/ata-emulator.md)
    "EMULATED_hdparm-I_ata-emu_locked.txt": (True, True, True, False, False, True, 2, 2),
    "EMULATED_hdparm-I_ata-emu_expired.txt": (True, True, True, False, True, True, 2, 2),
}


@pytest.mark.parametrize("name", sorted(HDPARM))
def test_hdparm_security_states(name: str) -> None:
    info = parse_identify(fixture("hdparm/" + name))
    sec = info.security
    assert sec is not None
    got = (
        sec.supported, sec.enabled, sec.locked, sec.frozen, sec.expired,
        sec.enhanced_supported, sec.erase_minutes, sec.enhanced_erase_minutes,
    )
    assert got == HDPARM[name]
    assert (sec.level == "high") == sec.enabled


def test_hdparm_identity_and_sanitize_features() -> None:
    crucial = parse_identify(fixture("hdparm/hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt"))
    assert crucial.model == "Crucial_CT512MX100SSD1"
    assert crucial.serial == "14330CEF1CD1"
    assert crucial.sectors == 1000215216 and crucial.logical_block_size == 512
    assert crucial.security is not None
    assert crucial.security.sanitize_block and crucial.security.sanitize_crypto
    blue = parse_identify(
        fixture("hdparm/hdparm-I_wd-blue-3d-WDS400T2B0A-4T_ssd_not-frozen_WHITESPACE-MANGLED.txt")
    )
    assert blue.security is not None
    assert blue.security.sanitize_block and not blue.security.sanitize_crypto
    red = parse_identify(fixture("hdparm/hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt"))
    assert red.security is not None and not red.security.sanitize_block


def test_usb_bridge_all_zero_identify_is_refused() -> None:
    with pytest.raises(IdentifyUnavailable, match="USB bridge"):
        parse_identify(fixture("hdparm/hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt"))


def test_hdparm_sanitize_status() -> None:
    running = parse_sanitize_status(fixture("hdparm/DERIVED_hdparm-sanitize-status_in-progress-25.txt"))
    assert running.state == "SD2" and not running.completed_ok and not running.failed
    assert running.fraction == pytest.approx((0x41C2 + 1) / 0xFFFF)
    done = parse_sanitize_status(fixture("hdparm/DERIVED_hdparm-sanitize-status_completed.txt"))
    assert done.state == "SD0" and done.completed_ok and done.fraction is None
    failed = parse_sanitize_status(
        "Issuing SANITIZE_STATUS command\n",
        "SANITIZE failed: Input/output error\nSANITIZE device error reason: "
        "Sanitize command unsuccessful\nDrive in SD3 Sanitize operation failed state\n",
    )
    assert failed.failed
    with pytest.raises(ValueError, match="State"):
        parse_sanitize_status("garbage\n")


def test_erase_timeout_follows_hdparm_rule() -> None:
    apacer = 234441648 * 512
    # enhanced 60 min: 2 x 60 + 60 = 180 min beats capacity (114473 MiB / 30 + 1800 s)
    assert erase_timeout_s(60, apacer) == 180 * 60
    # WD Red 4 TB, 504 min: 1068 min loses to capacity at 30 MiB/s + 30 min
    red = 7814037168 * 512
    assert erase_timeout_s(504, red) == (red // 2**20) // 30 + 1800
    assert erase_timeout_s(508, 0, lower_bound=True) == (508 + 90) * 60
    assert erase_timeout_s(None, 0) == 12 * 3600


def test_nvme_id_ctrl_and_id_ns_from_qemu() -> None:
    ctrl = parse_id_ctrl_json(fixture("qemu-nvme-512/id-ctrl.json"))
    assert ctrl.serial == "SSDB0001" and ctrl.model == "QEMU NVMe Ctrl"
    caps = nvme_caps(ctrl)
    assert caps.format_supported and not caps.sanitize_block
    assert not caps.format_crypto_supported

    def id_ns(name: str) -> tuple[int, int | None, int | None]:
        ns = parse_id_ns_json(fixture(name), nsid=1, name="nvme0n1")
        return ns.lba_format_index, ns.block_size, ns.size_bytes

    assert id_ns("qemu-nvme-512/id-ns-before.json") == (0, 512, 64 * 2**20)
    assert id_ns("qemu-nvme-4kn/id-ns-before.json") == (4, 4096, 64 * 2**20)
    assert id_ns("nvme/DERIVED_id-ns-json_4kn-lbaf1.json")[:2] == (1, 4096)


def test_current_lbaf_uses_high_bits_only_beyond_16_formats() -> None:
    assert current_lbaf(0x01, 1) == 1
    assert current_lbaf(0x10 | 0x02, 7) == 2  # bit 4 is metadata at end of LBA, not index
    assert current_lbaf(0x20 | 0x03, 31) == 0x13
    assert current_lbaf(0x20 | 0x03, 15) == 3


def test_sanitize_log_layouts() -> None:
    parse_sanitize_log = parse_sanitize_log_json
    stuck = parse_sanitize_log(fixture("nvme/DERIVED_sanitize-log-json_intel-660p_block-erase-stuck.json"))
    assert (stuck.sprog, stuck.status, stuck.scdw10) == (655, SSTAT_RUNNING, 2)
    assert stuck.progress_fraction == pytest.approx(655 / 65536)
    done = parse_sanitize_log(fixture("nvme/DERIVED_sanitize-log-json_pm1733_crypto-completed.json"))
    assert (done.status, done.scdw10, done.est_crypto_erase_s) == (SSTAT_OK, 4, 13)
    key = parse_sanitize_log(
        fixture("nvme/DERIVED_sanitize-log-json_pm1733_crypto-completed_status-as-key.json")
    )
    assert key.status == SSTAT_OK
    assert parse_sanitize_log(fixture("nvme/DERIVED_sanitize-log-json_block-erase-seq0.json")).status == SSTAT_NEVER
    assert parse_sanitize_log(fixture("nvme/DERIVED_sanitize-log-json_block-erase-failed.json")).status == SSTAT_FAILED
    # nvme-cli 1.x style: the log at the top level, SSTAT as a plain number
    flat = parse_sanitize_log('{"sprog": 32768, "sstat": 2, "cdw10_info": 4}')
    assert (flat.sprog, flat.status, flat.scdw10) == (32768, SSTAT_RUNNING, 4)
    with pytest.raises(ParseError, match="sprog"):
        parse_sanitize_log('{"nvme0": {"foo": 1}}')
    with pytest.raises(ParseError, match="not JSON"):
        parse_sanitize_log(fixture("qemu-nvme-512/sanitize-log-unsupported.stderr"))
