"""`smartctl -j -x DEV` parsed into a health snapshot (smartmontools 7.x JSON)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssdbench.devices.model import SmartSnapshot
from ssdbench.devices.nvme import load_json_object

# smartctl's exit status is a bit mask; bits 0-2 mean the command could not read the
# device (bad arguments, open failed, SMART command failed); bits 3-7 are health findings.
SMARTCTL_FATAL_BITS = 0x07
SMARTCTL_OK_CODES = tuple(range(256))


@dataclass(frozen=True)
class SmartIdentity:
    """What smartctl knows about identity (used when no other tool answered, e.g. SAS)."""

    model: str
    serial: str
    firmware: str
    size_bytes: int | None
    rotation_rpm: int | None


def dig(obj: Any, *keys: str) -> Any:
    """``obj[k1][k2]...`` of smartctl's JSON, or None where a level is missing."""
    cur: Any = obj
    for key in keys:
        if not isinstance(cur, dict) or key not in cur:
            return None
        cur = cur[key]
    return cur


def _int(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def parse_smartctl_json(text: str) -> tuple[SmartSnapshot, SmartIdentity]:
    obj = load_json_object(text, "smartctl")
    exit_status = _int(dig(obj, "smartctl", "exit_status")) or 0
    messages = tuple(
        str(m.get("string", ""))
        for m in (dig(obj, "smartctl", "messages") or [])
        if isinstance(m, dict)
    )
    passed = dig(obj, "smart_status", "passed")
    nvme_log = dig(obj, "nvme_smart_health_information_log") or {}
    realloc: int | None = None
    for attr in dig(obj, "ata_smart_attributes", "table") or []:
        if isinstance(attr, dict) and attr.get("id") == 5:
            realloc = _int(dig(attr, "raw", "value"))
    snapshot = SmartSnapshot(
        passed=passed if isinstance(passed, bool) else None,
        temperature_c=_int(dig(obj, "temperature", "current")),
        power_on_hours=_int(dig(obj, "power_on_time", "hours")),
        percentage_used=_int(nvme_log.get("percentage_used")),
        available_spare=_int(nvme_log.get("available_spare")),
        media_errors=_int(nvme_log.get("media_errors")),
        reallocated_sectors=realloc,
        exit_status=exit_status,
        messages=messages,
    )
    identity = SmartIdentity(
        model=str(obj.get("model_name") or dig(obj, "scsi_model_name") or "").strip(),
        serial=str(obj.get("serial_number") or "").strip(),
        firmware=str(obj.get("firmware_version") or dig(obj, "scsi_revision") or "").strip(),
        size_bytes=_int(dig(obj, "user_capacity", "bytes")),
        rotation_rpm=_int(obj.get("rotation_rate")),
    )
    return snapshot, identity
