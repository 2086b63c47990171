"""nvme-cli outputs (tests/data/fixtures/nvme): id-ctrl, list -o json, sanitize-log."""

from __future__ import annotations

import json

import pytest

from ssdbench.devices.model import ParseError
from ssdbench.devices.nvme import (
    parse_id_ctrl_json,
    parse_id_ctrl_text,
    parse_id_ns_json,
    parse_nvme_list_json,
    parse_sanitize_log_text,
)

from .fixtures import fixture_text


def test_pm1733_id_ctrl_h_annotated() -> None:
    c = parse_id_ctrl_text(
        fixture_text("nvme/nvme-id-ctrl-H_samsung-PM1733-MZWLJ7T6HALA-7.68T_annotated.txt"))
    assert c.model == "SAMSUNG MZWLJ7T6HALA-00AU3"  # the "  # model number" note dropped
    assert c.serial == "S5RTNC0T104269"
    assert c.firmware == "EPK9CR5Q"
    assert (c.oacs, c.sanicap, c.oncs, c.nn) == (0x5F, 0x3, 0x7F, 32)
    assert c.tnvmcap == 7_681_501_126_656
    assert c.unvmcap == 1_084_431_360_000
    assert c.cntlid == 0x41 and c.ver == 0x10300
    assert c.format_supported and c.ns_management_supported
    assert c.sanitize_block and c.sanitize_crypto and not c.sanitize_overwrite
    assert c.dsm_supported


def test_pc401_id_ctrl_nvmecli_1x_plain() -> None:
    c = parse_id_ctrl_text(fixture_text("nvme/nvme-id-ctrl_skhynix-PC401-256G_nvmecli1x.txt"))
    assert c.model == "PC401 NVMe SK hynix 256GB"
    assert c.serial == "MS92N171312902J0N"
    assert c.firmware == "80007E00"
    assert (c.oacs, c.sanicap, c.fna, c.oncs, c.nn) == (0x17, 0, 0, 0x1F, 1)
    assert c.ver == 0x10200  # 1.x prints hex without 0x
    assert c.format_supported and not c.ns_management_supported
    assert not (c.sanitize_block or c.sanitize_crypto or c.sanitize_overwrite)
    assert not c.crypto_erase_supported
    assert c.dsm_supported and c.broadcast_nsid_format_supported


def test_fna_bits_decoded() -> None:
    base = {"sn": "S", "mn": "M", "fr": "F", "oacs": 2, "sanicap": 0x60000007, "oncs": 0}
    c = parse_id_ctrl_json(json.dumps({**base, "fna": 0x4}))
    assert c.crypto_erase_supported and not c.format_all_namespaces
    assert c.broadcast_nsid_format_supported
    assert c.sanitize_overwrite and c.sanitize_no_deallocate_inhibited
    c = parse_id_ctrl_json(json.dumps({**base, "fna": 0xB}))
    assert c.format_all_namespaces and c.secure_erase_all_namespaces
    assert not c.crypto_erase_supported and not c.broadcast_nsid_format_supported


def test_id_ctrl_json_errors_name_what_is_missing() -> None:
    with pytest.raises(ParseError, match="missing oacs"):
        parse_id_ctrl_json('{"sn": "x", "mn": "y", "fr": "z"}')
    with pytest.raises(ParseError, match="not JSON"):
        parse_id_ctrl_json("NVMe status: INVALID_OPCODE")


def test_id_ns_json_block_size_and_dlfeat() -> None:
    ns = parse_id_ns_json(json.dumps({
        "nsze": 1000, "ncap": 1000, "nuse": 10, "flbas": 1, "dlfeat": 9,
        "lbafs": [{"ms": 0, "ds": 9, "rp": 0}, {"ms": 0, "ds": 12, "rp": 0}],
    }), nsid=1, name="nvme0n1")
    assert ns.block_size == 4096 and ns.size_bytes == 4096 * 1000
    assert ns.dlfeat_read_zeroes


def test_list_v1x_firecuda_two_drives() -> None:
    entries = parse_nvme_list_json(
        fixture_text("nvme/nvme-list-json_v1x-simple_seagate-firecuda530-x2.json"))
    assert [e.path for e in entries] == ["/dev/nvme0n1", "/dev/nvme1n1"]
    e = entries[0]
    assert e.model == "Seagate FireCuda 530 ZP4000GM30023"
    assert e.serial == "XXX00YYY" and entries[1].serial == "XXX01YYY"
    assert e.firmware == "SU6SM001"
    assert e.size_bytes == 4000787030016 and not e.size_recomputed
    assert e.sector_size == 512 and e.maximum_lba == 7814037168
    assert e.product.startswith("Non-Volatile memory controller")


def test_list_v1x_fabrics_target() -> None:
    (e,) = parse_nvme_list_json(
        fixture_text("nvme/nvme-list-json_v1x-simple_linux-nvmet-fabrics-target.json"))
    assert (e.path, e.model, e.serial, e.firmware) == (
        "/dev/nvme1n1", "Linux", "eb4695bf0da275a3", "4.18.0-1")
    assert e.product == "NULL"
    assert e.size_bytes == 268435456000


def test_list_early_2x_negative_sizes_are_not_used() -> None:
    # nvme-cli 2.x before the uint32 JSON fix: PhysicalSize/UsedBytes -2147483648 and a
    # MaximumLBA wrapped to 32 bits (DERIVED from the real FireCuda 4 TB output)
    entries = parse_nvme_list_json(fixture_text(
        "nvme/DERIVED_nvme-list-json_v2x-early_seagate-firecuda530-x2_negative-sizes.json"))
    assert [e.path for e in entries] == ["/dev/nvme0n1", "/dev/nvme1n1"]
    for e in entries:
        assert e.serial.startswith("XXX0") and e.model.startswith("Seagate FireCuda 530")
        assert (e.size_bytes, e.used_bytes, e.maximum_lba) == (None, None, None)
        assert e.sector_size == 512 and not e.size_recomputed
        assert "-2147483648" in e.size_problem and "-775897424" in e.size_problem


def test_list_wrapped_positive_maximum_lba_is_not_used_either() -> None:
    # a 7.68 TB PM1733 (15002931888 LBAs) wraps to MaximumLBA 2118030000: positive and
    # plausible-looking (1.08 TB), but wrong; the negative PhysicalSize beside it gives it away
    (e,) = parse_nvme_list_json(fixture_text(
        "nvme/DERIVED_nvme-list-json_v2x-early_samsung-PM1733-7.68T_wrapped-maxlba.json"))
    assert e.serial == "S5RTNC0T104269"
    assert e.size_bytes is None and e.maximum_lba is None and e.used_bytes is None
    assert "2118030000" in e.size_problem


def test_list_missing_size_is_recomputed_and_overflowed_values_are_not_sizes() -> None:
    text = fixture_text("nvme/nvme-list-json_v1x-simple_seagate-firecuda530-x2.json")
    obj = json.loads(text)
    del obj["Devices"][0]["PhysicalSize"]
    e = parse_nvme_list_json(json.dumps(obj))[0]
    assert e.size_recomputed and e.size_bytes == 7814037168 * 512 and not e.size_problem
    # the same -2147483648 printed as an unsigned 64-bit number: beyond any drive (1 EiB)
    obj = json.loads(text)
    obj["Devices"][0]["PhysicalSize"] = 2**64 - 2**31
    e = parse_nvme_list_json(json.dumps(obj))[0]
    assert e.size_bytes is None and e.size_problem
    # a negative MaximumLBA beside a missing size: no size, not a negative one
    obj = json.loads(text)
    del obj["Devices"][0]["PhysicalSize"]
    obj["Devices"][0]["MaximumLBA"] = -775897424
    e = parse_nvme_list_json(json.dumps(obj))[0]
    assert e.size_bytes is None and e.maximum_lba is None and "MaximumLBA" in e.size_problem
    # the real, sane outputs are untouched
    assert all(not e.size_problem for e in parse_nvme_list_json(text))


def test_id_ctrl_text_with_a_missing_line_parses_what_is_there() -> None:
    c = parse_id_ctrl_text(fixture_text(
        "nvme/DERIVED_nvme-id-ctrl_skhynix-PC401-256G_nvmecli1x_no-oacs-line.txt"))
    assert (c.model, c.serial, c.firmware) == (
        "PC401 NVMe SK hynix 256GB", "MS92N171312902J0N", "80007E00")
    assert (c.sanicap, c.oncs, c.nn) == (0, 0x1F, 1)  # the lines that are there
    assert c.missing == ("oacs",)
    assert c.oacs == 0 and not c.format_supported  # no oacs: no format on a guess
    full = parse_id_ctrl_text(fixture_text("nvme/nvme-id-ctrl_skhynix-PC401-256G_nvmecli1x.txt"))
    assert full.missing == () and full.format_supported


def test_id_ctrl_text_cut_short_keeps_the_identity() -> None:
    # the real PM1733 -H output cut after its first lines (a capture pasted half)
    text = fixture_text("nvme/nvme-id-ctrl-H_samsung-PM1733-MZWLJ7T6HALA-7.68T_annotated.txt")
    head = "\n".join(text.splitlines()[:6]) + "\n"
    assert "oacs" not in head and "sn " in head
    c = parse_id_ctrl_text(head)
    assert (c.serial, c.model) == ("S5RTNC0T104269", "SAMSUNG MZWLJ7T6HALA-00AU3")
    assert "oacs" in c.missing and "tnvmcap" in c.missing and c.tnvmcap is None
    assert not (c.format_supported or c.sanitize_block or c.sanitize_crypto)
    with pytest.raises(ParseError, match="neither an 'sn' nor an 'mn'"):
        parse_id_ctrl_text("NVMe status: INVALID_OPCODE\n")


def test_id_ns_negative_nsze_is_an_error_not_a_size() -> None:
    with pytest.raises(ParseError, match="negative nsze"):
        parse_id_ns_json(json.dumps({"nsze": -1551816016, "flbas": 0,
                                     "lbafs": [{"ms": 0, "ds": 9, "rp": 0}]}),
                         nsid=1, name="nvme0n1")


def test_list_nested_tree_of_2_11() -> None:
    # The nested layout nvme-cli 2.11-2.12 print (Devices -> Subsystems -> Controllers ->
    # Namespaces), built from the FireCuda values: no such real capture is available.
    tree = {"Devices": [{"HostNQN": "nqn.2014-08.org.nvmexpress:uuid:x", "HostID": "x",
        "Subsystems": [{"Subsystem": "nvme-subsys0", "SubsystemNQN": "nqn.x",
            "Controllers": [{"Controller": "nvme0", "Cntlid": "1",
                "SerialNumber": "XXX00YYY", "ModelNumber": "Seagate FireCuda 530",
                "Firmware": "SU6SM001", "Transport": "pcie", "Address": "0000:01:00.0",
                "Namespaces": [{"NameSpace": "nvme0n1", "Generic": "ng0n1", "NSID": 1,
                    "UsedBytes": 4000787030016, "MaximumLBA": 7814037168,
                    "PhysicalSize": 4000787030016, "SectorSize": 512}],
                "Paths": []}],
            "Namespaces": []}]}]}
    (e,) = parse_nvme_list_json(json.dumps(tree))
    assert (e.path, e.nsid, e.serial, e.model, e.transport) == (
        "/dev/nvme0n1", 1, "XXX00YYY", "Seagate FireCuda 530", "pcie")
    assert e.size_bytes == 4000787030016


def test_list_empty_output_means_no_devices() -> None:
    assert parse_nvme_list_json("") == []
    assert parse_nvme_list_json('{"Devices": []}') == []


def test_sanitize_log_pm1733_crypto_completed() -> None:
    log = parse_sanitize_log_text(
        fixture_text("nvme/nvme-sanitize-log-H_samsung-PM1733_crypto-erase-completed.txt"))
    assert (log.sprog, log.sstat, log.scdw10) == (65535, 1, 4)
    assert log.status == 1 and not log.in_progress
    assert log.sanitize_action == 4  # crypto erase
    assert (log.est_overwrite_s, log.est_block_erase_s, log.est_crypto_erase_s) == (None, 90, 13)


def test_sanitize_log_660p_block_erase_stuck() -> None:
    log = parse_sanitize_log_text(
        fixture_text("nvme/nvme-sanitize-log_v2x_intel-660p-SSDPEKNW010T8_block-erase-stuck.txt"))
    assert log.in_progress and log.sprog == 655
    assert round(log.progress_fraction * 100) == 1
    assert log.sanitize_action == 2
    assert log.est_block_erase_s is None and log.est_crypto_erase_s is None


def test_create_ns_transcript_is_loaded_verbatim() -> None:
    text = fixture_text("nvme/nvme-create-ns+attach-ns_transcript_samsung-PM1733.txt")
    assert text.startswith("$ sudo nvme create-ns /dev/nvme0 --nsze=6104741")
    assert "create-ns: Success, created nsid:1" in text
    assert "attach-ns: Success, nsid:1" in text


def test_list_wrapped_positive_size_is_checked_against_maximum_lba() -> None:
    # early nvme-cli 2.x wraps 64-bit values to 32 bits: the real FireCuda 4 TB size
    # (4000787030016) printed unsigned is 2172477440, positive and below 1 EiB, so the
    # sanity check alone passed it; MaximumLBA x SectorSize (7814037168 x 512) disagrees
    obj = json.loads(fixture_text("nvme/nvme-list-json_v1x-simple_seagate-firecuda530-x2.json"))
    obj["Devices"][0]["PhysicalSize"] = 4000787030016 % 2**32
    e = parse_nvme_list_json(json.dumps(obj))[0]
    assert e.size_bytes is None and e.maximum_lba is None
    assert "2172477440" in e.size_problem and "MaximumLBA" in e.size_problem
    # the second drive, printed right, is untouched
    assert parse_nvme_list_json(json.dumps(obj))[1].size_bytes == 4000787030016


def test_id_ctrl_without_oncs_leaves_trim_unknown_not_no() -> None:
    # a capture cut before the oncs line: Dataset Management (TRIM) is not known, so the
    # drive is not reported as without TRIM (discovery then follows the kernel's discard)
    text = fixture_text("nvme/nvme-id-ctrl_skhynix-PC401-256G_nvmecli1x.txt")
    cut = "\n".join(line for line in text.splitlines() if not line.startswith("oncs"))
    c = parse_id_ctrl_text(cut)
    assert "oncs" in c.missing
    assert c.dsm_supported is None and c.write_zeroes_supported is None
    assert c.decoded()["dsm"] is None
    full = parse_id_ctrl_text(text)
    assert full.dsm_supported is True and full.decoded()["dsm"] is True
    obj = json.loads(json.dumps({"sn": "S", "mn": "M", "fr": "F", "oacs": 0}))
    assert parse_id_ctrl_json(json.dumps(obj)).dsm_supported is None
    obj["oncs"] = 0
    assert parse_id_ctrl_json(json.dumps(obj)).dsm_supported is False
