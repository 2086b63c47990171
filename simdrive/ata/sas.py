"""The emulated drive's SAS personality: a SAS SSD that answers SCSI itself (SPC-4, SBC-4),
driven by the real sg3_utils and smartctl through the real kernel (docs/ata-emulator.md "The
SAS personality").

What a storage array's SSD shows an intake: INQUIRY with its VPD pages (serial, an NAA WWN,
block limits, non-rotating), READ CAPACITY(10/16) with the protection fields, MODE SENSE /
MODE SELECT with a block descriptor, the log pages smartctl reads for SAS, READ DEFECT DATA,
SEND DIAGNOSTIC self-tests, REPORT SUPPORTED OPERATION CODES, SANITIZE (overwrite, block
erase, cryptographic erase, exit failure mode) and FORMAT UNIT, both with the IMMED bit and a
progress indication in REQUEST SENSE's sense-key-specific bytes while they run; or, with the
config's ``sanitize = False``, no SANITIZE at all (an unknown opcode, not listed), as many
older SAS drives, whose erase is then FORMAT UNIT (it zeroes every block). A drive may
start at 520 bytes a block (as arrays format them): Linux's sd then gives it capacity 0
("Unsupported sector size 520") and only /dev/sgN reaches it until MODE SELECT + FORMAT UNIT
make it 512 (or 4096) and a rescan.

Every CDB is checked before it acts: a field out of range, a short parameter list, an
unknown service action is ILLEGAL REQUEST (INVALID FIELD IN CDB / IN PARAMETER LIST,
PARAMETER LIST LENGTH ERROR), never an exception in the handler.
"""

from __future__ import annotations

import os
import struct
import time
from collections.abc import Callable
from dataclasses import dataclass

from simdrive.ata.drive import AtaDrive
from simdrive.ata.tcmu import CHECK_CONDITION, GOOD, Reply

NO_SENSE, NOT_READY, MEDIUM_ERROR, ILLEGAL_REQUEST = 0x0, 0x2, 0x3, 0x5
# additional sense codes (ASC, ASCQ)
INVALID_OPCODE = (0x20, 0x00)
LBA_OUT_OF_RANGE = (0x21, 0x00)
INVALID_FIELD_IN_CDB = (0x24, 0x00)
INVALID_FIELD_IN_PARAMETERS = (0x26, 0x00)
PARAMETER_LIST_LENGTH_ERROR = (0x1A, 0x00)
FORMAT_IN_PROGRESS = (0x04, 0x04)
SANITIZE_IN_PROGRESS = (0x04, 0x1B)
SELF_TEST_IN_PROGRESS = (0x04, 0x09)
SANITIZE_FAILED = (0x31, 0x03)
FAILURE_PREDICTED = (0x5D, 0x00)  # FAILURE PREDICTION THRESHOLD EXCEEDED

BLOCK_SIZES = (512, 520, 528, 4096, 4160)
# SANITIZE service actions (SBC-4 5.30)
OVERWRITE, BLOCK_ERASE, CRYPTO_ERASE, EXIT_FAILURE_MODE = 0x01, 0x02, 0x03, 0x1F
SANITIZE_NAMES = {OVERWRITE: "overwrite", BLOCK_ERASE: "block", CRYPTO_ERASE: "crypto"}

# opcodes
TUR, REQUEST_SENSE, FORMAT_UNIT, READ6, WRITE6, INQUIRY = 0x00, 0x03, 0x04, 0x08, 0x0A, 0x12
MODE_SELECT6, MODE_SENSE6, START_STOP, SEND_DIAGNOSTIC, PREVENT = 0x15, 0x1A, 0x1B, 0x1D, 0x1E
READ_CAPACITY10, READ10, WRITE10, VERIFY10, SYNC10 = 0x25, 0x28, 0x2A, 0x2F, 0x35
READ_DEFECT10, UNMAP, LOG_SENSE, SANITIZE = 0x37, 0x42, 0x4D, 0x48
MODE_SELECT10, MODE_SENSE10, READ16, WRITE16, SYNC16 = 0x55, 0x5A, 0x88, 0x8A, 0x91
SERVICE_IN16, MAINTENANCE_IN, READ12, WRITE12, READ_DEFECT12 = 0x9E, 0xA3, 0xA8, 0xAA, 0xB7
# what REPORT SUPPORTED OPERATION CODES lists: (opcode, service action or None, CDB length)
SUPPORTED: tuple[tuple[int, int | None, int], ...] = (
    (TUR, None, 6), (REQUEST_SENSE, None, 6), (FORMAT_UNIT, None, 6), (READ6, None, 6),
    (WRITE6, None, 6), (INQUIRY, None, 6), (MODE_SELECT6, None, 6), (MODE_SENSE6, None, 6),
    (START_STOP, None, 6), (SEND_DIAGNOSTIC, None, 6), (PREVENT, None, 6),
    (READ_CAPACITY10, None, 10), (READ10, None, 10), (WRITE10, None, 10), (VERIFY10, None, 10),
    (SYNC10, None, 10), (READ_DEFECT10, None, 10), (UNMAP, None, 10), (LOG_SENSE, None, 10),
    (SANITIZE, OVERWRITE, 10), (SANITIZE, BLOCK_ERASE, 10), (SANITIZE, CRYPTO_ERASE, 10),
    (SANITIZE, EXIT_FAILURE_MODE, 10), (MODE_SELECT10, None, 10), (MODE_SENSE10, None, 10),
    (READ16, None, 16), (WRITE16, None, 16), (SYNC16, None, 16), (SERVICE_IN16, 0x10, 16),
    (MAINTENANCE_IN, 0x0C, 12), (READ12, None, 12), (WRITE12, None, 12),
    (READ_DEFECT12, None, 12),
)
# answered while a sanitize or format runs (SBC-4 4.11.4: all else NOT READY)
ALLOWED_DURING_OPERATION = frozenset({INQUIRY, REQUEST_SENSE, LOG_SENSE, MAINTENANCE_IN})
MEDIA_ACCESS = frozenset({READ6, WRITE6, READ10, WRITE10, READ12, WRITE12, READ16, WRITE16,
                          VERIFY10, UNMAP, SYNC10, SYNC16})


class Rejected(Exception):
    """A command refused with CHECK CONDITION: its sense key, ASC and ASCQ."""

    def __init__(self, key: int, code: tuple[int, int], note: str = "") -> None:
        super().__init__(note)
        self.key, self.asc, self.ascq = key, code[0], code[1]


def invalid_cdb(note: str) -> Rejected:
    return Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_CDB, note)


def sense(key: int, asc: int, ascq: int, *, progress: int | None = None,
          descriptor: bool = False) -> bytes:
    """Fixed (70h) or descriptor (72h) sense data; ``progress`` (0..65535) in the
    sense-key-specific field with SKSV set (SPC-4 4.5.2.4.4)."""
    if descriptor:
        out = bytearray([0x72, key, asc, ascq, 0, 0, 0, 0])
        if progress is not None:
            out += bytes([0x02, 0x06, 0, 0, 0x80]) + progress.to_bytes(2, "big") + b"\0"
        out[7] = len(out) - 8
        return bytes(out)
    out = bytearray(18)
    out[0], out[2], out[7], out[12], out[13] = 0x70, key, 10, asc, ascq
    if progress is not None:
        out[15] = 0x80
        out[16:18] = progress.to_bytes(2, "big")
    return bytes(out)


def _param(code: int, value: bytes, control: int = 0x03) -> bytes:
    """One log parameter: code, control byte (binary, list format), length, value."""
    return code.to_bytes(2, "big") + bytes([control, len(value)]) + value


@dataclass(frozen=True)
class Profile:
    """What the log pages say of the drive's health (the ATA profiles' SAS twins)."""

    read_corrected: int
    read_uncorrected: int
    write_corrected: int
    write_uncorrected: int
    non_medium: int
    temperature: int
    percentage_used: int
    grown_defects: int
    hours: int
    failing_lba: int | None  # where a self-test finds a read error
    ie: tuple[int, int]  # the informational exception (0, 0: none)


PROFILES = {
    "healthy": Profile(12, 0, 3, 0, 0, 35, 2, 0, 1234, None, (0, 0)),
    "worn": Profile(8_123, 212, 977, 3, 17, 42, 97, 1520, 46000, 0x1234, FAILURE_PREDICTED),
}


@dataclass
class Operation:
    """A SANITIZE or FORMAT UNIT under way: NOT READY with progress until it ends."""

    kind: str  # "sanitize-block", "sanitize-crypto", "sanitize-overwrite", "format"
    start: float
    seconds: float
    fails: bool = False
    ause: bool = False  # the command allowed EXIT FAILURE MODE should it fail

    def progress(self) -> int:
        if self.seconds <= 0:
            return 0xFFFF
        return min(0xFFFF, int(0x10000 * (time.monotonic() - self.start) / self.seconds))

    @property
    def done(self) -> bool:
        return time.monotonic() - self.start >= self.seconds


@dataclass
class SelfTest:
    code: int  # 1 background short, 2 background extended
    start: float
    seconds: float

    def progress(self) -> int:
        """REQUEST SENSE's progress indication while it runs (NO SENSE, 04h/09h LOGICAL UNIT
        NOT READY, SELF-TEST IN PROGRESS, with the progress: what smartctl 7.5 prints as
        "Self-test execution status: N% of test remaining" and sg_requests --progress)."""
        if self.seconds <= 0:
            return 0xFFFF
        return min(0xFFFF, int(0x10000 * (time.monotonic() - self.start) / self.seconds))


class SasTarget:
    """Answers the SCSI commands of one LUN as a SAS SSD; the data and non-volatile state
    live in ``drive`` (its folder's data.img / simdrive and state.json)."""

    def __init__(self, drive: AtaDrive, log: Callable[[str], None] = lambda _: None) -> None:
        self.drive = drive
        self.log = log
        cfg = drive.config
        if cfg.block_size not in BLOCK_SIZES:
            raise ValueError(f"block size {cfg.block_size}: one of {BLOCK_SIZES}")
        if cfg.smart not in PROFILES:
            raise ValueError(f"profile {cfg.smart!r}: one of {', '.join(PROFILES)}")
        self.profile = PROFILES[cfg.smart]
        self.wwn = 0x5000C50000000000 | (sum(cfg.serial.encode()) * 2654435761 & 0xFFFFFFFFF)
        self.operation: Operation | None = None
        self.self_test: SelfTest | None = None
        self.pending_block_size: int | None = None  # MODE SELECT's, until FORMAT UNIT
        self.refused: set[bytes] = set()  # opcodes refused NOT READY during this operation
        op = drive.nv.operation
        if op is not None:  # a power cut during it: the operation resumes (SBC-4 4.11.2)
            self.operation = Operation(str(op["kind"]), time.monotonic(),
                                       float(str(op["seconds"])), bool(op.get("fails")),
                                       bool(op.get("ause")))
            self.log(f"power-on: {self.operation.kind} resumed")

    # ---- geometry ---------------------------------------------------------------------

    @property
    def block_size(self) -> int:
        nv = self.drive.nv.block_size
        return nv if nv is not None else self.drive.config.block_size

    @property
    def protection_type(self) -> int:
        nv = self.drive.nv.protection_type
        return nv if nv is not None else self.drive.config.protection_type

    @property
    def blocks(self) -> int:
        return self.drive.config.size_bytes // self.block_size

    # ---- dispatch ---------------------------------------------------------------------

    def __call__(self, cdb: bytes, data: bytes) -> Reply:
        op = cdb[0] if cdb else -1
        handler = {
            TUR: self._tur, REQUEST_SENSE: self._request_sense, FORMAT_UNIT: self._format,
            INQUIRY: self._inquiry, MODE_SELECT6: self._mode_select, MODE_SENSE6: self._mode_sense,
            START_STOP: self._good, PREVENT: self._good, SEND_DIAGNOSTIC: self._send_diagnostic,
            READ_CAPACITY10: self._capacity10, VERIFY10: self._good, SYNC10: self._good,
            READ_DEFECT10: self._read_defect, UNMAP: self._unmap, LOG_SENSE: self._log_sense,
            SANITIZE: self._sanitize, MODE_SELECT10: self._mode_select,
            MODE_SENSE10: self._mode_sense, SYNC16: self._good, SERVICE_IN16: self._service_in,
            MAINTENANCE_IN: self._maintenance_in, READ_DEFECT12: self._read_defect,
            **{o: self._rw for o in (READ6, WRITE6, READ10, WRITE10, READ12, WRITE12, READ16,
                                     WRITE16)},
        }.get(op)
        if op == SANITIZE and not self.drive.config.sanitize:
            handler = None  # a drive without SANITIZE (older SAS drives): an unknown opcode
        if handler is None:
            return self._check(Rejected(ILLEGAL_REQUEST, INVALID_OPCODE, f"opcode {op:#04x}"),
                               cdb)
        try:
            self._tick()
            if self.operation is not None and op not in ALLOWED_DURING_OPERATION:
                code = FORMAT_IN_PROGRESS if self.operation.kind == "format" \
                    else SANITIZE_IN_PROGRESS
                raise Rejected(NOT_READY, code)
            if self.drive.nv.sanitize_failed and op in MEDIA_ACCESS:
                raise Rejected(MEDIUM_ERROR, SANITIZE_FAILED)
            return handler(cdb, data)
        except Rejected as exc:
            return self._check(exc, cdb)
        except (IndexError, ValueError, struct.error) as exc:  # a CDB shorter than its kind
            return self._check(invalid_cdb(f"malformed: {exc}"), cdb)

    def _check(self, exc: Rejected, cdb: bytes) -> Reply:
        progress = None
        if exc.key == NOT_READY and self.operation is not None:
            progress = self.operation.progress()
        # sd retries a NOT READY read until the drive is ready: one line per opcode
        # and operation
        if exc.key != NOT_READY or cdb[:1] not in self.refused:
            self.refused.add(cdb[:1])
            what = str(exc) or f"{exc.asc:02x}/{exc.ascq:02x}"
            self.log(f"SCSI {cdb[:1].hex()} -> CHECK CONDITION key {exc.key:#x} "
                     f"{exc.asc:02x}/{exc.ascq:02x}: {what}")
        return Reply(CHECK_CONDITION, sense=sense(exc.key, exc.asc, exc.ascq, progress=progress))

    def _tick(self) -> None:
        """Ends an operation or a self-test whose time is up."""
        op = self.operation
        if op is not None and op.done:
            self.operation = None
            nv = self.drive.nv
            nv.operation = None
            if op.kind.startswith("sanitize"):
                nv.sanitize_failed = op.fails
                nv.sanitize_ause = op.fails and op.ause
            self.drive._save()
            self.log(f"{op.kind}: {'FAILED (sanitize failure mode)' if op.fails else 'done'}")
        st = self.self_test
        if st is not None and time.monotonic() - st.start >= st.seconds:
            self.self_test = None
            self._log_self_test(st.code, 7 if self.profile.failing_lba is not None else 0)

    def _start(self, kind: str, seconds: float, immediate: bool, *, fails: bool = False,
               ause: bool = False) -> None:
        self.drive.nv.operation = {"kind": kind, "seconds": seconds, "fails": fails,
                                   "ause": ause}
        self.drive._save()
        self.operation = Operation(kind, time.monotonic(), seconds, fails, ause)
        self.refused = set()
        if not immediate:  # the command completes with the operation
            time.sleep(max(0.0, seconds))
            self._tick()

    @staticmethod
    def _good(cdb: bytes, data: bytes) -> Reply:
        return Reply(GOOD)

    # ---- status ------------------------------------------------------------------------

    def _tur(self, cdb: bytes, data: bytes) -> Reply:
        return Reply(GOOD)

    def _request_sense(self, cdb: bytes, data: bytes) -> Reply:
        if cdb[1] & 0xFE:
            raise invalid_cdb("REQUEST SENSE: reserved bits")
        desc = bool(cdb[1] & 1)
        if self.operation is not None:
            code = FORMAT_IN_PROGRESS if self.operation.kind == "format" \
                else SANITIZE_IN_PROGRESS
            out = sense(NOT_READY, *code, progress=self.operation.progress(), descriptor=desc)
        elif self.drive.nv.sanitize_failed:
            out = sense(MEDIUM_ERROR, *SANITIZE_FAILED, descriptor=desc)
        elif self.self_test is not None:
            out = sense(NO_SENSE, *SELF_TEST_IN_PROGRESS, progress=self.self_test.progress(),
                        descriptor=desc)
        else:
            out = sense(NO_SENSE, 0, 0, descriptor=desc)
        return Reply(GOOD, out[: cdb[4]])

    # ---- INQUIRY ------------------------------------------------------------------------

    def _inquiry(self, cdb: bytes, data: bytes) -> Reply:
        alloc = int.from_bytes(cdb[3:5], "big")
        cfg = self.drive.config
        if cdb[1] & 0xFE:
            raise invalid_cdb("INQUIRY: CMDDT or reserved bits")
        if not cdb[1] & 1:
            if cdb[2]:
                raise invalid_cdb("INQUIRY: a page code without EVPD")
            std = bytearray(96)
            std[0], std[2], std[3], std[4] = 0x00, 0x06, 0x12, 91  # disk, SPC-4, HISUP
            std[5] = 0x01  # PROTECT: the drive can be formatted with protection information
            std[6], std[7] = 0x10, 0x02  # MULTIP (dual port, as SAS drives), CMDQUE
            std[8:16] = b"SSDBENCH"
            std[16:32] = cfg.model.encode("utf-8")[:16].ljust(16)
            std[32:36] = cfg.firmware.encode("utf-8")[-4:].ljust(4)
            std[36:56] = cfg.serial.encode("utf-8")[:20].ljust(20)  # vendor specific
            return Reply(GOOD, bytes(std[:alloc]))
        page = cdb[2]
        if page == 0x00:
            body = bytes([0x00, 0x80, 0x83, 0xB0, 0xB1, 0xB2])
        elif page == 0x80:  # unit serial number (SAS drives pad on the right)
            body = cfg.serial.encode("utf-8")[:20].ljust(20)
        elif page == 0x83:
            body = self._device_identification()
        elif page == 0xB0:  # block limits: UNMAP, a 1 MiB transfer
            limits = bytearray(60)
            struct.pack_into(">I", limits, 4, (1 << 20) // self.block_size)  # maximum transfer
            struct.pack_into(">I", limits, 8, (128 << 10) // self.block_size)  # optimal
            struct.pack_into(">II", limits, 16, 0x400000, 8)
            body = bytes(limits)
        elif page == 0xB1:  # block device characteristics: non-rotating, 2.5"
            body = (1).to_bytes(2, "big") + bytes([0, 0x03]) + bytes(56)
        elif page == 0xB2:  # logical block provisioning: UNMAP, zeros after it
            body = bytes([0x00, 0x80 | 0x04, 0x02, 0x00])
        else:
            raise invalid_cdb(f"INQUIRY: VPD page {page:#04x} not supported")
        out = bytes([0x00, page]) + len(body).to_bytes(2, "big") + body
        return Reply(GOOD, out[:alloc])

    def _device_identification(self) -> bytes:
        """VPD 83h: the LU's NAA 5 name, the target port's (SAS, PIV set), its number."""
        port = self.wwn + 1
        return (bytes([0x01, 0x03, 0x00, 0x08]) + self.wwn.to_bytes(8, "big")
                + bytes([0x61, 0x93, 0x00, 0x08]) + port.to_bytes(8, "big")
                + bytes([0x61, 0x94, 0x00, 0x04]) + (1).to_bytes(4, "big"))

    # ---- capacity ------------------------------------------------------------------------

    def _capacity10(self, cdb: bytes, data: bytes) -> Reply:
        last = min(self.blocks - 1, 0xFFFFFFFF)
        return Reply(GOOD, struct.pack(">II", last, self.block_size))

    def _service_in(self, cdb: bytes, data: bytes) -> Reply:
        if cdb[1] & 0x1F != 0x10:
            raise invalid_cdb(f"SERVICE ACTION IN(16) {cdb[1] & 0x1F:#04x}")
        alloc = int.from_bytes(cdb[10:14], "big")
        body = bytearray(32)
        struct.pack_into(">QI", body, 0, self.blocks - 1, self.block_size)
        ptype = self.protection_type
        body[12] = ((ptype - 1) << 1 | 1) if ptype else 0  # P_TYPE, PROT_EN
        body[14] = 0x80 | 0x40  # LBPME (UNMAP), LBPRZ (unmapped blocks read zeros)
        return Reply(GOOD, bytes(body[:alloc]))

    # ---- MODE SENSE / MODE SELECT ---------------------------------------------------------

    def _mode_pages(self, page: int, subpage: int, pc: int) -> bytes:
        changeable = pc == 1
        recovery = bytes([0x01, 0x0A]) + (bytes(10) if changeable else bytes([0xC0]) + bytes(9))
        caching = bytes([0x08, 0x12]) + (bytes(18) if changeable else bytes([0x04]) + bytes(17))
        control = bytes([0x0A, 0x0A]) + bytes(10)  # fixed sense, GLTSD clear
        # informational exceptions control: EWASC (temperature warnings), DEXCPT clear,
        # MRIE 4 (unconditionally generate recovered error), the interval timer
        iec = bytes([0x1C, 0x0A]) + (bytes(10) if changeable else bytes([0x10, 0x04])
                                     + (6000).to_bytes(4, "big") + (0).to_bytes(4, "big"))
        pages = {0x01: recovery, 0x08: caching, 0x0A: control, 0x1C: iec}
        if subpage not in (0x00, 0xFF) or (subpage == 0xFF and page != 0x3F):
            raise invalid_cdb(f"MODE SENSE: subpage {subpage:#04x}")
        if page == 0x3F:
            return b"".join(pages.values())
        if page not in pages:
            raise invalid_cdb(f"MODE SENSE: page {page:#04x} not supported")
        return pages[page]

    def _block_descriptor(self, long_lba: bool) -> bytes:
        size = self.pending_block_size or self.block_size
        blocks = self.drive.config.size_bytes // size
        if long_lba:
            return blocks.to_bytes(8, "big") + bytes(4) + size.to_bytes(4, "big")
        return min(blocks, 0xFFFFFFFF).to_bytes(4, "big") + b"\0" + size.to_bytes(3, "big")

    def _mode_sense(self, cdb: bytes, data: bytes) -> Reply:
        six = cdb[0] == MODE_SENSE6
        dbd, llbaa = bool(cdb[1] & 0x08), bool(cdb[1] & 0x10) and not six
        pc, page, subpage = cdb[2] >> 6, cdb[2] & 0x3F, cdb[3]
        if pc == 3:
            raise Rejected(ILLEGAL_REQUEST, (0x39, 0x00), "saving parameters not supported")
        body = self._mode_pages(page, subpage, pc)
        bd = b"" if dbd else self._block_descriptor(llbaa)
        device_specific = 0x10  # DPOFUA
        if six:
            out = bytes([3 + len(bd) + len(body), 0, device_specific, len(bd)]) + bd + body
            return Reply(GOOD, out[: cdb[4]])
        length = 6 + len(bd) + len(body)
        out = (length.to_bytes(2, "big") + bytes([0, device_specific, 0x01 if llbaa else 0, 0])
               + len(bd).to_bytes(2, "big") + bd + body)
        return Reply(GOOD, out[: int.from_bytes(cdb[7:9], "big")])

    def _mode_select(self, cdb: bytes, data: bytes) -> Reply:
        six = cdb[0] == MODE_SELECT6
        length = cdb[4] if six else int.from_bytes(cdb[7:9], "big")
        if cdb[1] & 0xEE:
            raise invalid_cdb("MODE SELECT: reserved bits")
        header = 4 if six else 8
        if length < header or len(data) < length:
            raise Rejected(ILLEGAL_REQUEST, PARAMETER_LIST_LENGTH_ERROR,
                           f"MODE SELECT: {len(data)} of {length} bytes")
        data = data[:length]
        long_lba = not six and bool(data[4] & 1)
        bd_len = data[3] if six else int.from_bytes(data[6:8], "big")
        if header + bd_len > length or bd_len not in (0, 16 if long_lba else 8):
            raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                           f"MODE SELECT: block descriptor length {bd_len}")
        size = None
        if bd_len:
            bd = data[header : header + bd_len]
            count = int.from_bytes(bd[:8] if long_lba else bd[:4], "big")
            size = int.from_bytes(bd[12:16] if long_lba else bd[5:8], "big")
            if size not in BLOCK_SIZES:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               f"MODE SELECT: block length {size}")
            if count and count > self.drive.config.size_bytes // size:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               f"MODE SELECT: {count} blocks of {size} bytes")
        off = header + bd_len
        while off < length:  # the pages: known ones taken, their contents kept as they are
            if off + 2 > length or data[off] & 0x40:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               "MODE SELECT: a page header")
            page, page_len = data[off] & 0x3F, data[off + 1]
            if page not in (0x01, 0x08, 0x0A, 0x1C) or off + 2 + page_len > length:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               f"MODE SELECT: page {page:#04x}")
            off += 2 + page_len
        if size is not None and size != self.block_size:
            self.pending_block_size = size
        self.log(f"MODE SELECT({'6' if six else '10'}): block length "
                 f"{size if size is not None else 'unchanged'}")
        return Reply(GOOD)

    # ---- FORMAT UNIT ----------------------------------------------------------------------

    def _format(self, cdb: bytes, data: bytes) -> Reply:
        fmtpinfo, longlist, fmtdata = cdb[1] >> 6, bool(cdb[1] & 0x20), bool(cdb[1] & 0x10)
        if cdb[1] & 0x07 and not fmtdata:
            raise invalid_cdb("FORMAT UNIT: a defect list format without FMTDATA")
        immediate, pfu = False, 0
        if fmtdata:
            header = 8 if longlist else 4
            if len(data) < header:
                raise Rejected(ILLEGAL_REQUEST, PARAMETER_LIST_LENGTH_ERROR,
                               f"FORMAT UNIT: {len(data)}-byte parameter list")
            pfu, immediate = data[0] & 0x07, bool(data[1] & 0x02)
            defects = int.from_bytes(data[4:8] if longlist else data[2:4], "big")
            if defects:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               "FORMAT UNIT: a defect list (not supported)")
            if pfu > 1:
                raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                               f"FORMAT UNIT: protection field usage {pfu}")
        # FMTPINFO 0: no protection; 10b: type 1; 11b: type 2 (PFU 0) or 3 (PFU 1)
        ptype = {0: 0, 2: 1, 3: 2 + pfu}.get(fmtpinfo)
        if ptype is None:
            raise invalid_cdb(f"FORMAT UNIT: FMTPINFO {fmtpinfo}")
        before = self.block_size
        size = self.pending_block_size or before
        nv = self.drive.nv
        nv.block_size = size
        nv.protection_type = ptype
        self.pending_block_size = None
        nv.sanitize_failed = False
        self.drive.data.erase_all()  # the format writes the default pattern: zeros
        self.log(f"FORMAT UNIT: {before} -> {size} bytes a block, "
                 f"{self.drive.config.size_bytes // size} blocks, protection type {ptype}, "
                 f"{'immediate' if immediate else 'waited'} "
                 f"({self.drive.config.format_seconds:g} s)")
        self._start("format", self.drive.config.format_seconds, immediate)
        return Reply(GOOD)

    # ---- SANITIZE -------------------------------------------------------------------------

    def _sanitize(self, cdb: bytes, data: bytes) -> Reply:
        immediate, ause, action = bool(cdb[1] & 0x80), bool(cdb[1] & 0x20), cdb[1] & 0x1F
        length = int.from_bytes(cdb[7:9], "big")
        nv, cfg = self.drive.nv, self.drive.config
        if action == EXIT_FAILURE_MODE:
            if length:
                raise invalid_cdb("SANITIZE EXIT FAILURE MODE with a parameter list")
            if not (nv.sanitize_failed and nv.sanitize_ause):
                raise invalid_cdb("EXIT FAILURE MODE: not in failure mode after AUSE")
            nv.sanitize_failed = nv.sanitize_ause = False
            self.drive._save()
            self.log("SANITIZE EXIT FAILURE MODE: media accessible (data not erased)")
            return Reply(GOOD)
        name = SANITIZE_NAMES.get(action)
        if name is None or name in cfg.unsupported_sanitize:
            raise invalid_cdb(f"SANITIZE service action {action:#04x} not supported")
        pattern = b""
        if action == OVERWRITE:
            pattern = self._overwrite_pattern(length, data)
        elif length:
            raise invalid_cdb(f"SANITIZE {name} with a {length}-byte parameter list")
        fails = name in cfg.failing_sanitize
        if not fails:
            if action == BLOCK_ERASE:
                self.drive.data.erase_all()
            else:
                self._fill(pattern)
        self.log(f"SANITIZE {name.upper()}: started{' (immediate)' if immediate else ''}"
                 f"{' AUSE' if ause else ''}, {cfg.sanitize_seconds:g} s"
                 f"{', will fail' if fails else ''}")
        self._start(f"sanitize-{name}", cfg.sanitize_seconds, immediate, fails=fails, ause=ause)
        return Reply(GOOD)

    def _overwrite_pattern(self, length: int, data: bytes) -> bytes:
        """The pattern one block ends up holding (SBC-4 5.30.3: OVERWRITE COUNT passes,
        the pattern inverted between passes when INVERT is set)."""
        if length < 5 or len(data) < length:
            raise Rejected(ILLEGAL_REQUEST, PARAMETER_LIST_LENGTH_ERROR,
                           f"SANITIZE OVERWRITE: a {length}-byte parameter list")
        invert, test, count = bool(data[0] & 0x80), (data[0] >> 5) & 0x3, data[0] & 0x1F
        ipl = int.from_bytes(data[2:4], "big")
        if not count or test or not 0 < ipl <= self.block_size or 4 + ipl != length:
            raise Rejected(ILLEGAL_REQUEST, INVALID_FIELD_IN_PARAMETERS,
                           f"SANITIZE OVERWRITE: count {count}, test {test}, length {ipl}")
        pattern = data[4 : 4 + ipl]
        if invert and count % 2 == 0:
            pattern = bytes(b ^ 0xFF for b in pattern)
        return pattern

    def _fill(self, pattern: bytes) -> None:
        """Overwrite (``pattern`` repeated through each block) or, with no pattern, the
        crypto erase's scramble: what the old key's data reads as under a new one."""
        size, total = self.block_size, self.drive.config.size_bytes
        step = max(size, (1 << 20) // size * size)
        block = (pattern * (size // max(1, len(pattern)) + 1))[:size] if pattern else b""
        for off in range(0, total, step):
            n = min(step, total - off)
            self.drive.data.write(off, (block * (n // size + 1))[:n] if pattern
                                  else os.urandom(n))
        self.drive.data.flush()

    # ---- data -----------------------------------------------------------------------------

    def _rw(self, cdb: bytes, data: bytes) -> Reply:
        op = cdb[0]
        if op in (READ6, WRITE6):
            lba = ((cdb[1] & 0x1F) << 16) | (cdb[2] << 8) | cdb[3]
            count = cdb[4] or 256
        elif op in (READ10, WRITE10):
            lba, count = int.from_bytes(cdb[2:6], "big"), int.from_bytes(cdb[7:9], "big")
        elif op in (READ12, WRITE12):
            lba, count = int.from_bytes(cdb[2:6], "big"), int.from_bytes(cdb[6:10], "big")
        else:
            lba, count = int.from_bytes(cdb[2:10], "big"), int.from_bytes(cdb[10:14], "big")
        if op not in (READ6, WRITE6) and cdb[1] & 0xE0 and self.protection_type == 0:
            raise invalid_cdb("RDPROTECT/WRPROTECT on a drive without protection")
        if lba + count > self.blocks:
            raise Rejected(ILLEGAL_REQUEST, LBA_OUT_OF_RANGE, f"lba {lba} + {count}")
        size = self.block_size
        if op in (WRITE6, WRITE10, WRITE12, WRITE16):
            self.log(f"WRITE lba={lba} blocks={count} ({size} bytes)")
            self.drive.write(lba * size, data[: count * size].ljust(count * size, b"\0"))
            return Reply(GOOD)
        return Reply(GOOD, self.drive.read(lba * size, count * size))

    def _unmap(self, cdb: bytes, data: bytes) -> Reply:
        ranges = []
        for off in range(8, len(data) - 15, 16):
            lba, count = struct.unpack_from(">QI", data, off)
            if lba + count > self.blocks:
                raise Rejected(ILLEGAL_REQUEST, LBA_OUT_OF_RANGE, f"UNMAP lba {lba}")
            ranges.append((lba, count))
        for lba, count in ranges:
            self.drive.punch(lba * self.block_size, count * self.block_size)
        self.log(f"UNMAP {len(ranges)} ranges, {sum(c for _, c in ranges)} blocks")
        return Reply(GOOD)

    # ---- health: log pages, defects, self-tests ----------------------------------------------

    def _log_pages(self) -> dict[int, bytes]:
        p = self.profile
        gb = 11_523 * 10**9

        def counters(corrected: int, uncorrected: int) -> bytes:
            values = (corrected, 0, 0, corrected, corrected, gb, uncorrected)
            return b"".join(_param(i, v.to_bytes(8, "big"), 0x02) for i, v in enumerate(values))

        rows: list[tuple[int, int, int, int]] = []  # code, result, hours, LBA: newest first
        if self.self_test is not None:
            rows.append((self.self_test.code, 0x0F, p.hours, 0))  # in progress
        for code, result, hours, lba in self.drive.nv.scsi_self_test_log[::-1]:
            rows.append((int(code or 0), int(result or 0), int(hours or 0), int(lba or 0)))
        entries = b""
        for n in range(20):
            value = bytearray(16)
            if n < len(rows):
                code, result, hours, lba = rows[n]
                # the segment that failed (0: none; the emulated test has one)
                value[0], value[1] = (code << 5) | result, 1 if result == 7 else 0
                value[2:4] = min(hours, 0xFFFF).to_bytes(2, "big")
                value[4:12] = (lba if result == 7 else 2**64 - 1).to_bytes(8, "big")
                if result == 7:
                    value[12:15] = bytes([MEDIUM_ERROR, 0x11, 0x00])  # unrecovered read
            entries += _param(n + 1, bytes(value))
        pages = {
            0x02: counters(p.write_corrected, p.write_uncorrected),
            0x03: counters(p.read_corrected, p.read_uncorrected),
            0x06: _param(0, p.non_medium.to_bytes(4, "big"), 0x02),
            0x0D: _param(0, bytes([0, p.temperature])) + _param(1, bytes([0, 70])),
            0x10: entries,
            0x11: _param(1, bytes([0, 0, 0, p.percentage_used])),
            0x15: self._background_scan(),
            0x2F: _param(0, bytes([*p.ie, p.temperature, 70])),
        }
        return {0x00: bytes(sorted([0x00, *pages])), **pages}

    def _background_scan(self) -> bytes:
        """Log page 15h, Background Scan Results (SBC-4 6.4.2): its status parameter only
        (no medium scan entries): the accumulated power-on minutes, no scan active, the
        scans performed. Real SAS SSDs have it; smartctl -x reads it (-l background) and,
        on a drive without it, prints "Device does not support Background scan results
        logging" and sets its exit bit 2; smartctl -a takes its power-on time from it."""
        value = bytearray(12)
        value[0:4] = (self.profile.hours * 60).to_bytes(4, "big")
        value[5] = 0x00  # BMS status: no background scans active
        value[6:8] = (self.profile.hours // 24).to_bytes(2, "big")  # scans performed
        value[10:12] = (self.profile.hours // 24).to_bytes(2, "big")  # medium scans
        return _param(0, bytes(value))

    def _log_sense(self, cdb: bytes, data: bytes) -> Reply:
        if cdb[1] & 0xFC:
            raise invalid_cdb("LOG SENSE: reserved bits")
        if cdb[1] & 0x01:
            raise invalid_cdb("LOG SENSE: saving parameters not supported")
        page, subpage = cdb[2] & 0x3F, cdb[3]
        alloc = int.from_bytes(cdb[7:9], "big")
        pointer = int.from_bytes(cdb[5:7], "big")
        if subpage:
            raise invalid_cdb(f"LOG SENSE: subpage {subpage:#04x} not supported")
        self._tick()
        pages = self._log_pages()
        if page not in pages:
            raise invalid_cdb(f"LOG SENSE: page {page:#04x} not supported")
        body = pages[page]
        if pointer and page:  # only the parameters from the pointer on
            kept, off = b"", 0
            while off + 4 <= len(body):
                n = 4 + body[off + 3]
                if int.from_bytes(body[off : off + 2], "big") >= pointer:
                    kept += body[off : off + n]
                off += n
            body = kept
        out = bytes([page, 0]) + len(body).to_bytes(2, "big") + body
        return Reply(GOOD, out[:alloc])

    def _read_defect(self, cdb: bytes, data: bytes) -> Reply:
        ten = cdb[0] == READ_DEFECT10
        flags = cdb[2] if ten else cdb[1]
        fmt, glist, plist = flags & 0x07, bool(flags & 0x08), bool(flags & 0x10)
        if fmt in (1, 2, 7):
            raise invalid_cdb(f"READ DEFECT DATA: address format {fmt}")
        alloc = int.from_bytes(cdb[7:9] if ten else cdb[6:10], "big")
        count = self.profile.grown_defects if glist else 0
        length = count * (4 if fmt == 0 else 8)
        if ten:
            length = min(length, 0xFFFF - 4)
            header = bytes([0, (0x08 if glist else 0) | (0x10 if plist else 0) | fmt]) \
                + length.to_bytes(2, "big")
        else:
            header = bytes([0, (0x08 if glist else 0) | (0x10 if plist else 0) | fmt, 0, 0]) \
                + length.to_bytes(4, "big")
        return Reply(GOOD, (header + bytes(min(length, alloc)))[:alloc])

    def _send_diagnostic(self, cdb: bytes, data: bytes) -> Reply:
        code, selftest = cdb[1] >> 5, bool(cdb[1] & 0x04)
        length = int.from_bytes(cdb[3:5], "big")
        if selftest:
            if code:
                raise invalid_cdb("SEND DIAGNOSTIC: SELFTEST with a self-test code")
            return Reply(GOOD)  # the default self-test: passed at once
        if code == 0 and length == 0:
            return Reply(GOOD)
        if code == 4:  # abort the background self-test
            if self.self_test is not None:
                self._log_self_test(self.self_test.code, 1)
                self.self_test = None
            return Reply(GOOD)
        if code not in (1, 2, 5, 6) or length:
            raise invalid_cdb(f"SEND DIAGNOSTIC: self-test code {code}")
        if self.self_test is not None:
            raise Rejected(NOT_READY, SELF_TEST_IN_PROGRESS)
        seconds = self.drive.config.self_test_seconds * (4 if code in (2, 6) else 1)
        self.log(f"SEND DIAGNOSTIC: {'short' if code in (1, 5) else 'extended'} self-test "
                 f"({seconds:g} s)")
        self.self_test = SelfTest(code, time.monotonic(), seconds)
        if code in (5, 6):  # foreground: completes with the command
            time.sleep(seconds)
            self._tick()
        return Reply(GOOD)

    def _log_self_test(self, code: int, result: int) -> None:
        lba = self.profile.failing_lba if result == 7 else None
        log = self.drive.nv.scsi_self_test_log
        log.append([code, result, self.profile.hours, lba])
        del log[:-20]
        self.drive._save()
        self.log(f"self-test code {code}: result {result}")

    # ---- REPORT SUPPORTED OPERATION CODES ---------------------------------------------------

    def _supported(self) -> tuple[tuple[int, int | None, int], ...]:
        """SUPPORTED less the service actions the drive lacks (``unsupported_sanitize``),
        and less SANITIZE altogether when it has none (``sanitize = False``)."""
        cfg = self.drive.config
        if not cfg.sanitize:
            return tuple(s for s in SUPPORTED if s[0] != SANITIZE)
        lacking = {a for a, n in SANITIZE_NAMES.items() if n in cfg.unsupported_sanitize}
        return tuple(s for s in SUPPORTED if not (s[0] == SANITIZE and s[1] in lacking))

    def _maintenance_in(self, cdb: bytes, data: bytes) -> Reply:
        if cdb[1] & 0x1F != 0x0C:
            raise invalid_cdb(f"MAINTENANCE IN service action {cdb[1] & 0x1F:#04x}")
        option, opcode = cdb[2] & 0x07, cdb[3]
        action = int.from_bytes(cdb[4:6], "big")
        alloc = int.from_bytes(cdb[6:10], "big")
        supported = self._supported()
        if option == 0:
            descs = b"".join(
                bytes([op, 0]) + (sa or 0).to_bytes(2, "big")
                + bytes([0, 0x01 if sa is not None else 0]) + n.to_bytes(2, "big")
                for op, sa, n in supported)
            return Reply(GOOD, (len(descs).to_bytes(4, "big") + descs)[:alloc])
        if option not in (1, 2, 3):
            raise invalid_cdb(f"REPORT SUPPORTED OPERATION CODES option {option}")
        has_actions = any(op == opcode and sa is not None for op, sa, _ in supported)
        known = any(op == opcode for op, _, _ in supported)
        if (option == 1 and has_actions) or (option == 2 and known and not has_actions):
            raise invalid_cdb(f"REPORT SUPPORTED OPERATION CODES: {opcode:#04x} option {option}")
        match = [n for op, sa, n in supported
                 if op == opcode and (sa is None or sa == action)]
        if not match:
            return Reply(GOOD, bytes([0, 0x01, 0, 0])[:alloc])  # not supported
        n = match[0]
        usage = bytes([opcode]) + bytes([0xFF] * (n - 1))
        return Reply(GOOD, (bytes([0, 0x03]) + n.to_bytes(2, "big") + usage)[:alloc])
