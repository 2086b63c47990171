"""The emulated ATA drive's state machine and SAT answers, on the host (no QEMU): what
hdparm reads from them is checked end to end in test_ata_emu_qemu.py."""

from __future__ import annotations

import json
import struct
from pathlib import Path

import pytest

from simdrive.ata import drive as ata
from simdrive.ata import smart as smart_module
from simdrive.ata.drive import AtaDrive, Config, TaskFile
from simdrive.ata.scsi import SatTarget, ata_return_sense, decode_passthrough
from simdrive.ata.tcmu import CHECK_CONDITION, Reply, Ring

PW = b"secret"


def sec_data(password: bytes = PW, *, master: bool = False, enhanced: bool = False) -> bytes:
    data = bytearray(512)
    data[0] = (1 if master else 0) | (2 if enhanced else 0)
    data[2:34] = password.ljust(32, b"\0")
    return bytes(data)


def run(d: AtaDrive, command: int, data: bytes = b"", **tf: int) -> ata.Outcome:
    return d.execute(TaskFile(command=command, **tf), data)


def word(d: AtaDrive, n: int) -> int:
    raw = d.identify()
    return raw[2 * n] | (raw[2 * n + 1] << 8)


def new(tmp: Path, **cfg: object) -> AtaDrive:
    return AtaDrive.create(tmp / "drive", Config(**cfg))  # type: ignore[arg-type]


def test_identify_words(tmp_path: Path) -> None:
    d = new(tmp_path, size_bytes=8 << 20, serial="S123")
    raw = d.identify()
    assert sum(raw) % 256 == 0 and raw[510] == 0xA5
    assert word(d, 100) == (8 << 20) // 512 and word(d, 60) == (8 << 20) // 512
    assert word(d, 128) == 0x0021  # supported, enhanced erase; not enabled/locked/frozen
    assert word(d, 59) & 0xB000 == 0xB000 and word(d, 169) & 1
    assert bytes(raw[i ^ 1] for i in range(20, 40)).decode().strip() == "S123"


def test_password_locks_at_power_on_and_survives_reopen(tmp_path: Path) -> None:
    d = new(tmp_path)
    assert run(d, ata.SET_PASS, sec_data()).ok
    assert word(d, 128) & 0x0006 == 0x0002  # enabled, not locked until power-on
    again = AtaDrive(d.folder)  # the power cycle: state.json read back
    assert again.security_word() & 0x0006 == 0x0006
    assert not run(again, ata.READ_DMA_EXT, count=1).ok  # media access refused while locked
    assert not run(again, ata.SET_PASS, sec_data(b"other")).ok
    assert run(again, ata.UNLOCK, sec_data()).ok and run(again, ata.READ_DMA_EXT, count=1).ok


def test_five_wrong_passwords_expire_until_power_cycle(tmp_path: Path) -> None:
    d = new(tmp_path)
    run(d, ata.SET_PASS, sec_data())
    d.power_on()
    for _ in range(5):
        assert not run(d, ata.UNLOCK, sec_data(b"wrong")).ok
    assert d.security_word() & 0x0010
    assert not run(d, ata.UNLOCK, sec_data()).ok  # even the right one
    d.power_on()
    assert not d.security_word() & 0x0010
    assert run(d, ata.UNLOCK, sec_data()).ok


def test_erase_unit_needs_prepare_and_password_then_zeroes(tmp_path: Path) -> None:
    d = new(tmp_path)
    d.write(4096, b"x" * 4096)
    run(d, ata.SET_PASS, sec_data())
    assert not run(d, ata.ERASE_UNIT, sec_data()).ok  # no ERASE PREPARE
    assert run(d, ata.ERASE_PREPARE).ok
    assert not run(d, ata.ERASE_UNIT, sec_data(b"wrong")).ok
    assert d.read(4096, 4096) == b"x" * 4096
    run(d, ata.ERASE_PREPARE)
    out = run(d, ata.ERASE_UNIT, sec_data(enhanced=True))
    assert out.ok and "enhanced" in out.note
    assert d.read(4096, 4096) == bytes(4096) and not d.enabled


def test_frozen_refuses_security_but_not_sanitize(tmp_path: Path) -> None:
    d = new(tmp_path, frozen_at_power_on=True)
    d.write(0, b"y" * 512)
    assert not run(d, ata.SET_PASS, sec_data()).ok
    assert run(d, ata.SANITIZE, features=ata.SAN_BLOCK, lba=ata.SAN_BLOCK_KEY).ok
    assert d.read(0, 512) == bytes(512)
    status = run(d, ata.SANITIZE, features=ata.SAN_STATUS)
    assert status.tf.count >> 8 & ata.SAN_SUCCEEDED
    assert not run(d, ata.SANITIZE, features=ata.SAN_BLOCK, lba=0).ok  # wrong key


def test_trim_ranges_read_back_zero(tmp_path: Path) -> None:
    d = new(tmp_path)
    d.write(0, b"z" * 8192)
    entry = (8 << 48) | 0  # LBA 0, 8 sectors
    out = run(d, ata.DSM, entry.to_bytes(8, "little") + bytes(504), features=1)
    assert out.ok and d.read(0, 4096) == bytes(4096) and d.read(4096, 4096) == b"z" * 4096


def test_sat_answer_is_what_hdparm_reads(tmp_path: Path) -> None:
    d = new(tmp_path)
    target = SatTarget(d)
    cdb = bytes([0x85, 4 << 1, 0x2E, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, ata.IDENTIFY, 0])
    tf, protocol, _ = decode_passthrough(cdb)
    assert tf.command == ata.IDENTIFY and protocol == 4 and tf.count == 1
    reply = target(cdb, b"")
    assert reply.status == CHECK_CONDITION and reply.data == d.identify()
    sb = reply.sense
    # hdparm sgio.c: sb[0] == 0x72, sb[7] >= 14, desc[0] == 0x09, desc[1] >= 0x0c
    assert sb[0] == 0x72 and sb[7] >= 14 and sb[8] == 0x09 and sb[9] >= 0x0C
    assert sb[1:4] == bytes([0x01, 0x00, 0x1D]) and sb[8 + 13] == 0x50
    bad = ata_return_sense(TaskFile(status=0x51, error=0x04))
    assert bad[1] == 0x0B and bad[8 + 3] == 0x04 and bad[8 + 13] & 0x01
    # CK_COND clear (smartctl's SAT detection): GOOD and the data, as libata answers; a
    # command the drive aborts is CHECK CONDITION whatever CK_COND says
    plain = bytes([cdb[0], cdb[1], 0x0E, *cdb[3:]])
    reply = target(plain, b"")
    assert reply.status == 0 and reply.data == d.identify() and not reply.sense
    refused = bytearray(plain)
    refused[14] = 0xB0  # SMART without its signature: aborted
    reply = target(bytes(refused), b"")
    assert reply.status == CHECK_CONDITION and reply.sense[1] == 0x0B


def test_scsi_unmap_punches_ranges_and_capacity_says_lbpme(tmp_path: Path) -> None:
    d = new(tmp_path)
    d.write(0, b"u" * 8192)
    target = SatTarget(d)
    params = bytes(8) + (0).to_bytes(8, "big") + (8).to_bytes(4, "big") + bytes(4)
    assert target(bytes([0x42]) + bytes(9), params).status == 0
    assert d.read(0, 4096) == bytes(4096) and d.read(4096, 4096) == b"u" * 4096
    cap = target(bytes([0x9E, 0x10]) + bytes(8) + (32).to_bytes(4, "big") + bytes(2), b"")
    assert cap.data[14] & 0x80


@pytest.mark.slow
def test_nbd_backend_on_simdrive_erase_resets_the_ftl(tmp_path: Path) -> None:
    """The data in simdrive (nbdkit on a unix socket, as `scripts/simdrive start`): reads,
    writes and TRIM go over NBD, and ERASE UNIT resets the FTL (truth.jsonl 'sanitize')."""
    from simdrive.ata.nbd import NbdBackend
    from simdrive.cli import running

    size = 64 << 20  # the enterprise preset's smallest drive is 58 MiB
    with running(tmp_path / "sim", "enterprise", size, attach_loop=False) as (sock, _):
        backend = NbdBackend(str(sock))
        assert backend.size == size
        d = AtaDrive.create(tmp_path / "drive", Config(size_bytes=size))
        d = AtaDrive(d.folder, backend)
        d.write(1 << 20, b"m" * 4096)
        assert d.read(1 << 20, 4096) == b"m" * 4096
        run(d, ata.SET_PASS, sec_data())
        run(d, ata.ERASE_PREPARE)
        assert run(d, ata.ERASE_UNIT, sec_data()).ok
        assert d.read(1 << 20, 4096) == bytes(4096)
        backend.flush()
    lines = (tmp_path / "sim" / "truth.jsonl").read_text().splitlines()
    events = [json.loads(line).get("event") for line in lines]
    assert "sanitize" in events


def _ring(cdb: bytes, iovs: list[tuple[int, int]], data_out: bytes = b"") -> tuple[Ring, int]:
    """A TCMU mailbox + ring + data area in a bytearray, one command queued, laid out as
    include/uapi/linux/target_core_user.h (a wrong offset hangs the guest's I/O)."""
    mm = bytearray(1 << 16)
    cmdr_off, cmdr_size, ent = 128, 4096, 128
    struct.pack_into("<HHIII", mm, 0, 2, 0, cmdr_off, cmdr_size, 0)
    cdb_off = 8192
    mm[cdb_off : cdb_off + len(cdb)] = cdb
    length = 48 + 16 * len(iovs)
    length += -length % 8
    struct.pack_into("<IHBB", mm, ent, length | 1, 7, 0, 0)  # OP_CMD, cmd_id 7
    struct.pack_into("<III4xQ", mm, ent + 8, len(iovs), 0, 0, cdb_off)  # cdb_off at +24
    for i, (base, n) in enumerate(iovs):
        struct.pack_into("<QQ", mm, ent + 48 + 16 * i, base, n)
    if data_out:
        mm[iovs[0][0] : iovs[0][0] + len(data_out)] = data_out
    struct.pack_into("<I", mm, 12, length)  # cmd_head: the kernel queued one entry
    ring = Ring.__new__(Ring)
    ring.mm = mm
    return ring, ent


def test_ring_entry_layout_identify_through_two_iovs(tmp_path: Path) -> None:
    d = new(tmp_path)
    cdb = bytes([0x85, 4 << 1, 0x2E, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0x40, ata.IDENTIFY, 0])
    ring, ent = _ring(cdb, [(16384, 256), (20480, 256)])
    assert ring.process(SatTarget(d)) == 1
    mm = ring.mm
    assert struct.unpack_from("<I", mm, 64)[0] == struct.unpack_from("<I", mm, 12)[0]  # tail
    assert mm[ent + 8] == CHECK_CONDITION and mm[ent + 7] & 0x2  # READ_LEN with the data
    assert struct.unpack_from("<I", mm, ent + 12)[0] == 512
    assert bytes(mm[16384:16640]) + bytes(mm[20480:20736]) == d.identify()
    assert mm[ent + 16] == 0x72 and mm[ent + 16 + 8] == 0x09


def test_ring_write_data_out_and_a_handler_bug_is_an_error_not_a_hang(tmp_path: Path) -> None:
    d = new(tmp_path)
    cdb = bytes([0x2A, 0, 0, 0, 0, 4, 0, 0, 1, 0])  # WRITE(10) LBA 4, 1 block
    ring, ent = _ring(cdb, [(16384, 512)], b"w" * 512)
    ring.process(SatTarget(d))
    assert ring.mm[ent + 8] == 0 and d.read(4 * 512, 512) == b"w" * 512

    def broken(cdb: bytes, data: bytes) -> Reply:
        raise RuntimeError("drive bug")

    ring, ent = _ring(cdb, [(16384, 512)], b"w" * 512)
    ring.process(broken)
    assert ring.mm[ent + 8] == CHECK_CONDITION and ring.mm[ent + 16 + 2] == 0x04


# ---- Host Protected Area (ACS-3 HPA feature set; what hdparm -N sends) -------------------


def _native(d: AtaDrive) -> int:
    out = run(d, ata.READ_NATIVE_MAX_EXT, device=0x40)
    assert out.ok, out.note
    return out.tf.lba + 1


def _set_max(d: AtaDrive, sectors: int, *, permanent: bool) -> ata.Outcome:
    """hdparm 9.65 do_set_max_sectors: READ NATIVE MAX EXT, then SET MAX EXT (lba = n-1,
    count bit 0 = non-volatile, device 0x40)."""
    _native(d)
    return run(d, ata.SET_MAX_EXT, lba=sectors - 1, count=1 if permanent else 0, device=0x40)


def test_hpa_identify_bits_and_read_native_max(tmp_path: Path) -> None:
    d = new(tmp_path, size_bytes=8 << 20)
    n = (8 << 20) // 512
    assert word(d, 82) & 0x0400 and word(d, 85) & 0x0400  # HPA supported, enabled
    assert not word(d, 83) & 0x0100 and not word(d, 86) & 0x0100  # no SET MAX security ext.
    assert not word(d, 119) & 0x0100  # no ACCESSIBLE MAX ADDRESS: hdparm uses SET MAX EXT
    assert _native(d) == n
    out = run(d, ata.READ_NATIVE_MAX)  # 28-bit: LBA 0-23 in lba, 24-27 in device
    assert out.ok and (out.tf.lba | ((out.tf.device & 0x0F) << 24)) == n - 1


def test_set_max_volatile_until_power_on_and_reads_beyond_fail(tmp_path: Path) -> None:
    d = new(tmp_path, size_bytes=8 << 20)
    n = (8 << 20) // 512
    # SET MAX EXT not directly after READ NATIVE MAX EXT is aborted (ACS-3 7.51.2)
    assert not run(d, ata.SET_MAX_EXT, lba=999, device=0x40).ok
    assert _set_max(d, 1000, permanent=False).ok
    assert word(d, 100) == 1000 and word(d, 60) == 1000 and _native(d) == n
    assert SatTarget(d)(bytes([0x25]) + bytes(9), b"").data[:4] == (999).to_bytes(4, "big")
    beyond = SatTarget(d)(bytes([0x28, 0, 0, 0, 0x03, 0xE8, 0, 0, 1, 0]), b"")  # READ(10) 1000
    assert beyond.status == CHECK_CONDITION and beyond.sense[12] == 0x21  # LBA OUT OF RANGE
    ata_read = run(d, ata.READ_DMA_EXT, lba=1000, count=1)
    assert not ata_read.ok and ata_read.tf.error & ata.IDNF
    assert _set_max(d, 1500, permanent=False).ok  # volatile: as often as wanted
    assert not _set_max(d, n + 1, permanent=False).ok  # beyond the native max
    assert word(d, 100) == 1500
    again = AtaDrive(d.folder)  # power cycle: a volatile max is gone
    assert word(again, 100) == n


def test_set_max_permanent_persists_and_once_per_power_cycle(tmp_path: Path) -> None:
    d = new(tmp_path, size_bytes=8 << 20)
    n = (8 << 20) // 512
    assert _set_max(d, 2000, permanent=True).ok
    second = _set_max(d, n, permanent=True)  # hdparm's man page: one permanent change a session
    assert not second.ok and "power cycle" in second.note
    assert _set_max(d, 3000, permanent=False).ok  # a volatile one still works
    again = AtaDrive(d.folder)
    assert word(again, 100) == 2000 and _native(again) == n  # the permanent one survived
    assert json.loads((d.folder / "state.json").read_text())["max_sectors"] == 2000
    assert _set_max(again, n, permanent=True).ok
    assert word(AtaDrive(d.folder), 100) == n


def test_set_max_refused_while_locked(tmp_path: Path) -> None:
    d = new(tmp_path)
    assert run(d, ata.SET_PASS, sec_data()).ok
    locked = AtaDrive(d.folder)
    assert not _set_max(locked, 1000, permanent=True).ok


SMART_SIG = 0xC24F00  # LBA mid 4Fh, high C2h


def smart(d: AtaDrive, feature: int, low: int = 0) -> ata.Outcome:
    return run(d, ata.SMART, features=feature, lba=SMART_SIG | low)


def attrs(data: bytes) -> dict[int, tuple[int, int, int]]:
    """id -> (value, worst, raw) of SMART READ DATA."""
    out = {}
    for i in range(30):
        e = data[2 + 12 * i: 14 + 12 * i]
        if e[0]:
            out[e[0]] = (e[3], e[4], int.from_bytes(e[5:11], "little"))
    return out


def test_smart_profiles_status_and_structures(tmp_path: Path) -> None:
    healthy, worn = new(tmp_path / "h"), new(tmp_path / "w", smart="worn")
    assert word(healthy, 82) & 1 and word(healthy, 85) & 1  # SMART supported, enabled
    assert word(healthy, 84) & 3 == 3 and not word(healthy, 84) & 0x20  # logs, no GPL
    for d in (healthy, worn):
        data = smart(d, 0xD0).data
        assert len(data) == 512 and sum(data) % 256 == 0  # the checksum
        assert sum(smart(d, 0xD1).data) % 256 == 0
    assert attrs(smart(healthy, 0xD0).data)[5] == (100, 100, 0)
    assert attrs(smart(worn, 0xD0).data)[5] == (8, 8, 1520)
    assert attrs(smart(worn, 0xD0).data)[9][2] == 46000
    thresholds = smart(worn, 0xD1).data
    assert (thresholds[2], thresholds[3]) == (5, 10)  # Reallocated_Sector_Ct's threshold
    # RETURN STATUS: the signature back when good, 2CF4h when a pre-failure attribute is at
    # or below its threshold (the worn drive's 5 and 177)
    assert (smart(healthy, 0xDA).tf.lba >> 8) & 0xFFFF == 0xC24F
    assert (smart(worn, 0xDA).tf.lba >> 8) & 0xFFFF == 0x2CF4
    # without the signature, a SMART command is aborted
    assert not run(healthy, ata.SMART, features=0xD0, lba=0).ok
    # the log directory names the error log and the self-test log
    directory = smart(healthy, 0xD5, 0x00).data
    assert directory[2 * 0x01] == 1 and directory[2 * 0x06] == 1
    assert not smart(healthy, 0xD5, 0x09).ok  # no selective self-test log
    # disabled: only ENABLE is taken; the state outlives a reopen
    assert smart(healthy, 0xD9).ok and not smart(healthy, 0xD0).ok
    assert not word(AtaDrive(healthy.folder), 85) & 1
    assert smart(healthy, 0xD8).ok and smart(healthy, 0xD0).ok


def test_self_test_counts_down_then_logs_its_result(tmp_path: Path,
                                                    monkeypatch: pytest.MonkeyPatch) -> None:
    now = [1000.0]
    monkeypatch.setattr(smart_module, "monotonic", lambda: now[0])
    worn = new(tmp_path / "w", smart="worn", self_test_seconds=10.0)
    healthy = new(tmp_path / "h", self_test_seconds=10.0)
    assert smart(worn, 0xD4, 0x01).ok  # short, off-line mode
    assert not smart(worn, 0xD4, 0x02).ok  # one at a time: only an abort is taken
    assert smart(worn, 0xD0).data[363] == 0xF9  # running, 90% left (the most the nibble says)
    now[0] += 4.5
    assert smart(worn, 0xD0).data[363] == 0xF6  # 55% left, rounded up to tens
    now[0] += 6
    assert smart(worn, 0xD0).data[363] == 0x70  # failed: read element
    log = smart(worn, 0xD5, 0x06).data
    assert sum(log) % 256 == 0 and log[508] == 1  # one descriptor, the newest at 1
    assert (log[2], log[3]) == (0x01, 0x70)  # short, read failure
    assert int.from_bytes(log[4:6], "little") == 46000  # its life timestamp (power-on hours)
    assert int.from_bytes(log[7:11], "little") == 0x1234  # the first failing LBA
    # the log outlives a power cycle (state.json)
    assert AtaDrive(worn.folder).smart.read_log(0x06) == log
    # a healthy drive's extended test passes in four times the short one's time
    assert smart(healthy, 0xD4, 0x02).ok
    now[0] += 39
    assert smart(healthy, 0xD0).data[363] >> 4 == 0xF
    now[0] += 1
    assert smart(healthy, 0xD0).data[363] == 0x00
    # an abort logs "aborted by the host" with what was left
    assert smart(healthy, 0xD4, 0x01).ok
    now[0] += 2
    assert smart(healthy, 0xD4, 0x7F).ok
    assert smart(healthy, 0xD0).data[363] == 0x19
    log = smart(healthy, 0xD5, 0x06).data
    assert log[508] == 2 and (log[26], log[27]) == (0x01, 0x19)
    # a power cycle interrupts a running test
    assert smart(healthy, 0xD4, 0x01).ok
    healthy.power_on()
    assert smart(healthy, 0xD0).data[363] >> 4 == 0x2
