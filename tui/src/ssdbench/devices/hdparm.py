"""`hdparm -I` output and hdparm's SG_IO error lines, parsed.

hdparm has no JSON, so this parser keys on words, never on tabs (mail clients turn tabs
into spaces; see tests/data/fixtures/hdparm/*WHITESPACE-MANGLED*).  In the Security
section a clear bit reads ``not<TAB>frozen`` and a set one ``<TAB><TAB>frozen``; when the
word is absent or replaced by ``(?)``, the bit counts as clear.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from ssdbench.devices.model import AtaIdentify, AtaSanitize, AtaSecurity, ParseError


class PassThroughUnavailable(ParseError):
    """IDENTIFY came back empty (a USB bridge or SATL rejected ATA PASS-THROUGH)."""

    def __init__(self, message: str, error: HdparmError | None = None) -> None:
        super().__init__(message)
        self.error = error


class HdparmErrorKind(StrEnum):
    FROZEN = "frozen"  # the drive aborted and is known to be security-frozen
    DRIVE_ABORTED = "drive-aborted"  # ATA ABRT from the drive: frozen, bad password, ...
    BRIDGE_REJECTED = "bridge-rejected"  # ILLEGAL REQUEST / INVALID FIELD IN CDB, no ATA regs
    TRANSPORT_ABORTED = "transport-aborted"  # ABORTED COMMAND with no ATA registers
    KERNEL_DSENSE_REGRESSION = "kernel-dsense-regression"  # fixed-format sense for success
    UNKNOWN = "unknown"


_EXPLANATIONS = {
    HdparmErrorKind.FROZEN: (
        "the drive refused the command because its security state is frozen "
        "(unfreeze by suspend-to-RAM or by hot-plugging the drive)"
    ),
    HdparmErrorKind.DRIVE_ABORTED: (
        "the drive aborted the command (security frozen, wrong password, or not permitted)"
    ),
    HdparmErrorKind.BRIDGE_REJECTED: (
        "ATA pass-through is not available: the USB bridge or SCSI layer rejected the "
        "command (ILLEGAL REQUEST, INVALID FIELD IN CDB) without reaching the drive"
    ),
    HdparmErrorKind.TRANSPORT_ABORTED: (
        "the bridge or SATL aborted the command without ATA status (typical of USB "
        "enclosures); the drive's answer is unknown"
    ),
    HdparmErrorKind.KERNEL_DSENSE_REGRESSION: (
        "the command succeeded but the kernel returned fixed-format sense that hdparm "
        "misreads (Linux 6.6.44 / 6.10.3 / 6.1.103 regression, reverted upstream): use "
        "another kernel"
    ),
    HdparmErrorKind.UNKNOWN: "hdparm reported an SG_IO error that ssdbench does not recognise",
}


@dataclass(frozen=True)
class HdparmError:
    """One `SG_IO: bad/missing sense data` line decoded."""

    kind: HdparmErrorKind
    sense: tuple[int, ...]
    response_code: int
    sense_key: int
    asc: int
    ascq: int
    ata_error: int | None
    ata_status: int | None

    @property
    def explanation(self) -> str:
        return _EXPLANATIONS[self.kind]


_SENSE_RE = re.compile(r"SG_IO: bad/missing sense data, sb\[\]:\s*((?:[0-9a-fA-F]{2}\s*)+)")


def classify_hdparm_error(text: str, *, frozen: bool | None = None) -> HdparmError | None:
    """Decode the first SG_IO sense line in hdparm's output (None when there is none).

    ``frozen`` is the drive's security state when known (from an earlier IDENTIFY): a
    drive-side abort of a frozen drive is reported as FROZEN.
    """
    m = _SENSE_RE.search(text)
    if m is None:
        return None
    sb = tuple(int(b, 16) for b in m.group(1).split())
    if len(sb) < 14:
        return HdparmError(HdparmErrorKind.UNKNOWN, sb, sb[0] if sb else 0, 0, 0, 0, None, None)
    code = sb[0] & 0x7F
    ata_error: int | None
    ata_status: int | None
    if code in (0x70, 0x71):  # fixed format
        key = sb[2] & 0x0F
        asc, ascq = sb[12], sb[13]
        # libata puts the ATA registers in the INFORMATION field (bytes 3..6) and in
        # COMMAND-SPECIFIC INFORMATION (8..11); either is zero when nothing came back.
        info = sb[3:7]
        csi = sb[8:12]
        if any(info):
            ata_error, ata_status = info[0], info[1]
        elif any(csi):
            ata_error, ata_status = csi[0], csi[1]
        else:
            ata_error = ata_status = None
    elif code in (0x72, 0x73):  # descriptor format
        key = sb[1] & 0x0F
        asc, ascq = sb[2], sb[3]
        ata_error = sb[11] if len(sb) > 13 and sb[8] == 0x09 else None
        ata_status = sb[21] if len(sb) > 21 and sb[8] == 0x09 else None
    else:
        return HdparmError(HdparmErrorKind.UNKNOWN, sb, sb[0], 0, 0, 0, None, None)

    if key == 0x01 and asc == 0x00 and ascq == 0x1D and code in (0x70, 0x71):
        # RECOVERED ERROR, "ATA PASS-THROUGH INFORMATION AVAILABLE" in fixed format:
        # the command worked, hdparm expected descriptor format.
        kind = HdparmErrorKind.KERNEL_DSENSE_REGRESSION
    elif ata_error is not None and ata_error & 0x04 and (ata_status or 0) & 0x01:
        kind = HdparmErrorKind.FROZEN if frozen else HdparmErrorKind.DRIVE_ABORTED
    elif key == 0x05 and ata_error is None:
        kind = HdparmErrorKind.BRIDGE_REJECTED
    elif key == 0x0B and ata_error is None:
        kind = HdparmErrorKind.TRANSPORT_ABORTED
    else:
        kind = HdparmErrorKind.UNKNOWN
    return HdparmError(kind, sb, sb[0], key, asc, ascq, ata_error, ata_status)


_SECURITY_WORDS = {
    "supported": "supported",
    "enabled": "enabled",
    "locked": "locked",
    "frozen": "frozen",
    "expired: security count": "expired",
    "supported: enhanced erase": "enhanced",
}
_ERASE_RE = re.compile(
    r"(more than\s+)?(\d+)\s*min for (ENHANCED )?SECURITY ERASE UNIT", re.IGNORECASE
)


def _section_lines(text: str) -> dict[str, list[str]]:
    """Split `hdparm -I` into sections: a line at column 0 ending in ':' starts one.

    Lines at column 0 that do not end in ':' are continuations (a wrapped Transport line)
    or headers such as "ATA device, with non-removable media"; both go to the current
    section (the header goes to "").
    """
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for raw in text.splitlines():
        if not raw.strip():
            continue
        if raw[0] not in " \t":
            stripped = raw.strip()
            head = stripped.split(":", 1)[0]
            if re.fullmatch(r"[A-Za-z][A-Za-z/ -]*", head) and (
                stripped.endswith(":") or head in ("Security", "Checksum")
            ):
                current = head
                sections.setdefault(current, [])
                rest = stripped[len(head) + 1 :].strip()
                if rest:
                    sections[current].append(rest)
                continue
            if stripped.startswith("Logical Unit WWN"):
                current = "WWN"
                sections.setdefault(current, []).append(stripped)
                continue
        sections[current].append(raw.strip())
    return sections


def _field(lines: list[str], key: str) -> str | None:
    for line in lines:
        k, sep, v = line.partition(":")
        if sep and re.sub(r"\s+", " ", k.strip()) == key:
            return v.strip()
    return None


# an LBA48 sector count is a 48-bit field of IDENTIFY (ATA8-ACS words 100-103)
MAX_LBA48_SECTORS = 2**48 - 1


def _int_after(lines: list[str], pattern: str) -> int | None:
    rx = re.compile(pattern)
    for line in lines:
        m = rx.search(line)
        if m:
            digits = m.group(1)
            if len(digits) > 20:  # int() of 4300+ digits raises ValueError, not ours
                raise ParseError(f"hdparm -I: {line.strip()[:40]}…: a {len(digits)}-digit "
                                 "number")
            return int(digits)
    return None


def parse_hdparm_identify(text: str) -> AtaIdentify:
    """Parse `hdparm -I DEV` output.

    Raises PassThroughUnavailable when the identify is empty (no model, zero size, often
    after an SG_IO sense line): hdparm exits 0 in that case, but nothing was read.
    """
    sections = _section_lines(text)
    header = sections.get("", [])
    device_line = next((line for line in header if "ATA device" in line), None)
    config = sections.get("Configuration", [])
    model = _field(header, "Model Number")
    if not model:
        error = classify_hdparm_error(text)
        detail = f": {error.explanation}" if error else ""
        if device_line is None and error is None:
            raise ParseError("hdparm -I: no 'ATA device' header and no model: not hdparm -I")
        raise PassThroughUnavailable(
            "hdparm -I returned an empty IDENTIFY (no model number)" + detail, error
        )
    serial = _field(header, "Serial Number") or ""
    firmware = _field(header, "Firmware Revision") or ""
    transport = _field(header, "Transport") or ""

    lba48 = _int_after(config, r"LBA48\s+user addressable sectors:\s*(\d+)")
    lba28 = _int_after(config, r"LBA\s+user addressable sectors:\s*(\d+)")
    sectors = lba48 if lba48 else lba28
    if sectors is not None and sectors > MAX_LBA48_SECTORS:
        raise ParseError(f"hdparm -I: {sectors} user addressable sectors: more than 48 bits "
                         "hold")
    both = _int_after(config, r"Logical/Physical Sector size:\s*(\d+)")
    logical = _int_after(config, r"Logical\s+Sector size:\s*(\d+)") or both
    physical = _int_after(config, r"Physical Sector size:\s*(\d+)") or both
    rotation: int | None = None
    rot = _field(config, "Nominal Media Rotation Rate")
    if rot is not None:
        words = rot.split()  # may be empty: "Nominal Media Rotation Rate:" and nothing
        if "Solid State" in rot:
            rotation = 0
        elif words and words[0].isdigit():
            rotation = int(words[0])
    if not sectors:
        raise PassThroughUnavailable("hdparm -I reported zero user addressable sectors")

    features: list[str] = []
    enabled: list[str] = []
    for line in sections.get("Commands/features", []):
        if line.startswith("Enabled") and "Supported" in line:
            continue
        star = line.startswith("*")
        name = re.sub(r"\s+", " ", line.lstrip("*").strip())
        if not name:
            continue
        features.append(name)
        if star:
            enabled.append(name)

    def has(prefix: str) -> bool:
        return any(f.startswith(prefix) for f in features)

    trim_line = next((f for f in features if f.startswith("Data Set Management TRIM supported")),
                     None)
    trim_limit = None
    if trim_line:
        m = re.search(r"limit (\d+) block", trim_line)
        trim_limit = int(m.group(1)) if m else None
    rzat = has("Deterministic read ZEROs after TRIM")
    drat = rzat or has("Deterministic read data after TRIM")
    sanitize = AtaSanitize(
        supported=has("SANITIZE feature set"),
        block_erase=has("BLOCK_ERASE_EXT command"),
        crypto_scramble=has("CRYPTO_SCRAMBLE_EXT command"),
        overwrite=has("OVERWRITE_EXT command"),
        antifreeze_lock=has("SANITIZE_ANTIFREEZE_LOCK_EXT command"),
    )
    security = _parse_security(sections["Security"]) if "Security" in sections else None
    return AtaIdentify(
        model=model,
        serial=serial,
        firmware=firmware,
        transport_line=transport,
        sectors=sectors,
        logical_block_size=logical,
        physical_block_size=physical,
        rotation_rpm=rotation,
        trim_supported=trim_line is not None,
        trim_limit_blocks=trim_limit,
        drat=drat,
        rzat=rzat,
        security=security,
        sanitize=sanitize,
        features=tuple(features),
        enabled_features=tuple(enabled),
        cfa=any(line.startswith("CompactFlash") for line in header),
    )


def _parse_security(lines: list[str]) -> AtaSecurity:
    bits = dict.fromkeys(_SECURITY_WORDS.values(), False)
    erase: int | None = None
    enhanced: int | None = None
    erase_lb = enhanced_lb = False
    revision: int | None = None
    level: str | None = None
    for line in lines:
        words = line.split()
        if not words:
            continue
        if line.startswith("Master password revision code"):
            revision = int(words[-1]) if words[-1].isdigit() else None
            continue
        if line.startswith("Security level"):
            level = words[-1]
            continue
        if _ERASE_RE.search(line):
            for m in _ERASE_RE.finditer(line):
                minutes = int(m.group(2))
                lower = m.group(1) is not None
                if m.group(3):
                    enhanced, enhanced_lb = minutes, lower
                else:
                    erase, erase_lb = minutes, lower
            continue
        negated = words[0] in ("not", "(?)")
        rest = " ".join(words[1:] if negated else words)
        key = _SECURITY_WORDS.get(rest)
        if key is not None:
            bits[key] = not negated
    return AtaSecurity(
        supported=bits["supported"],
        enabled=bits["enabled"],
        locked=bits["locked"],
        frozen=bits["frozen"],
        expired=bits["expired"],
        enhanced_supported=bits["enhanced"],
        erase_minutes=erase,
        enhanced_erase_minutes=enhanced,
        erase_minutes_lower_bound=erase_lb,
        enhanced_erase_minutes_lower_bound=enhanced_lb,
        master_password_revision=revision,
        level=level,
    )
