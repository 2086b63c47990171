"""SAS / SCSI drives: what sg3_utils reports about them, parsed into frozen dataclasses.

Discovery (devices/discover.py) asks a SAS/SCSI disk two things, the erase room
(erase/scsi.py) the same and more:

* ``sg_opcodes DEV`` (REPORT SUPPORTED OPERATION CODES, a table): which SANITIZE (48h)
  service actions the drive lists (01h overwrite, 02h block erase, 03h cryptographic
  erase) and whether it has FORMAT UNIT (04h).
* ``sg_readcap -l DEV`` (READ CAPACITY(16)): blocks, block length, protection type; the
  only place a drive formatted with 520 or 528-byte blocks (storage arrays leave SAS
  drives so) says so: the kernel's sd gives it capacity 0 and keeps 512 in sysfs
  ("Unsupported sector size 520").

The identity itself (vendor, product, revision, the Unit Serial Number VPD page) is what the
kernel read with INQUIRY (sysfs) and smartctl's SCSI JSON, which discovery runs anyway.
Captures of each tool (sg3_utils 1.46, the emulated SAS drive of docs/ata-emulator.md in
QEMU) are in tests/data/sas-emu/. Every output is untrusted: a line that does not say what
it should is a ParseError, never a default.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ssdbench.devices.errors import ParseError

SANITIZE_OPCODE, FORMAT_UNIT_OPCODE = 0x48, 0x04
SANITIZE_OVERWRITE_ACTION, SANITIZE_BLOCK_ACTION, SANITIZE_CRYPTO_ACTION = 0x01, 0x02, 0x03
# the block lengths Linux's sd reads and writes (it refuses 520 and 528: capacity 0)
KERNEL_BLOCK_SIZES = (512, 1024, 2048, 4096)
MAX_BLOCK = 1 << 16
MAX_LINE = 400  # longer than any line sg3_utils prints: not its output


@dataclass(frozen=True)
class Capacity:
    """``sg_readcap -l``: READ CAPACITY(16)."""

    blocks: int
    block_size: int
    protection_type: int  # 0: none; 1..3: PROT_EN set, P_TYPE + 1

    @property
    def size_bytes(self) -> int:
        return self.blocks * self.block_size

    @property
    def kernel_usable(self) -> bool:
        """Whether Linux's sd can use the block length (else it shows capacity 0)."""
        return self.block_size in KERNEL_BLOCK_SIZES

    def to_dict(self) -> dict[str, int]:
        return {"block_size": self.block_size, "blocks": self.blocks,
                "size_bytes": self.size_bytes, "protection_type": self.protection_type}


@dataclass(frozen=True)
class Opcodes:
    """``sg_opcodes``: what REPORT SUPPORTED OPERATION CODES lists (``listed`` False: the
    drive did not answer it, so nothing is known)."""

    listed: bool
    sanitize_actions: frozenset[int] = frozenset()
    format_unit: bool = False

    @property
    def sanitize(self) -> bool:
        """A SANITIZE that erases (overwrite, block or crypto), listed."""
        return bool(self.sanitize_actions & {SANITIZE_OVERWRITE_ACTION, SANITIZE_BLOCK_ACTION,
                                             SANITIZE_CRYPTO_ACTION})


def lines_of(text: str, tool: str) -> list[str]:
    lines = text.splitlines()
    if any(len(line) > MAX_LINE for line in lines):
        raise ParseError(f"{tool}: a line of more than {MAX_LINE} characters: not its output")
    return lines


def parse_readcap(text: str) -> Capacity:
    """``sg_readcap -l``'s "Number of logical blocks=N", "Logical block length=N bytes" and
    "Protection: prot_en=N, p_type=N"."""
    lines_of(text, "sg_readcap")
    blocks = re.search(r"Number of logical blocks=(\d{1,20})\b", text)
    size = re.search(r"Logical block length=(\d{1,10}) bytes", text)
    prot = re.search(r"Protection: prot_en=([01]), p_type=([0-7])\b", text)
    if blocks is None or size is None or prot is None:
        raise ParseError("sg_readcap: no block count, block length or protection line")
    count, block = int(blocks.group(1)), int(size.group(1))
    if not 0 < count < 2**64 or not 0 < block <= MAX_BLOCK:
        raise ParseError(f"sg_readcap: {count} blocks of {block} bytes: not a drive")
    ptype = int(prot.group(2)) + 1 if prot.group(1) == "1" else 0
    if ptype > 3:
        raise ParseError(f"sg_readcap: protection type {ptype} (SBC-4 knows 1 to 3)")
    return Capacity(count, block, ptype)


# " 48        1        10    0,0    Sanitize, overwrite" / " 04      6    0,0    Format Unit"
_OPCODE_ROW = re.compile(r"\s*([0-9a-f]{2})(?:\s+([0-9a-f]{1,4}))?\s+(\d{1,2})\s+\d+,\d+\s+\S",
                         re.IGNORECASE)


def parse_opcodes(text: str) -> Opcodes:
    """``sg_opcodes``' table: each row's opcode, service action and CDB size."""
    lines = lines_of(text, "sg_opcodes")
    if not any(line.startswith("Opcode") for line in lines):
        raise ParseError("sg_opcodes: no table of operation codes")
    actions: set[int] = set()
    format_unit = False
    for line in lines:
        row = _OPCODE_ROW.match(line)
        if row is None:
            continue
        opcode = int(row.group(1), 16)
        if opcode == SANITIZE_OPCODE and row.group(2) is not None:
            actions.add(int(row.group(2), 16))
        format_unit = format_unit or opcode == FORMAT_UNIT_OPCODE
    return Opcodes(True, frozenset(actions), format_unit)
