"""Discovery of a SAS drive from the REAL outputs of sg3_utils 1.46 and smartctl 7.3 against
the emulated SAS drive in QEMU (tests/data/sas-emu/, docs/ata-emulator.md "SAS
personality"): its identity from the kernel's INQUIRY (sysfs, the values sg_inq printed)
and smartctl's SCSI JSON, ``scsi-sanitize`` offered from REPORT SUPPORTED OPERATION CODES,
and the 520-byte drive the kernel shows with capacity 0 listed with its problem line. The
sysfs layout is the real one of a tcm_loop disk (bundle qemu-tcmu-ata-emu)."""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest

from ssdbench.devices import discover
from ssdbench.devices.discover import (
    REFORMAT_KIND,
    REFUSE_NO_METHOD,
    REFUSE_PROTECTED,
    REFUSE_SCSI,
    is_listed,
)
from ssdbench.devices.model import Drive
from ssdbench.devices.scsi import parse_opcodes, parse_readcap
from ssdbench.erase.adapter import target_from_drive
from ssdbench.system import Host

from .test_discover import FakeMachine

SAS = Path(__file__).resolve().parents[2] / "data" / "sas-emu"
BUNDLE = Path(__file__).resolve().parents[2] / "data" / "bundles" / "qemu-tcmu-ata-emu"
DEV = "/dev/sda"
ALL_SANITIZE = ["scsi-sanitize", "scsi-sanitize-block", "scsi-sanitize-crypto",
                "scsi-sanitize-overwrite"]


def capture(name: str) -> str:
    return (SAS / name).read_text(encoding="utf-8")


def tcm_loop_link() -> str:
    """The real sysfs link of a tcm_loop disk (captured in QEMU)."""
    manifest = json.loads((BUNDLE / "manifest.json").read_text())
    link: str = manifest["readlinks"]["/sys/block/sda"]
    return link.replace("block/sda", "block/{n}")


def inquiry() -> tuple[str, str, str, str]:
    """Vendor, product, revision and unit serial number as sg_inq and sg_vpd printed them:
    what the kernel keeps in sysfs (device/vendor, model, rev, vpd_pg80)."""
    inq, sn = capture("sg_inq.txt"), capture("sg_vpd-sn.txt")

    def field(text: str, label: str) -> str:
        found = re.search(rf"{label}: (.*)$", text, re.M)
        assert found, label
        return found.group(1).strip()

    return (field(inq, "Vendor identification"), field(inq, "Product identification"),
            field(inq, "Product revision level"), field(sn, "Unit serial number"))


def sas_machine(*, block: int = 520, opcodes: str | None = "sg_opcodes.txt",
                opcodes_rc: int = 0, cmdline: str = "", vendor: str | None = None,
                removable: int = 0, link: str | None = None,
                readcap: str | None = None) -> FakeMachine:
    """The emulated SAS drive as /dev/sda: 520 bytes a block (capacity 0 in the kernel) or
    512 (after ssdbench's reformat)."""
    m = FakeMachine()
    sectors = 0 if block == 520 else 16 << 20 >> 9
    m.disk("sda", link or tcm_loop_link(), sectors=sectors)
    v, product, rev, serial = inquiry()
    f = m.fs.files
    f["/sys/block/sda/removable"] = f"{removable}\n"
    f["/sys/block/sda/hidden"] = "0\n"
    f["/sys/block/sda/device/vendor"] = f"{vendor or v:<8}\n"
    f["/sys/block/sda/device/model"] = f"{product:<16}\n"
    f["/sys/block/sda/device/rev"] = f"{rev}\n"
    # the Unit Serial Number VPD page as the kernel keeps it: a 4-byte header, then ASCII
    f["/sys/block/sda/device/vpd_pg80"] = f"\x00\x80\x00\x14{serial:<20}"
    if cmdline:
        f["/proc/cmdline"] = cmdline
    # smartctl -j -a of the drive (the -x of discovery adds log pages this one lacks)
    m.runner.add(["smartctl", "-j", "-x", DEV], stdout=capture(
        "smartctl-a.json" if block == 520 else "smartctl-after.json"))
    if opcodes is not None:
        m.runner.add(["sg_opcodes", DEV], stdout=capture(opcodes), returncode=opcodes_rc)
    m.runner.add(["sg_readcap", "-l", DEV],
                 stdout=capture(f"sg_readcap-{block}.txt") if readcap is None else readcap)
    return m


def only_drive(m: FakeMachine, **kw: object) -> Drive:
    drives = discover(m.finish(), ata_passthrough=set(), **kw)  # type: ignore[arg-type]
    assert [d.name for d in drives] == ["sda"]
    return drives[0]


def test_520_byte_sas_drive_is_listed_with_its_problem_and_offered_the_sanitize() -> None:
    m = sas_machine()
    d = only_drive(m)  # listed: not hidden like an empty card reader
    assert (d.transport, d.vendor, d.model, d.serial, d.firmware) == (
        "scsi", "SSDBENCH", "SSDBENCH SAS EMU", "SASEMU0044", "S044")
    assert d.size_bytes == 0 and d.scsi_block_size == 520 and d.needs_scsi_reformat
    assert d.erase_methods == tuple(ALL_SANITIZE) and d.erase_refusal == ()
    assert not d.protected and d.ata is None and not d.ata_passthrough
    problem = next(p for p in d.problems if p.kind == REFORMAT_KIND)
    assert problem.tool == "sg_readcap"
    assert problem.message.startswith(
        "520-byte sectors: reformat to 512 with the erase plan's scsi_reformat_512")
    assert d.smart is not None and d.smart.passed is True and d.smart.percentage_used == 2
    out = d.to_json()
    assert out["scsi_block_size"] == 520 and out["erase_methods"] == ALL_SANITIZE
    assert ("sg_opcodes", DEV) in m.runner.calls and ("sg_readcap", "-l", DEV) in m.runner.calls
    target = target_from_drive(d)  # the erase room's view: a SAS drive, no ATA path
    assert (target.transport, target.serial, target.ata_passthrough) == (
        "scsi", "SASEMU0044", False)


def test_reformatted_drive_has_its_size_and_no_problem_and_no_readcap() -> None:
    m = sas_machine(block=512)
    d = only_drive(m)
    assert d.size_bytes == 16 << 20 and d.scsi_block_size is None
    assert "scsi_block_size" not in d.to_json()
    assert d.erase_methods == tuple(ALL_SANITIZE)
    assert not [p for p in d.problems if p.kind == REFORMAT_KIND]
    assert ("sg_readcap", "-l", DEV) not in m.runner.calls  # the kernel's size is the drive's


def test_a_drive_that_does_not_answer_report_supported_operation_codes_gets_scsi_sanitize(
) -> None:
    """REPORT SUPPORTED OPERATION CODES is optional (SPC-4): the erase tries block, crypto,
    overwrite in turn (erase/scsi.py), so ``scsi-sanitize`` is offered."""
    d = only_drive(sas_machine(opcodes="sg_requests-idle.txt", opcodes_rc=5))
    assert d.erase_methods == ("scsi-sanitize",) and d.erase_refusal == ()


def test_a_drive_that_lists_no_sanitize_is_offered_the_format_and_without_it_none() -> None:
    """The real table without its SANITIZE rows: FORMAT UNIT is its erase (``scsi-format``,
    Clear at most); without the FORMAT UNIT row too, the drive has no firmware erase."""
    rows = "\n".join(line for line in capture("sg_opcodes.txt").splitlines()
                     if not line.startswith(" 48 ")) + "\n"
    assert not parse_opcodes(rows).sanitize and parse_opcodes(rows).format_unit
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=rows)
    d = only_drive(m)
    assert d.erase_methods == ("scsi-format",) and d.erase_refusal == ()
    assert d.to_json()["erase_methods"] == ["scsi-format"]
    bare = "\n".join(line for line in rows.splitlines() if not line.startswith(" 04 ")) + "\n"
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=bare)
    d = only_drive(m)
    assert d.erase_methods == () and d.erase_refusal == (REFUSE_NO_METHOD,)


def test_sg3_utils_missing_is_a_problem_not_a_guess() -> None:
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], returncode=None, outcome="not-found",
                 stderr="sg_opcodes is not installed")
    d = only_drive(m)
    assert d.erase_methods == () and d.erase_refusal == (REFUSE_NO_METHOD,)
    assert any(p.tool == "sg_opcodes" and p.kind == "not-found" for p in d.problems)


@pytest.mark.parametrize("answer", [
    "Opcode\n" + "48 " * 300,  # a line no sg_opcodes prints
    "garbage \x1b[31m without a table",
])
def test_an_answer_that_is_not_sg_opcodes_output_is_a_parse_problem(answer: str) -> None:
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=answer)
    d = only_drive(m)
    assert d.erase_methods == ()
    assert any(p.tool == "sg_opcodes" and p.kind == "parse" for p in d.problems)


def test_sg_readcap_that_makes_no_sense_leaves_the_drive_listed_without_a_guess() -> None:
    d = only_drive(sas_machine(
        readcap=capture("sg_readcap-520.txt").replace("=520 bytes", "=0 bytes")))
    assert d.scsi_block_size is None
    assert any(p.tool == "sg_readcap" and p.kind == "parse" for p in d.problems)


def test_the_protected_boot_disk_is_never_offered_an_erase_whatever_it_reports() -> None:
    """Named as the boot medium (by its serial, as the kernel command line may): no
    SANITIZE offered, and sg_opcodes is not even asked."""
    m = sas_machine(cmdline="console=tty1 ssdbench.boot=SASEMU0044\n")
    d = only_drive(m)
    assert d.protected and "boot-medium" in d.protect_reasons
    assert d.erase_methods == () and REFUSE_PROTECTED in d.erase_refusal
    assert ("sg_opcodes", DEV) not in m.runner.calls


def test_a_sata_drive_behind_sat_keeps_the_ata_path_refusal() -> None:
    """INQUIRY vendor "ATA" (SAT): a SATA drive behind a SAS/SCSI layer. No SCSI SANITIZE
    through the translation: the ATA pass-through opt-in stays its way."""
    m = sas_machine(vendor="ATA", opcodes=None)
    d = only_drive(m, include_all=True)
    assert d.erase_methods == () and d.erase_refusal == (REFUSE_SCSI,)
    assert ("sg_opcodes", DEV) not in m.runner.calls


def test_capacity_0_is_listed_only_for_a_fixed_scsi_disk_not_an_empty_card_reader() -> None:
    usb = ("../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host6/target6:0:0/6:0:0:0"
           "/block/{n}")
    for removable, link, listed in ((0, None, True), (1, None, False), (0, usb, False)):
        m = sas_machine(removable=removable, link=link)
        host: Host = m.finish()
        assert is_listed(host, "sda") is listed, (removable, link)
        assert is_listed(host, "sda", include_all=True)


def test_the_captures_parse_to_what_the_drive_was() -> None:
    assert parse_readcap(capture("sg_readcap-520.txt")).block_size == 520
    assert not parse_readcap(capture("sg_readcap-520.txt")).kernel_usable
    assert parse_readcap(capture("sg_readcap-512.txt")).kernel_usable
    assert parse_opcodes(capture("sg_opcodes.txt")).sanitize_actions == {1, 2, 3, 0x1F}


def test_the_support_bundle_of_the_520_byte_drive_replays_to_its_list() -> None:
    """`python -m ssdbench.commands.bundle` in the QEMU guest with the 520-byte drive
    (tests/data/sas-emu/bundle-520): the real sysfs of a capacity-0 tcm_loop disk, the real
    sg_opcodes, sg_readcap and smartctl -j -x; `ssdbench list` lists it (not hidden) with
    scsi-sanitize and its problem line."""
    from ssdbench.devices.bundle import load_bundle

    bundle = load_bundle(SAS / "bundle-520")
    drives = discover(Host(bundle.runner, bundle.fs), ata_passthrough=set())
    assert [d.to_json() for d in drives] == json.loads((SAS / "bundle-520/list.json").read_text())
    assert bundle.fs.unrecorded == []
    (d,) = drives
    assert (d.serial, d.size_bytes, d.scsi_block_size) == ("SASEMU0044", 0, 520)
    assert d.erase_methods == tuple(ALL_SANITIZE) and d.erase_refusal == ()
    assert [p.kind for p in d.problems] == [REFORMAT_KIND]
    assert d.smart is not None and d.smart.passed is True
