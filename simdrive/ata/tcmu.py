"""The kernel side of the emulated ATA drive: a LIO TCMU user backstore behind tcm_loop.

``target_core_user`` hands every SCSI command of its backstore to user space through a UIO
device (/dev/uioN): a mailbox, a command ring and a data area in one mmap
(include/uapi/linux/target_core_user.h, Documentation/target/tcmu-design.rst). Its
``passthrough_parse_cdb`` emulates only REPORT LUNS and persistent reservations, so ATA
PASS-THROUGH (12/16) from ``hdparm`` reaches the handler as it is. ``tcm_loop`` turns the
backstore into a local SCSI host (a ``naa.`` WWN makes it a SAS-like transport) where ``sd``
attaches a /dev/sdX. Configuration goes through configfs directly (what rtslib does).
"""

from __future__ import annotations

import mmap
import os
import struct
import subprocess
import time
import traceback
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

CONFIGFS = Path("/sys/kernel/config")
TARGET = CONFIGFS / "target"

# struct tcmu_mailbox
MB_CMDR_OFF, MB_CMDR_SIZE, MB_CMD_HEAD, MB_CMD_TAIL = 4, 8, 12, 64
# struct tcmu_cmd_entry: the packed header, then the (naturally aligned) req/rsp union:
# req.iov_cnt @8, req.cdb_off @24, req.iov[] @48; rsp.scsi_status @8, read_len @12, sense @16
OP_PAD, OP_CMD = 0, 1
UFLAG_UNKNOWN_OP, UFLAG_READ_LEN = 0x1, 0x2
SENSE_BUFFERSIZE = 96
GOOD, CHECK_CONDITION = 0x00, 0x02
# fixed-format sense: HARDWARE ERROR, INTERNAL TARGET FAILURE (0x44/0x00)
HARDWARE_ERROR_SENSE = bytes([0x70, 0, 0x04, 0, 0, 0, 0, 10, 0, 0, 0, 0, 0x44, 0, 0, 0, 0, 0])


@dataclass(frozen=True)
class Reply:
    """The answer to one SCSI command: status, data-in bytes, sense bytes."""

    status: int = GOOD
    data: bytes = b""
    sense: bytes = b""


Handler = Callable[[bytes, bytes], Reply]  # (cdb, data-out) -> Reply


def cdb_length(opcode: int) -> int:
    group = opcode >> 5
    return {0: 6, 1: 10, 2: 10, 4: 16, 5: 12}.get(group, 16)


class Ring:
    """The mmapped command ring of one TCMU device; ``serve`` answers commands forever."""

    mm: mmap.mmap | bytearray  # a bytearray in the tests

    def __init__(self, uio: str) -> None:
        name = Path(uio).name
        size = int((Path("/sys/class/uio") / name / "maps/map0/size").read_text(), 16)
        self.fd = os.open(uio, os.O_RDWR)
        self.mm = mmap.mmap(self.fd, size)

    def _u32(self, off: int) -> int:
        return int(struct.unpack_from("<I", self.mm, off)[0])

    def _handle_entry(self, ent: int, handler: Handler) -> None:
        iov_cnt = self._u32(ent + 8)
        (cdb_off,) = struct.unpack_from("<Q", self.mm, ent + 24)
        iovs = [struct.unpack_from("<QQ", self.mm, ent + 48 + 16 * i) for i in range(iov_cnt)]
        opcode = self.mm[cdb_off]
        cdb = bytes(self.mm[cdb_off : cdb_off + cdb_length(opcode)])
        data_out = b"".join(bytes(self.mm[b : b + n]) for b, n in iovs)
        try:
            reply = handler(cdb, data_out)
        except Exception:  # a bug in the drive must not hang the guest's I/O
            traceback.print_exc()
            reply = Reply(CHECK_CONDITION, sense=HARDWARE_ERROR_SENSE)
        capacity = sum(n for _, n in iovs)
        data = reply.data[:capacity]
        pos = 0
        for base, n in iovs:
            chunk = data[pos : pos + n]
            if not chunk:
                break
            self.mm[base : base + len(chunk)] = chunk
            pos += len(chunk)
        # rsp overlays req: everything above was read before this point.
        self.mm[ent + 8] = reply.status
        sense = reply.sense[:SENSE_BUFFERSIZE].ljust(SENSE_BUFFERSIZE, b"\0")
        self.mm[ent + 16 : ent + 16 + SENSE_BUFFERSIZE] = sense
        struct.pack_into("<I", self.mm, ent + 12, len(data))
        if reply.data:
            # With CHECK CONDITION the kernel passes data on only with READ_LEN (SAT's
            # ATA PASS-THROUGH with CK_COND returns both data and the ATA Return descriptor).
            self.mm[ent + 7] = self.mm[ent + 7] | UFLAG_READ_LEN

    def process(self, handler: Handler) -> int:
        cmdr_off, cmdr_size = self._u32(MB_CMDR_OFF), self._u32(MB_CMDR_SIZE)
        done = 0
        while True:
            head, tail = self._u32(MB_CMD_HEAD), self._u32(MB_CMD_TAIL)
            if head == tail:
                return done
            ent = cmdr_off + tail
            len_op = self._u32(ent)
            if len_op & 0x7 == OP_CMD:
                self._handle_entry(ent, handler)
                done += 1
            elif len_op & 0x7 != OP_PAD:
                self.mm[ent + 7] = self.mm[ent + 7] | UFLAG_UNKNOWN_OP
            struct.pack_into("<I", self.mm, MB_CMD_TAIL, (tail + (len_op & ~0x7)) % cmdr_size)

    def serve(self, handler: Handler) -> None:
        while True:
            if self.process(handler):
                os.write(self.fd, struct.pack("<I", 0))  # tell the kernel: entries completed
            os.read(self.fd, 4)  # blocks until the kernel queues more


def _write(path: Path, text: str) -> None:
    path.write_text(text, encoding="ascii")


def create_backstore(name: str, size_bytes: int, *, hba: int = 0) -> str:
    """A user backstore ``user_<hba>/<name>``; returns its /dev/uioN."""
    if not (TARGET / "core").exists():
        subprocess.run(["modprobe", "target_core_user"], check=True)
        subprocess.run(["modprobe", "tcm_loop"], check=True)
        # sd_mod too: the kernel's own request_module may not find modprobe (initramfs root).
        subprocess.run(["modprobe", "sd_mod"], check=True)
        if not TARGET.exists():
            subprocess.run(["mount", "-t", "configfs", "configfs", str(CONFIGFS)], check=False)
    dev = TARGET / "core" / f"user_{hba}" / name
    dev.mkdir(parents=True)
    _write(dev / "control", f"dev_config=ata/{name}")
    _write(dev / "control", f"dev_size={size_bytes}")
    _write(dev / "enable", "1")
    want = f"tcm-user/{hba}/{name}/ata/{name}"
    deadline = time.monotonic() + 10.0
    while time.monotonic() < deadline:
        for uio in Path("/sys/class/uio").glob("uio*"):
            if (uio / "name").read_text().strip() == want:
                return f"/dev/{uio.name}"
        time.sleep(0.05)
    raise RuntimeError(f"no /sys/class/uio device named {want}")


def attach_loopback(name: str, *, hba: int = 0, wwn: str = "naa.5001405000000a1a") -> None:
    """A tcm_loop SCSI host with the backstore as LUN 0; sd attaches /dev/sdX."""
    tpg = TARGET / "loopback" / wwn / "tpgt_1"
    tpg.mkdir(parents=True)
    # The nexus first, then the LUN: linking the LUN adds the SCSI device (what rtslib does).
    _write(tpg / "nexus", "naa.5001405000000b1b")
    lun = tpg / "lun" / "lun_0"
    lun.mkdir(parents=True)
    os.symlink(TARGET / "core" / f"user_{hba}" / name, lun / name)


def find_block_device(wwn_hint: str = "", timeout_s: float = 20.0) -> str:
    """The /dev/sdX whose SCSI host is tcm_loop's."""
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        for blk in sorted(Path("/sys/block").glob("sd*")):
            # /sys/devices/tcm_loop_0/tcm_loop_adapter_0/hostN/targetN:0:1/N:0:1:0
            if "/tcm_loop" in os.path.realpath(blk / "device"):
                return f"/dev/{blk.name}"
        time.sleep(0.05)
    raise RuntimeError("no /dev/sdX on a tcm_loop host appeared")
