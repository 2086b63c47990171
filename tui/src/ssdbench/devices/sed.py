"""Self-encrypting drives: TCG Opal / Opal 1 / Pyrite / Enterprise / Ruby detection and the
locked state, from the TCG Level 0 Discovery response.

Two sources, one model (:class:`SedState`):

* ``nvme security-recv DEV --secp=1 --spsp=1 --size=2048 --al=2048 --raw-binary``: the Level 0
  Discovery response itself (binary), asked for when ``nvme id-ctrl`` OACS bit 0 says the
  controller has Security Send/Receive. :func:`parse_level0` reads it.
* ``sedutil-cli --query DEV`` (sedutil is in the Buildroot image, not in Debian): its printout
  of the same response (sedutil's ``DtaDev::puke``). :func:`parse_sedutil_query` reads it.
  SATA drives need ``libata.allow_tpm=1`` on the kernel command line for TRUSTED SEND/RECEIVE.

Layout (TCG Storage Architecture Core Spec 2.01, 3.3.6 "Level 0 Discovery"): a 48-byte header
(bytes 0-3: length of what follows them, big-endian; 4-7: version), then feature descriptors:
2 bytes feature code, 1 byte version (high nibble), 1 byte length of the data that follows.
The Locking feature (0x0002) byte 4: bit 0 LockingSupported, 1 LockingEnabled, 2 Locked,
3 MediaEncryption, 4 MBREnabled, 5 MBRDone. Tested on public captures (tests/data/sed, each
file names its source).
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.errors import ParseError
from ssdbench.system import CommandError, Host

LEVEL0_BYTES = 2048  # sedutil's MIN_BUFFER_LENGTH; what nvme security-recv asks for

FEATURE_TPER = 0x0001
FEATURE_LOCKING = 0x0002
FEATURE_GEOMETRY = 0x0003
# The security subsystem classes (SSC) a drive can implement, by feature code.
SSC_NAMES = {
    0x0100: "Enterprise",
    0x0200: "Opal 1",
    0x0203: "Opal 2",
    0x0301: "Opalite",
    0x0302: "Pyrite 1",
    0x0303: "Pyrite 2",
    0x0304: "Ruby",
}
FEATURE_NAMES = {
    FEATURE_TPER: "TPer", FEATURE_LOCKING: "Locking", FEATURE_GEOMETRY: "Geometry",
    0x0201: "Single User Mode", 0x0202: "DataStore", 0x0402: "Block SID Authentication",
    0x0403: "Configurable Namespace Locking", 0x0404: "Data Removal Mechanism",
    **SSC_NAMES,
}

UNLOCK_ADVICE = (
    "unlock it with its Opal password (sedutil-cli --setlockingrange 0 rw PASSWORD DEV, and "
    "--setmbrdone on PASSWORD DEV when a shadow MBR is shown), or, without the password, "
    "PSID revert it (the 32-character PSID on the drive's label; erases everything) and erase "
    "it again"
)


@dataclass(frozen=True)
class SedState:
    """What the Level 0 Discovery says about one drive."""

    source: str  # "nvme security-recv" | "sedutil-cli --query"
    ssc: tuple[str, ...]  # "Opal 2", "Pyrite 1", "Enterprise", ... (empty: no TCG SSC)
    features: tuple[int, ...]  # every feature code in the response, in order
    locking_supported: bool = False
    locking_enabled: bool = False
    locked: bool = False
    media_encryption: bool = False
    mbr_enabled: bool = False
    mbr_done: bool = False

    @property
    def shadow_mbr(self) -> bool:
        """The drive shows its shadow MBR instead of the data (MBREnabled, not MBRDone)."""
        return self.mbr_enabled and not self.mbr_done

    @property
    def blocks_erase(self) -> bool:
        return self.locked or (self.locking_enabled and self.shadow_mbr)

    @property
    def lock_reason(self) -> str:
        """Why the drive cannot be erased now ("" when it can)."""
        if not self.blocks_erase:
            return ""
        ssc = "/".join(self.ssc) or "TCG"
        if self.locked:
            why = f"{ssc} locking range locked (Level 0 Discovery: Locked = Y)"
            if self.shadow_mbr:
                why += " and the shadow MBR is shown (MBREnabled = Y, MBRDone = N)"
            return why
        return f"{ssc} shadow MBR shown instead of the data (MBREnabled = Y, MBRDone = N)"

    def to_json(self) -> dict[str, Any]:
        return {
            "source": self.source,
            "ssc": list(self.ssc),
            "features": [f"0x{code:04x}" for code in self.features],
            "locking_supported": self.locking_supported,
            "locking_enabled": self.locking_enabled,
            "locked": self.locked,
            "media_encryption": self.media_encryption,
            "mbr_enabled": self.mbr_enabled,
            "mbr_done": self.mbr_done,
            "blocks_erase": self.blocks_erase,
            "lock_reason": self.lock_reason,
            "advice": UNLOCK_ADVICE if self.blocks_erase else "",
        }


def parse_level0(data: bytes) -> SedState:
    """The Level 0 Discovery response (Security Receive, protocol 1, ComID 0x0001).

    A descriptor cut short by the buffer keeps what it has (a capture may hold fewer bytes
    than the header's length); a length of zero or fewer than the header's 48 bytes means the
    drive answered nothing (not a TCG drive)."""
    if len(data) < 48:
        raise ParseError(f"Level 0 Discovery: {len(data)} bytes, fewer than the 48-byte header")
    total = int.from_bytes(data[0:4], "big") + 4
    if total <= 4:
        raise ParseError("Level 0 Discovery: length 0 (no TCG security subsystem answered)")
    end = min(total, len(data))
    offset = 48
    features: list[int] = []
    locking: int | None = None
    while offset + 4 <= end:
        code = int.from_bytes(data[offset:offset + 2], "big")
        length = data[offset + 3]
        body = data[offset + 4:min(offset + 4 + length, end)]
        features.append(code)
        if code == FEATURE_LOCKING and body:
            locking = body[0]
        offset += 4 + length
    if not features:
        raise ParseError("Level 0 Discovery: no feature descriptor after the header")
    bits = locking or 0
    return SedState(
        source="nvme security-recv",
        ssc=tuple(SSC_NAMES[c] for c in features if c in SSC_NAMES),
        features=tuple(features),
        locking_supported=bool(bits & 0x01),
        locking_enabled=bool(bits & 0x02),
        locked=bool(bits & 0x04),
        media_encryption=bool(bits & 0x08),
        mbr_enabled=bool(bits & 0x10),
        mbr_done=bool(bits & 0x20),
    )


_FUNCTION = re.compile(r"^(?P<name>.*?)\s*function \((?P<code>0x[0-9a-fA-F]+)\)", re.M)
_FLAG = re.compile(r"(\w[\w ]*?)\s*=\s*([YN])\b")
# sedutil 1.20 prints Opal 2 as "(0x0203)" but 1.49 forks also print Pyrite and Ruby by name
_SSC_BY_NAME = {"opal 2": "Opal 2", "opal v1.0": "Opal 1", "enterprise": "Enterprise",
                "pyrite": "Pyrite 1", "pyrite 2": "Pyrite 2", "ruby": "Ruby", "opalite": "Opalite"}


def parse_sedutil_query(text: str) -> SedState:
    """``sedutil-cli --query DEV``: the feature headers ``Name function (0xNNNN)`` and the
    ``Locked = Y, LockingEnabled = Y, ...`` line under the Locking function."""
    found = list(_FUNCTION.finditer(text))
    if not found:
        raise ParseError(f"sedutil-cli --query: no 'function (0x...)' line in "
                         f"{text.strip()[:200]!r}")
    features = tuple(int(m.group("code"), 16) for m in found)
    ssc: list[str] = []
    for m in found:
        code = int(m.group("code"), 16)
        if code in SSC_NAMES:
            ssc.append(SSC_NAMES[code])
        else:
            name = m.group("name").strip().lower()
            for key, label in _SSC_BY_NAME.items():
                if name.startswith(key) and label not in ssc:
                    ssc.append(label)
    flags: dict[str, bool] = {}
    for i, m in enumerate(found):
        if int(m.group("code"), 16) != FEATURE_LOCKING:
            continue
        stop = found[i + 1].start() if i + 1 < len(found) else len(text)
        for key, value in _FLAG.findall(text[m.end():stop]):
            flags[key.strip().lower()] = value == "Y"
    return SedState(
        source="sedutil-cli --query",
        ssc=tuple(dict.fromkeys(ssc)),
        features=features,
        # sedutil 1.49 drops "LockingSupported" from the line: the feature being there says it
        locking_supported=flags.get("lockingsupported", FEATURE_LOCKING in features),
        locking_enabled=flags.get("lockingenabled", False),
        locked=flags.get("locked", False),
        media_encryption=flags.get("mediaencrypt", False),
        mbr_enabled=flags.get("mbrenabled", False),
        mbr_done=flags.get("mbrdone", False),
    )


_SCAN_LINE = re.compile(
    r"^(?P<dev>/dev/\S+|\\\\\.\\\S+)\s+(?P<code>No\b|[12EPR]+\b)\s*(?P<rest>.*)$")
_SCAN_CODES = {"1": "Opal 1", "2": "Opal 2", "E": "Enterprise"}


@dataclass(frozen=True)
class ScanEntry:
    """One ``sedutil-cli --scan`` line: the device and its SSCs (empty: "No")."""

    device: str
    ssc: tuple[str, ...]
    codes: str  # as printed: "12", "E", "No", ...
    model: str


def parse_sedutil_scan(text: str) -> list[ScanEntry]:
    """``sedutil-cli --scan``: ``/dev/sdb   1   MODEL FIRMWARE`` or ``/dev/sda   No``.
    sedutil 1.20 prints 1 (Opal 1), 2 (Opal 2), E (Enterprise); a letter it does not know
    (forks print more) is kept in ``codes`` and not named."""
    entries: list[ScanEntry] = []
    for line in text.splitlines():
        m = _SCAN_LINE.match(line.strip())
        if m is None:
            continue
        codes = m.group("code")
        ssc = () if codes == "No" else tuple(_SCAN_CODES[c] for c in codes if c in _SCAN_CODES)
        entries.append(ScanEntry(m.group("dev"), ssc, codes, m.group("rest").strip()))
    if not entries and "Scanning for Opal" not in text:
        raise ParseError(f"sedutil-cli --scan: no device line in {text.strip()[:200]!r}")
    return entries


def level0_from_hexdump(text: str) -> bytes:
    """The bytes of a hex dump as sedutil (``0030 0001100c 11000000 ...``) or nvmetool-win
    (``0x030  00  01  10  0C ...``) print it: a test helper for captures posted as text, also
    used by ``ssdbench bundle`` replays. Lines not starting with an offset are skipped; the
    ASCII column is dropped."""
    out = bytearray()
    for line in text.splitlines():
        if line.startswith("#"):
            continue
        parts = line.split()
        if not parts or not re.fullmatch(r"(0x)?[0-9a-fA-F]{3,8}", parts[0]):
            continue
        row = bytearray()
        for tok in parts[1:]:  # 4 groups of 8 digits, or 16 of 2; then the ASCII column
            if len(row) >= 16 or len(tok) not in (2, 8) or not re.fullmatch(r"[0-9a-fA-F]+", tok):
                break
            row += bytes.fromhex(tok)
        out += row
    return bytes(out)


def nvme_level0_argv(controller_path: str) -> list[str]:
    return ["nvme", "security-recv", controller_path, "--secp=1", "--spsp=1",
            f"--size={LEVEL0_BYTES}", f"--al={LEVEL0_BYTES}", "--raw-binary"]


def sedutil_query_argv(path: str) -> list[str]:
    return ["sedutil-cli", "--query", path]


SED_TIMEOUT_S = 20.0


def read_sed(host: Host, *, transport: str, path: str, controller_path: str | None = None,
             nvme_security: bool = False) -> SedState | None:
    """The drive's TCG state, or None when it has none or it could not be read.

    NVMe: ``nvme security-recv`` on the controller when ``nvme_security`` (id-ctrl OACS
    bit 0: Security Send/Receive) is set (no answer, no
    SSC). SATA: ``sedutil-cli --query`` (in the Buildroot image; the dev image has no sedutil,
    so SATA drives there show no TCG state). A failure is not a discovery problem: most drives
    are no SEDs, and a drive that does not answer is treated like one (docs/erase.md)."""
    try:
        if transport == "nvme":
            if controller_path is None or not nvme_security:
                return None
            res = host.runner.run(nvme_level0_argv(controller_path), timeout=SED_TIMEOUT_S)
            return parse_level0(res.stdout)
        if transport in ("sata", "ata"):
            res = host.runner.run(sedutil_query_argv(path), timeout=SED_TIMEOUT_S)
            return parse_sedutil_query(res.text)
    except (CommandError, ParseError):
        return None
    return None
