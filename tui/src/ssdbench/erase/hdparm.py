"""``hdparm -I`` re-read between erase steps, and ``hdparm --sanitize-status``.

IDENTIFY parsing is discovery's (``ssdbench.devices.hdparm.parse_hdparm_identify``, tested
on the real fixtures); this module maps it to the few fields the erase needs. The
sanitize-status reader follows hdparm.c ``sanitize_normal_output``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ssdbench.devices.hdparm import parse_hdparm_identify
from ssdbench.devices.model import ParseError
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
    erase_lower_bound: bool = False  # "more than 508min"
    enhanced_erase_lower_bound: bool = False


def parse_identify(text: str) -> IdentifyInfo:
    """Parse ``hdparm -I`` stdout; raise IdentifyUnavailable for an empty/zero IDENTIFY."""
    try:
        ident = parse_hdparm_identify(text)
    except ParseError as exc:
        raise IdentifyUnavailable(
            f"{exc} (typical of a USB bridge, or the drive did not answer IDENTIFY)"
        ) from exc
    sec = ident.security
    state = None
    if sec is not None:
        san = ident.sanitize
        state = AtaSecurityState(
            supported=sec.supported,
            enabled=sec.enabled,
            locked=sec.locked,
            frozen=sec.frozen,
            expired=sec.expired,
            enhanced_supported=sec.enhanced_supported,
            erase_minutes=sec.erase_minutes,
            enhanced_erase_minutes=sec.enhanced_erase_minutes,
            level=sec.level,
            sanitize_block=san.supported and san.block_erase,
            sanitize_crypto=san.supported and san.crypto_scramble,
            sanitize_overwrite=san.supported and san.overwrite,
        )
    return IdentifyInfo(
        model=ident.model,
        serial=ident.serial,
        sectors=ident.sectors,
        logical_block_size=ident.logical_block_size,
        security=state,
        erase_lower_bound=bool(sec and sec.erase_minutes_lower_bound),
        enhanced_erase_lower_bound=bool(sec and sec.enhanced_erase_minutes_lower_bound),
    )


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
        raise ParseError(f"hdparm --sanitize-status: no 'State:' line in "
                         f"{stdout.strip()[:200]!r}")
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
