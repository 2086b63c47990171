"""Build an :class:`EraseTarget` from discovery's ``Drive`` (``ssdbench.devices``).

Duck-typed on the attribute names of the devices contract (docs/architecture.md):
``path, name, transport, serial, model, size_bytes, logical_block_size, consent_id,
ata_security {supported, enabled, locked, frozen, expired, enhanced_supported,
erase_minutes, enhanced_erase_minutes}, nvme {oacs, fna, sanicap, oncs, dlfeat,
namespaces}, erase_methods`` - so the erase room does not import the devices room.
"""

from __future__ import annotations

from typing import Any

from ssdbench.erase.model import (
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    AtaSecurityState,
    EraseTarget,
    NvmeCaps,
)


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def target_from_drive(drive: Any) -> EraseTarget:
    methods = tuple(_attr(drive, "erase_methods", ()) or ())
    ata = None
    sec = _attr(drive, "ata_security")
    if sec is not None:
        ata = AtaSecurityState(
            supported=bool(_attr(sec, "supported")),
            enabled=bool(_attr(sec, "enabled")),
            locked=bool(_attr(sec, "locked")),
            frozen=bool(_attr(sec, "frozen")),
            expired=bool(_attr(sec, "expired")),
            enhanced_supported=bool(_attr(sec, "enhanced_supported")),
            erase_minutes=_attr(sec, "erase_minutes"),
            enhanced_erase_minutes=_attr(sec, "enhanced_erase_minutes"),
            level=_attr(sec, "level"),
            sanitize_block=ATA_SANITIZE_BLOCK in methods,
            sanitize_crypto=ATA_SANITIZE_CRYPTO in methods,
        )
    caps = None
    nv = _attr(drive, "nvme")
    nsid = 1
    if nv is not None:
        caps = NvmeCaps(
            oacs=int(_attr(nv, "oacs", 0) or 0),
            fna=int(_attr(nv, "fna", 0) or 0),
            sanicap=int(_attr(nv, "sanicap", 0) or 0),
            oncs=int(_attr(nv, "oncs", 0) or 0),
            dlfeat=int(_attr(nv, "dlfeat", 0) or 0),
        )
        name = str(_attr(drive, "name", ""))
        for ns in _attr(nv, "namespaces", ()) or ():
            if _attr(ns, "name") == name and _attr(ns, "nsid") is not None:
                nsid = int(_attr(ns, "nsid"))
    serial = str(_attr(drive, "consent_id", "") or _attr(drive, "serial", "") or "")
    return EraseTarget(
        path=str(_attr(drive, "path")),
        name=str(_attr(drive, "name")),
        transport=str(_attr(drive, "transport", "other") or "other"),
        serial=serial or str(_attr(drive, "name")),
        model=str(_attr(drive, "model", "") or ""),
        size_bytes=int(_attr(drive, "size_bytes", 0) or 0),
        logical_block_size=int(_attr(drive, "logical_block_size", 512) or 512),
        ata=ata,
        nvme=caps,
        nsid=nsid,
    )
