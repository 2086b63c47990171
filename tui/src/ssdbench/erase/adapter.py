"""Build an :class:`EraseTarget` from discovery's ``Drive`` (``ssdbench.devices``).

Duck-typed on the attribute names of the devices contract (docs/architecture.md):
``path, name, transport, serial, model, size_bytes, logical_block_size, consent_id,
ata_security {supported, enabled, locked, frozen, expired, enhanced_supported,
erase_minutes, enhanced_erase_minutes}, nvme {oacs, fna, sanicap, oncs, dlfeat,
namespaces}, erase_methods, identity`` (a ``DriveIdentity`` or its JSON form) - so the
erase room does not import discovery.
"""

from __future__ import annotations

from typing import Any

from ssdbench.devices.model import DriveIdentity
from ssdbench.devices.sed import UNLOCK_ADVICE
from ssdbench.erase.model import (
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    SCSI_FORMAT,
    SCSI_SANITIZE_METHODS,
    AtaSecurityState,
    EraseTarget,
    NvmeCaps,
)


def _attr(obj: Any, name: str, default: Any = None) -> Any:
    if isinstance(obj, dict):
        return obj.get(name, default)
    return getattr(obj, name, default)


def nvme_caps(controller: Any, dlfeat: int | None = 0) -> NvmeCaps:
    """The erase-relevant bits of ``nvme id-ctrl`` (``devices.nvme.parse_id_ctrl_json``'s
    ``NvmeController``, or its flattened JSON form)."""
    return NvmeCaps(
        oacs=int(_attr(controller, "oacs", 0) or 0),
        fna=int(_attr(controller, "fna", 0) or 0),
        sanicap=int(_attr(controller, "sanicap", 0) or 0),
        oncs=int(_attr(controller, "oncs", 0) or 0),
        dlfeat=int(dlfeat or 0),
    )


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
    controller = None
    nv = _attr(drive, "nvme")
    nsid = 1
    if nv is not None:
        # Drive.nvme (NvmeInfo) keeps the bits on .controller; its JSON form flattens them.
        src = _attr(nv, "controller")
        if src is None or isinstance(src, str):
            src = nv
        dlfeat = _attr(nv, "current_dlfeat", None)
        if dlfeat is None:
            dlfeat = _attr(nv, "dlfeat", 0)
        caps = nvme_caps(src, dlfeat)
        cname = _attr(nv, "controller_name") or _attr(nv, "controller")
        if isinstance(cname, str) and cname:
            controller = cname if cname.startswith("/dev/") else "/dev/" + cname
        if _attr(nv, "nsid") is not None:
            nsid = int(_attr(nv, "nsid"))
    serial = str(_attr(drive, "consent_id", "") or _attr(drive, "serial", "") or "")
    sed = _attr(drive, "sed")
    sed_lock = ""
    if sed is not None and _attr(sed, "blocks_erase"):
        sed_lock = f"{_attr(sed, 'lock_reason')}: {UNLOCK_ADVICE}"
    identity = _attr(drive, "identity")
    if not isinstance(identity, DriveIdentity):
        identity = DriveIdentity.from_json(identity)  # a JSON form; None without one
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
        nvme_controller=controller,
        nsid=nsid,
        sed_lock=sed_lock,
        ata_passthrough=bool(_attr(drive, "ata_passthrough", False)),
        scsi_sanitize=bool(set(methods) & set(SCSI_SANITIZE_METHODS)),
        scsi_format=SCSI_FORMAT in methods,
        identity=identity,
    )
