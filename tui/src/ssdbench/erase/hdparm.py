"""A minimal ``hdparm -I`` reader for re-checking the Security state between erase steps.

Discovery (``ssdbench.devices``) owns the full IDENTIFY parser; this one reads only what
the erase needs and is kept small so the two can be merged. Rules from hdparm's
``identify.c``: a set bit prints ``\\t\\tX``, a clear one ``\\tnot\\tX``; ``Security level``
appears only when enabled; the erase-time line may give only the normal time or read
"more than 508min". Lines are matched on words, never on tabs (mail clients turn tabs
into spaces).

Also ``hdparm --sanitize-status`` (hdparm.c ``sanitize_normal_output``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ssdbench.erase.model import AtaSecurityState


class IdentifyUnavailable(ValueError):
    """hdparm printed no usable IDENTIFY data (pass-through rejected, e.g. a USB bridge)."""


@dataclass(frozen=True)
class IdentifyInfo:
    model: str
    serial: str
    sectors: int | None
    logical_block_size: int | None
    security: AtaSecurityState | None  # None: no Security section printed


def _norm(line: str) -> str:
    return " ".join(line.split())


def _value(lines: list[str], key: str) -> str:
    for line in lines:
        n = _norm(line)
        if n.startswith(key + ":"):
            return n[len(key) + 1 :].strip()
    return ""


_HEADER = re.compile(r"^([A-Za-z][A-Za-z /]*):\s*$")


def _sections(text: str) -> dict[str, list[str]]:
    """Lines grouped under hdparm's unindented headers ("Security:", "Commands/features:")."""
    sections: dict[str, list[str]] = {"": []}
    current = ""
    for line in text.splitlines():
        if not line.strip() or line.startswith("/dev/"):
            continue
        if not line[0].isspace():
            m = _HEADER.match(line)
            if m:
                current = m.group(1)
                sections.setdefault(current, [])
                continue
            if current == "Security":  # e.g. "Logical Unit WWN Device Identifier: ..."
                current = "_after_security"
        sections.setdefault(current, []).append(line)
    return sections


_ERASE_TIME = re.compile(
    r"(more than )?(\d+)min for SECURITY ERASE UNIT\.?"
    r"(?:\s*(more than )?(\d+)min for ENHANCED SECURITY ERASE UNIT)?"
)


def _parse_security(lines: list[str], features: list[str]) -> AtaSecurityState:
    flags: dict[str, bool] = {}
    enhanced = False
    level: str | None = None
    erase: int | None = None
    enhanced_minutes: int | None = None
    for raw in lines:
        n = _norm(raw)
        words = n.split(" ")
        if n.startswith("Master password revision code"):
            continue
        if n.startswith("Security level"):
            level = words[-1]
            continue
        m = _ERASE_TIME.search(n)
        if m:
            erase = int(m.group(2))
            enhanced_minutes = int(m.group(4)) if m.group(4) else None
            continue
        negated = words[0] == "not"
        rest = " ".join(words[1:] if negated else words)
        if rest == "supported: enhanced erase":
            enhanced = not negated
            continue
        key = rest.split(":")[0].strip()
        if key in ("supported", "enabled", "locked", "frozen", "expired"):
            flags[key] = not negated
    sanitize = any(f.startswith("SANITIZE feature set") for f in features)
    return AtaSecurityState(
        supported=flags.get("supported", False),
        enabled=flags.get("enabled", False),
        locked=flags.get("locked", False),
        frozen=flags.get("frozen", False),
        expired=flags.get("expired", False),
        enhanced_supported=enhanced,
        erase_minutes=erase,
        enhanced_erase_minutes=enhanced_minutes,
        level=level,
        sanitize_block=sanitize and any(f.startswith("BLOCK_ERASE_EXT") for f in features),
        sanitize_crypto=sanitize and any(f.startswith("CRYPTO_SCRAMBLE_EXT") for f in features),
        sanitize_overwrite=sanitize and any(f.startswith("OVERWRITE_EXT") for f in features),
    )


def parse_identify(text: str) -> IdentifyInfo:
    """Parse ``hdparm -I`` stdout; raise IdentifyUnavailable for an empty/zero IDENTIFY."""
    sections = _sections(text)
    head = sections.get("", [])
    model = _value(head, "Model Number")
    serial = _value(head, "Serial Number")
    if not model:
        raise IdentifyUnavailable(
            "hdparm -I returned no model number: the ATA pass-through was rejected "
            "(typical of a USB bridge) or the drive did not answer IDENTIFY"
        )
    config = sections.get("Configuration", [])
    sectors: int | None = None
    for key in ("LBA48 user addressable sectors", "LBA user addressable sectors"):
        v = _value(config, key)
        if v and v.split()[0].isdigit() and int(v.split()[0]) > 0:
            sectors = int(v.split()[0])
            break
    lbs: int | None = None
    for key in ("Logical Sector size", "Logical/Physical Sector size"):
        v = _value(config, key)
        if v and v.split()[0].isdigit():
            lbs = int(v.split()[0])
            break
    features = []
    for line in sections.get("Commands/features", []):
        n = _norm(line).lstrip("* ").strip()
        if n and not n.startswith("Enabled Supported"):
            features.append(n)
    security = None
    if "Security" in sections:
        security = _parse_security(sections["Security"], features)
    return IdentifyInfo(model, serial, sectors, lbs, security)


@dataclass(frozen=True)
class AtaSanitizeStatus:
    state: str  # "SD0" idle, "SD1" frozen, "SD2" in progress, "SD3" failed, "SD4" succeeded
    fraction: float | None  # 0..1 while in progress
    completed_ok: bool  # "Last Sanitize Operation Completed Without Error"
    failed: bool


_STATE = re.compile(r"State:\s*(SD\d)")
_PROGRESS = re.compile(r"Progress:\s*0x([0-9a-fA-F]+)")


def parse_sanitize_status(stdout: str, stderr: str = "") -> AtaSanitizeStatus:
    """``hdparm --sanitize-status``; a failed last operation shows on stderr as SD3."""
    text = stdout + "\n" + stderr
    m = _STATE.search(text)
    failed = "SD3" in text or "error reason" in text.lower()
    if m is None and not failed:
        raise ValueError(f"hdparm --sanitize-status: no 'State:' line in {stdout.strip()!r}")
    state = m.group(1) if m else "SD3"
    p = _PROGRESS.search(text)
    fraction = None
    if p is not None:
        raw = int(p.group(1), 16)
        fraction = 1.0 if raw == 0xFFFF else (raw + 1) / 0xFFFF
    return AtaSanitizeStatus(
        state=state,
        fraction=fraction,
        completed_ok="Completed Without Error" in text,
        failed=failed,
    )
