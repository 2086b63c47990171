"""The emulated drive's SAS personality (simdrive/ata/sas.py) on the host, no QEMU: the bytes
sg3_utils and smartctl read (test_sas_emu_qemu.py runs the real tools against it)."""

from __future__ import annotations

import json
import struct
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from simdrive.ata.drive import AtaDrive, Config
from simdrive.ata.sas import (
    BLOCK_SIZES,
    ILLEGAL_REQUEST,
    MEDIUM_ERROR,
    NOT_READY,
    SasTarget,
)
from simdrive.ata.tcmu import CHECK_CONDITION, GOOD, Reply
from ssdbench.grade.scsi import is_scsi, parse_scsi_health

SIZE = 1 << 20


def new(tmp: Path, **cfg: object) -> tuple[AtaDrive, SasTarget]:
    base: dict[str, object] = {"personality": "sas", "size_bytes": SIZE,
                               "sanitize_seconds": 0.0, "format_seconds": 0.0}
    drive = AtaDrive.create(tmp / "drive", Config(**{**base, **cfg}))  # type: ignore[arg-type]
    return drive, SasTarget(drive)


def cdb(*b: int, length: int = 0) -> bytes:
    return bytes(b).ljust(length or len(b), b"\0")


def key(reply: Reply) -> tuple[int, int, int]:
    assert reply.status == CHECK_CONDITION, reply
    s = reply.sense
    return s[2] & 0x0F, s[12], s[13]


def request_sense(t: SasTarget, desc: bool = False) -> bytes:
    reply = t(cdb(0x03, 1 if desc else 0, 0, 0, 252, 0), b"")
    assert reply.status == GOOD
    return reply.data


def read_capacity16(t: SasTarget) -> tuple[int, int, int]:
    data = t(cdb(0x9E, 0x10, length=16)[:13] + bytes([32, 0, 0]), b"").data
    last, size = struct.unpack_from(">QI", data)
    return last + 1, size, data[12]


def mode_sense10(t: SasTarget, page: int = 0x01, dbd: bool = False) -> bytes:
    return t(cdb(0x5A, 0x08 if dbd else 0, page, 0, 0, 0, 0, 0, 252, 0), b"").data


def mode_select_block_length(t: SasTarget, size: int) -> Reply:
    """What sg_format --size sends: MODE SENSE's answer with the block descriptor's count
    zeroed (the most the new size allows), the new length, the page's PS bit cleared."""
    data = bytearray(mode_sense10(t))
    data[0:4] = bytes(4)
    data[8:12] = bytes(4)
    data[13:16] = size.to_bytes(3, "big")
    data[16] &= 0x7F
    return t(cdb(0x55, 0x11, 0, 0, 0, 0, 0, 0, len(data), 0), bytes(data))


def format_unit(t: SasTarget, immediate: bool = True, fmtpinfo: int = 0) -> Reply:
    return t(cdb(0x04, (fmtpinfo << 6) | 0x18, 0, 0, 0, 0),
             bytes([0, 0x02 if immediate else 0, 0, 0]))


def sanitize(t: SasTarget, action: int, data: bytes = b"", ause: bool = False) -> Reply:
    return t(cdb(0x48, 0x80 | (0x20 if ause else 0) | action, 0, 0, 0, 0, 0,
                 len(data) >> 8, len(data) & 0xFF, 0), data)


def read(t: SasTarget, lba: int, count: int) -> Reply:
    return t(cdb(0x88, 0, *lba.to_bytes(8, "big"), *count.to_bytes(4, "big"), 0, 0), b"")


def write(t: SasTarget, lba: int, data: bytes) -> Reply:
    count = len(data) // t.block_size
    return t(cdb(0x8A, 0, *lba.to_bytes(8, "big"), *count.to_bytes(4, "big"), 0, 0), data)


def until(done: Callable[[], bool], timeout_s: float = 30.0) -> None:
    """Poll the emulated drive until ``done()`` (its operation runs on the wall clock)."""
    deadline = time.monotonic() + timeout_s
    while not done():
        assert time.monotonic() < deadline, "the emulated drive's operation never ended"
        time.sleep(0.02)

def test_inquiry_and_vpd_pages(tmp_path: Path) -> None:
    _, t = new(tmp_path, serial="SAS123", model="SSDBENCH SAS EMU", firmware="S044")
    std = t(cdb(0x12, 0, 0, 0, 96, 0), b"").data
    assert std[0] == 0 and std[2] == 0x06 and std[5] & 1  # disk, SPC-4, PROTECT
    assert std[8:16] == b"SSDBENCH" and std[16:32] == b"SSDBENCH SAS EMU" and std[32:36] == b"S044"
    vpd = {p: t(cdb(0x12, 1, p, 0, 255, 0), b"").data for p in (0x00, 0x80, 0x83, 0xB0, 0xB1)}
    assert list(vpd[0x00][4:]) == [0x00, 0x80, 0x83, 0xB0, 0xB1, 0xB2]
    assert vpd[0x80][4:].rstrip() == b"SAS123"
    di = vpd[0x83]
    assert di[4:8] == bytes([0x01, 0x03, 0x00, 0x08]) and di[8] >> 4 == 5  # NAA 5, the LU
    assert di[16:18] == bytes([0x61, 0x93])  # the target port: SAS, PIV, association 1
    assert int.from_bytes(vpd[0xB1][4:6], "big") == 1  # non-rotating
    assert struct.unpack_from(">I", vpd[0xB0], 8)[0] == (1 << 20) // 512  # maximum transfer
    assert key(t(cdb(0x12, 1, 0x89, 0, 255, 0), b"")) == (ILLEGAL_REQUEST, 0x24, 0)
    assert key(t(cdb(0x12, 0, 0x80, 0, 255, 0), b"")) == (ILLEGAL_REQUEST, 0x24, 0)


@pytest.mark.parametrize("bad", [
    b"\x12",  # INQUIRY cut to its opcode
    cdb(0x12, 0x02, 0, 0, 96, 0),  # CMDDT
    cdb(0x48, 0x04, length=10),  # SANITIZE service action 4
    cdb(0x48, 0x02, 0, 0, 0, 0, 0, 0, 8, 0),  # block erase with a parameter list
    cdb(0x4D, 0, 0x58, 0, 0, 0, 0, 1, 0, 0),  # LOG SENSE of a page it has not (18h)
    cdb(0x04, 0x40, length=6),  # FORMAT UNIT FMTPINFO 01b
    cdb(0x37, 0, 0x09, length=10),  # READ DEFECT DATA, address format 1
    cdb(0x9E, 0x11, length=16),  # SERVICE ACTION IN(16) 11h
    cdb(0xA3, 0x0C, 0x05, length=12),  # REPORT SUPPORTED OPERATION CODES option 5
])
def test_a_malformed_cdb_is_invalid_field_in_cdb_never_a_crash(tmp_path: Path,
                                                                bad: bytes) -> None:
    _, t = new(tmp_path)
    assert key(t(bad, b"")) == (ILLEGAL_REQUEST, 0x24, 0x00)


def test_an_unknown_opcode_is_invalid_command_operation_code(tmp_path: Path) -> None:
    _, t = new(tmp_path)
    assert key(t(cdb(0x85, length=16), b"")) == (ILLEGAL_REQUEST, 0x20, 0x00)  # no SAT here


def test_a_520_byte_drive_reformatted_to_512_with_progress(tmp_path: Path) -> None:
    drive, t = new(tmp_path, block_size=520, format_seconds=0.3)
    assert read_capacity16(t) == (SIZE // 520, 520, 0)
    bd = mode_sense10(t)
    assert int.from_bytes(bd[6:8], "big") == 8 and int.from_bytes(bd[13:16], "big") == 520
    assert mode_sense10(t, dbd=True)[6:8] == b"\0\0"  # DBD: no block descriptor
    assert write(t, 3, b"x" * 520).status == GOOD
    assert mode_select_block_length(t, 512).status == GOOD
    assert format_unit(t).status == GOOD
    s = request_sense(t)
    assert (s[2], s[12], s[13]) == (NOT_READY, 0x04, 0x04) and s[15] & 0x80  # SKSV
    assert key(read(t, 0, 1)) == (NOT_READY, 0x04, 0x04)
    until(lambda: request_sense(t)[2] == 0)  # the format's 0.3 s, by the drive's clock
    assert request_sense(t)[2] == 0 and request_sense(t)[15] == 0  # done: no progress
    assert read_capacity16(t) == (SIZE // 512, 512, 0)
    assert read(t, 0, 8).data == bytes(8 * 512)  # the format zeroed the medium
    assert drive.nv.block_size == 512
    again = SasTarget(AtaDrive(drive.folder))  # a power cycle keeps the new format
    assert read_capacity16(again)[:2] == (SIZE // 512, 512)


@pytest.mark.parametrize("size", [4096, 528])
def test_format_to_other_sizes_and_one_it_refuses(tmp_path: Path, size: int) -> None:
    _, t = new(tmp_path)
    assert mode_select_block_length(t, size).status == GOOD
    assert format_unit(t, immediate=False).status == GOOD
    assert read_capacity16(t)[:2] == (SIZE // size, size)
    assert key(mode_select_block_length(t, 1000)) == (ILLEGAL_REQUEST, 0x26, 0x00)


def test_format_with_protection_information_is_reported(tmp_path: Path) -> None:
    _, t = new(tmp_path)
    assert format_unit(t, immediate=False, fmtpinfo=2).status == GOOD
    assert read_capacity16(t)[2] == 0x01  # PROT_EN, P_TYPE 0: type 1
    assert format_unit(t, immediate=False).status == GOOD
    assert read_capacity16(t)[2] == 0


@pytest.mark.parametrize(("action", "data", "expect"), [
    (0x02, b"", bytes(520)),  # block erase: zeros
    (0x01, bytes([0x01, 0, 0, 4]) + b"SSDB", (b"SSDB" * 130)),  # overwrite, one pass
    (0x01, bytes([0x82, 0, 0, 1]) + b"\x0f", b"\xf0" * 520),  # two passes, inverted
])
def test_sanitize_erases_with_progress_and_refuses_media_access_meanwhile(
        tmp_path: Path, action: int, data: bytes, expect: bytes) -> None:
    _, t = new(tmp_path, block_size=520, sanitize_seconds=0.3)
    write(t, 7, b"secret".ljust(520, b"!"))
    assert sanitize(t, action, data).status == GOOD
    s = request_sense(t, desc=True)  # descriptor sense: the sense-key-specific descriptor
    assert (s[0], s[1], s[2], s[3]) == (0x72, NOT_READY, 0x04, 0x1B)
    assert s[8:10] == bytes([0x02, 0x06]) and s[12] & 0x80
    assert key(read(t, 7, 1)) == (NOT_READY, 0x04, 0x1B)
    assert key(t(cdb(0x00, length=6), b"")) == (NOT_READY, 0x04, 0x1B)  # TEST UNIT READY
    assert key(sanitize(t, 0x02)) == (NOT_READY, 0x04, 0x1B)  # one at a time
    until(lambda: read(t, 7, 1).status == GOOD)  # the sanitize's 0.3 s
    assert read(t, 7, 1).data == expect


def test_crypto_erase_scrambles(tmp_path: Path) -> None:
    _, t = new(tmp_path)
    write(t, 0, b"secret".ljust(512, b"\0"))
    assert sanitize(t, 0x03).status == GOOD
    after = read(t, 0, 1).data
    assert b"secret" not in after and after != bytes(512)


def test_sanitize_power_cut_resumes_at_power_on(tmp_path: Path) -> None:
    drive, t = new(tmp_path, sanitize_seconds=30.0)
    assert sanitize(t, 0x02).status == GOOD
    again = SasTarget(AtaDrive(drive.folder))  # the next boot
    assert key(read(again, 0, 1)) == (NOT_READY, 0x04, 0x1B)


def test_failed_sanitize_is_failure_mode_until_exit_with_ause(tmp_path: Path) -> None:
    _, t = new(tmp_path, failing_sanitize=["block"])
    assert sanitize(t, 0x02).status == GOOD  # completes at once, in failure
    assert key(read(t, 0, 1)) == (MEDIUM_ERROR, 0x31, 0x03)
    assert request_sense(t)[12:14] == bytes([0x31, 0x03])
    assert key(sanitize(t, 0x1F)) == (ILLEGAL_REQUEST, 0x24, 0)  # the failed one had no AUSE
    assert sanitize(t, 0x02, ause=True).status == GOOD  # fails again, with AUSE
    assert sanitize(t, 0x1F).status == GOOD
    assert read(t, 0, 1).status == GOOD
    assert sanitize(t, 0x02, ause=True).status == GOOD
    assert sanitize(t, 0x03).status == GOOD  # a sanitize that works also ends failure mode
    assert read(t, 0, 1).status == GOOD


def test_unsupported_sanitize_is_refused_and_not_reported(tmp_path: Path) -> None:
    _, t = new(tmp_path, unsupported_sanitize=["block"])
    assert key(sanitize(t, 0x02)) == (ILLEGAL_REQUEST, 0x24, 0)
    one = t(cdb(0xA3, 0x0C, 0x02, 0x48, 0x00, 0x02, 0, 0, 1, 0, 0, 0), b"").data
    assert one[1] & 0x07 == 0x01  # not supported
    one = t(cdb(0xA3, 0x0C, 0x02, 0x48, 0x00, 0x03, 0, 0, 1, 0, 0, 0), b"").data
    assert one[1] & 0x07 == 0x03 and int.from_bytes(one[2:4], "big") == 10
    every = t(cdb(0xA3, 0x0C, 0x00, 0, 0, 0, 0, 0, 4, 0, 0, 0), b"").data
    descs = [every[4 + i : 12 + i] for i in range(0, len(every) - 4, 8)]
    sanitize_actions = {int.from_bytes(d[2:4], "big") for d in descs if d[0] == 0x48}
    assert sanitize_actions == {0x01, 0x03, 0x1F}


def test_a_drive_without_sanitize_lists_none_and_refuses_the_opcode(tmp_path: Path) -> None:
    """``sanitize = False`` (older SAS drives): REPORT SUPPORTED OPERATION CODES lists no
    SANITIZE, SANITIZE is INVALID COMMAND OPERATION CODE, FORMAT UNIT stays and zeroes
    every block."""
    _, t = new(tmp_path, sanitize=False)
    assert key(sanitize(t, 0x02)) == (ILLEGAL_REQUEST, 0x20, 0x00)
    assert key(t(cdb(0x48, 0x1F, 0, 0, 0, 0, 0, 0, 0, 0), b"")) == (ILLEGAL_REQUEST, 0x20, 0)
    every = t(cdb(0xA3, 0x0C, 0x00, 0, 0, 0, 0, 0, 4, 0, 0, 0), b"").data
    descs = [every[4 + i : 12 + i] for i in range(0, len(every) - 4, 8)]
    assert not [d for d in descs if d[0] == 0x48] and [d for d in descs if d[0] == 0x04]
    for action in (0x01, 0x02, 0x03):  # one opcode and service action: not supported
        one = t(cdb(0xA3, 0x0C, 0x02, 0x48, 0x00, action, 0, 0, 1, 0, 0, 0), b"").data
        assert one[1] & 0x07 == 0x01, action
    blocks = SIZE // 512
    for lba in (0, blocks // 2, blocks - 1):
        assert write(t, lba, b"M" * 512).status == GOOD
    assert format_unit(t, immediate=False).status == GOOD
    assert read_capacity16(t) == (blocks, 512, 0)  # the same size: only re-initialized
    assert read(t, 0, blocks).data == bytes(SIZE)  # every block zeros


def test_background_scan_results_page(tmp_path: Path) -> None:
    """Log page 15h, what smartctl -x reads (-l background; a drive without it sets
    smartctl's exit bit 2): the status parameter, 12 bytes, the power-on minutes."""
    _, t = new(tmp_path, smart="worn")
    (status,) = log_page(t, 0x15).values()
    assert len(status) == 12
    assert int.from_bytes(status[0:4], "big") == 46000 * 60 and status[5] == 0


def log_page(t: SasTarget, page: int) -> dict[int, bytes]:
    data = t(cdb(0x4D, 0, 0x40 | page, 0, 0, 0, 0, 0x10, 0, 0), b"").data
    assert data[0] == page
    params, off = {}, 4
    while off + 4 <= len(data):
        n = data[off + 3]
        params[int.from_bytes(data[off : off + 2], "big")] = data[off + 4 : off + 4 + n]
        off += 4 + n
    return params


@pytest.mark.parametrize(("profile", "used", "uncorrected", "ie", "defects"), [
    ("healthy", 2, 0, (0, 0), 0), ("worn", 97, 212, (0x5D, 0x00), 1520)])
def test_log_pages_of_each_profile(tmp_path: Path, profile: str, used: int, uncorrected: int,
                                   ie: tuple[int, int], defects: int) -> None:
    _, t = new(tmp_path, smart=profile)
    assert set(t(cdb(0x4D, 0, 0x40, 0, 0, 0, 0, 0, 64, 0), b"").data[4:]) == {
        0x00, 0x02, 0x03, 0x06, 0x0D, 0x10, 0x11, 0x15, 0x2F}
    assert log_page(t, 0x11)[1][3] == used
    assert int.from_bytes(log_page(t, 0x03)[6], "big") == uncorrected
    assert tuple(log_page(t, 0x2F)[0][:2]) == ie
    assert log_page(t, 0x0D)[0][1] > 0
    defect = t(cdb(0x37, 0, 0x0C, 0, 0, 0, 0, 0, 4, 0), b"").data  # the grown list, format 4
    assert int.from_bytes(defect[2:4], "big") == 8 * defects


def test_background_self_test_logged_with_the_profile_result(tmp_path: Path) -> None:
    _, t = new(tmp_path, smart="worn", self_test_seconds=0.2)
    assert t(cdb(0x1D, 0x20, 0, 0, 0, 0), b"").status == GOOD  # background short
    assert log_page(t, 0x10)[1][0] == (1 << 5) | 0x0F  # in progress
    until(lambda: log_page(t, 0x10)[1][0] != (1 << 5) | 0x0F)  # the test's 0.2 s
    first = log_page(t, 0x10)[1]
    assert first[0] == (1 << 5) | 7 and int.from_bytes(first[4:12], "big") == 0x1234
    assert first[12:15] == bytes([MEDIUM_ERROR, 0x11, 0x00])


def test_every_block_size_is_one_sg_format_may_ask_for() -> None:
    assert BLOCK_SIZES == (512, 520, 528, 4096, 4160)


def test_smartctls_json_of_the_emulated_drive_grades_as_a_healthy_sas_ssd() -> None:
    """What the real smartctl 7.3 read of the healthy profile in QEMU (tests/data/sas-emu/)
    is what ssdbench's SAS grading reads (grade/scsi.py)."""
    captures = Path(__file__).resolve().parents[2] / "data" / "sas-emu"
    obj = json.loads((captures / "smartctl-a.json").read_text())
    assert is_scsi(obj)
    health = parse_scsi_health(obj)
    assert health.health_passed is True and health.percentage_used == 2
    assert health.grown_defects == 0 and health.uncorrected == 0
    assert health.temperature_c == 35 and health.drive_trip_c == 70
    after = parse_scsi_health(json.loads((captures / "smartctl-after.json").read_text()))
    [test] = after.self_tests
    assert (test.kind, test.passed, test.power_on_hours) == ("short", True, 1234)
