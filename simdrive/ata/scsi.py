"""SCSI/ATA Translation (SAT-4, the subset Linux ``sd`` and ``hdparm`` use) for :class:`AtaDrive`.

``sd`` attaches with INQUIRY, TEST UNIT READY, READ CAPACITY and MODE SENSE; block I/O
comes as READ/WRITE(6/10/16); hdparm sends ATA PASS-THROUGH(16) (0x85) or (12) (0xa1).
A pass-through answer, as libata gives it: GOOD with the data when the command succeeded and
the CDB's CK_COND bit is clear; else CHECK CONDITION with descriptor sense holding the ATA
Return descriptor (0x09): RECOVERED ERROR / ATA PASS-THROUGH INFORMATION AVAILABLE
(0x00/0x1D) when the command succeeded, ABORTED COMMAND when the drive set ERR (hdparm sets
CK_COND and reads the registers from the descriptor; it prints "Input/output error" when ERR
is set).
"""

from __future__ import annotations

import struct
import time
from collections.abc import Callable

from simdrive.ata.drive import SECTOR, AtaDrive, Outcome, TaskFile
from simdrive.ata.tcmu import CHECK_CONDITION, GOOD, Reply

NO_SENSE, RECOVERED_ERROR, NOT_READY, MEDIUM_ERROR, DATA_PROTECT = 0x0, 0x1, 0x2, 0x3, 0x7
ILLEGAL_REQUEST, ABORTED_COMMAND = 0x5, 0xB

ATA_16, ATA_12 = 0x85, 0xA1
CK_COND = 0x20  # ATA PASS-THROUGH byte 2: return the ATA registers even on success


def fixed_sense(key: int, asc: int, ascq: int = 0) -> bytes:
    s = bytearray(18)
    s[0], s[2], s[7], s[12], s[13] = 0x70, key, 10, asc, ascq
    return bytes(s)


def check(key: int, asc: int, ascq: int = 0) -> Reply:
    return Reply(CHECK_CONDITION, sense=fixed_sense(key, asc, ascq))


def ata_return_sense(out: TaskFile) -> bytes:
    """Descriptor-format sense with the ATA Status Return descriptor (SAT-4 12.2.2.6)."""
    ok = not out.status & 0x01
    key, asc, ascq = (RECOVERED_ERROR, 0x00, 0x1D) if ok else (ABORTED_COMMAND, 0x00, 0x00)
    d = bytearray(14)
    d[0], d[1], d[2] = 0x09, 0x0C, 0x01  # EXTEND: the high bytes are valid
    d[3] = out.error
    d[4], d[5] = (out.count >> 8) & 0xFF, out.count & 0xFF
    d[6], d[7] = (out.lba >> 24) & 0xFF, out.lba & 0xFF
    d[8], d[9] = (out.lba >> 32) & 0xFF, (out.lba >> 8) & 0xFF
    d[10], d[11] = (out.lba >> 40) & 0xFF, (out.lba >> 16) & 0xFF
    d[12], d[13] = out.device, out.status
    return bytes([0x72, key, asc, ascq, 0, 0, 0, len(d)]) + bytes(d)


def decode_passthrough(cdb: bytes) -> tuple[TaskFile, int, bool]:
    """(taskfile, protocol, extend) of ATA PASS-THROUGH(16) or (12)."""
    protocol = (cdb[1] >> 1) & 0x0F
    if cdb[0] == ATA_16:
        extend = bool(cdb[1] & 1)
        tf = TaskFile(
            command=cdb[14], device=cdb[13],
            features=cdb[4] | ((cdb[3] << 8) if extend else 0),
            count=cdb[6] | ((cdb[5] << 8) if extend else 0),
            lba=cdb[8] | (cdb[10] << 8) | (cdb[12] << 16)
            | (((cdb[7]) | (cdb[9] << 8) | (cdb[11] << 16)) << 24 if extend else 0),
        )
        return tf, protocol, extend
    tf = TaskFile(command=cdb[9], device=cdb[8], features=cdb[3], count=cdb[4],
                  lba=cdb[5] | (cdb[6] << 8) | (cdb[7] << 16))
    return tf, protocol, False


class SatTarget:
    """Answers the SCSI commands of one LUN from an :class:`AtaDrive`."""

    def __init__(self, drive: AtaDrive, log: Callable[[str], None] = lambda _: None) -> None:
        self.drive = drive
        self.log = log
        self.wwn = 0x5001405000000000 | (abs(hash(drive.config.serial)) & 0xFFFFFFF)

    def __call__(self, cdb: bytes, data_out: bytes) -> Reply:
        op = cdb[0]
        try:
            handler = {
                0x00: self._tur, 0x12: self._inquiry, 0x25: self._capacity10,
                0x9E: self._service_in, 0x1A: self._mode_sense6, 0x5A: self._mode_sense10,
                0x08: self._rw, 0x0A: self._rw, 0x28: self._rw, 0x2A: self._rw,
                0x88: self._rw, 0x8A: self._rw, 0x35: self._sync, 0x91: self._sync,
                0x1B: self._tur, 0x1E: self._tur, ATA_16: self._passthrough,
                ATA_12: self._passthrough, 0x03: self._request_sense, 0x42: self._unmap,
            }[op]
        except KeyError:
            return check(ILLEGAL_REQUEST, 0x20)  # INVALID COMMAND OPERATION CODE
        return handler(cdb, data_out)

    # ---- what sd needs -----------------------------------------------------------

    def _tur(self, cdb: bytes, data: bytes) -> Reply:
        return Reply(GOOD)

    def _request_sense(self, cdb: bytes, data: bytes) -> Reply:
        return Reply(GOOD, fixed_sense(NO_SENSE, 0)[: cdb[4]])

    def _inquiry(self, cdb: bytes, data: bytes) -> Reply:
        alloc = (cdb[3] << 8) | cdb[4]
        cfg = self.drive.config
        if cdb[1] & 1:
            page = cdb[2]
            if page == 0x00:
                body = bytes([0x00, 0x80, 0x83, 0x89, 0xB0, 0xB1, 0xB2])
            elif page == 0x80:
                body = cfg.serial.encode("utf-8").rjust(20)[:20]
            elif page == 0x83:
                body = bytes([0x01, 0x03, 0x00, 0x08]) + self.wwn.to_bytes(8, "big")
            elif page == 0x89:
                body = self._ata_information()
            elif page == 0xB0:  # Block Limits: UNMAP of up to 8 ranges of 0x400000 blocks
                limits = bytearray(60)
                struct.pack_into(">II", limits, 16, 0x400000, 8)
                body = bytes(limits)
            elif page == 0xB2:  # Logical Block Provisioning: UNMAP supported, zeros after
                body = bytes([0x00, 0x80 | 0x04, 0x02, 0x00])
            elif page == 0xB1:
                body = (1).to_bytes(2, "big") + bytes(58)  # non-rotating medium
            else:
                return check(ILLEGAL_REQUEST, 0x24)
            out = bytes([0x00, page]) + len(body).to_bytes(2, "big") + body
            return Reply(GOOD, out[:alloc])
        std = bytearray(96)
        std[0], std[2], std[3], std[4], std[7] = 0x00, 0x06, 0x02, 91, 0x02
        std[8:16] = b"ATA     "
        std[16:32] = cfg.model.encode()[:16].ljust(16)
        std[32:36] = cfg.firmware.encode()[-4:].ljust(4)
        return Reply(GOOD, bytes(std[:alloc]))

    def _ata_information(self) -> bytes:
        """VPD 0x89: the SAT layer's identity and the drive's IDENTIFY data (SAT-4 10.4.3)."""
        body = bytearray(568 - 4)
        body[4:12] = b"linux   "
        body[12:28] = b"simdrive ata    "
        body[28:32] = b"0001"
        body[32:52] = bytes([0x34, 0, 0, 0, 0, 0x40, 0x01, 0x00, 0x00, 0x00, 0, 0, 0, 0, 0, 0,
                             0, 0, 0, 0])
        body[52] = 0xEC
        body[56:568 - 4] = self.drive.identify()
        return bytes(body)

    def _capacity10(self, cdb: bytes, data: bytes) -> Reply:
        last = min(self.drive.current_sectors - 1, 0xFFFFFFFF)
        return Reply(GOOD, struct.pack(">II", last, SECTOR))

    def _service_in(self, cdb: bytes, data: bytes) -> Reply:
        if cdb[1] & 0x1F != 0x10:
            return check(ILLEGAL_REQUEST, 0x24)
        alloc = int.from_bytes(cdb[10:14], "big")
        body = bytearray(32)
        struct.pack_into(">QI", body, 0, self.drive.current_sectors - 1, SECTOR)
        body[14] = 0x80 | 0x40  # LBPME (UNMAP), LBPRZ (unmapped blocks read zeros)
        return Reply(GOOD, bytes(body[:alloc]))

    def _mode_pages(self, page: int) -> bytes:
        caching = bytes([0x08, 0x12, 0x04]) + bytes(17)  # WCE set
        control = bytes([0x0A, 0x0A, 0x02]) + bytes(9)  # D_SENSE: descriptor sense
        pages = {0x08: caching, 0x0A: control}
        if page == 0x3F:
            return caching + control
        return pages.get(page, b"")

    def _mode_sense6(self, cdb: bytes, data: bytes) -> Reply:
        body = self._mode_pages(cdb[2] & 0x3F)
        if not body:
            return check(ILLEGAL_REQUEST, 0x24)
        out = bytes([3 + len(body), 0, 0, 0]) + body
        return Reply(GOOD, out[: cdb[4]])

    def _mode_sense10(self, cdb: bytes, data: bytes) -> Reply:
        body = self._mode_pages(cdb[2] & 0x3F)
        if not body:
            return check(ILLEGAL_REQUEST, 0x24)
        out = (6 + len(body)).to_bytes(2, "big") + bytes(6) + body
        return Reply(GOOD, out[: (cdb[7] << 8) | cdb[8]])

    def _unmap(self, cdb: bytes, data: bytes) -> Reply:
        """SCSI UNMAP (blkdiscard, fstrim): the SAT translation of DSM TRIM."""
        if self.drive.vol.locked:
            return check(DATA_PROTECT, 0x20, 0x02)
        ranges = []
        for off in range(8, len(data) - 15, 16):
            lba, count = struct.unpack_from(">QI", data, off)
            if lba + count > self.drive.current_sectors:
                return check(ILLEGAL_REQUEST, 0x21)
            ranges.append((lba, count))
        for lba, count in ranges:
            self.drive.punch(lba * SECTOR, count * SECTOR)
        self.log(f"UNMAP {len(ranges)} ranges, {sum(c for _, c in ranges)} blocks")
        return Reply(GOOD)

    def _sync(self, cdb: bytes, data: bytes) -> Reply:
        return Reply(GOOD)

    def _rw(self, cdb: bytes, data: bytes) -> Reply:
        op = cdb[0]
        if op in (0x08, 0x0A):
            lba = ((cdb[1] & 0x1F) << 16) | (cdb[2] << 8) | cdb[3]
            count = cdb[4] or 256
        elif op in (0x28, 0x2A):
            lba, count = int.from_bytes(cdb[2:6], "big"), int.from_bytes(cdb[7:9], "big")
        else:
            lba, count = int.from_bytes(cdb[2:10], "big"), int.from_bytes(cdb[10:14], "big")
        if lba + count > self.drive.current_sectors:  # beyond the HPA too
            return check(ILLEGAL_REQUEST, 0x21)  # LBA OUT OF RANGE
        write = op in (0x0A, 0x2A, 0x8A)
        if self.drive.vol.locked:
            # A locked drive aborts media access (ACS-3 table 'SEC4'). Reported as DATA
            # PROTECT / ACCESS DENIED, which sd does not retry (libata's ABORTED COMMAND is
            # retried five times, which made every boot with a locked drive 15 s longer).
            if write:
                self.log(f"WRITE lba={lba} blocks={count} -> refused: locked")
            return check(DATA_PROTECT, 0x20, 0x02)
        if write:
            self.log(f"WRITE lba={lba} blocks={count}")
            self.drive.write(lba * SECTOR, data[: count * SECTOR])
            return Reply(GOOD)
        return Reply(GOOD, self.drive.read(lba * SECTOR, count * SECTOR))

    # ---- ATA PASS-THROUGH ------------------------------------------------------------

    def _passthrough(self, cdb: bytes, data: bytes) -> Reply:
        tf, protocol, _ = decode_passthrough(cdb)
        start = time.monotonic()
        out: Outcome = self.drive.execute(tf, data)
        verdict = "ok"
        if not out.ok:
            verdict = f"ABORTED (status {out.tf.status:02x} error {out.tf.error:02x})"
        self.log(f"ATA_{16 if cdb[0] == ATA_16 else 12} proto={protocol} {tf.describe()} -> "
                 f"{verdict}: {out.note} [{1000 * (time.monotonic() - start):.1f} ms]")
        if out.ok and not cdb[2] & CK_COND:
            # SAT-4's ATA PASS-THROUGH results, as libata answers: a command that succeeded
            # with CK_COND clear returns GOOD and its data (smartctl's SAT detection sends
            # its IDENTIFY so, and takes a CHECK CONDITION there for no SAT); hdparm always
            # sets CK_COND to read the registers back from the ATA Return descriptor
            return Reply(GOOD, out.data)
        return Reply(CHECK_CONDITION, out.data if out.ok else b"", ata_return_sense(out.tf))
