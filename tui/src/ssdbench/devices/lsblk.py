"""`lsblk --json` parsed, old and new util-linux.

util-linux < 2.33 printed every value as a string ("rm": "1", "size": "14.3G" without
``--bytes``); newer versions print JSON booleans and numbers; 2.37+ add ``mountpoints``
arrays next to the singular ``mountpoint``.  Both are accepted.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.model import ParseError
from ssdbench.devices.nvme import load_json_object

# What discovery asks for: every column (`-O`) in bytes.  -O exists in every util-linux
# that has --json (2.27+), and unknown columns cannot make it fail.
LSBLK_ARGV = ("lsblk", "--json", "--bytes", "-O")
# With devices named after it: 32 = none of them found, 64 = some of them not found (the
# ones found are still printed).
LSBLK_SOME_OK_CODES = (0, 32, 64)

_SUFFIXES = {"": 1, "B": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40,
             "P": 1 << 50, "E": 1 << 60}


def _bool(value: object) -> bool | None:
    if value is None:
        return None
    if isinstance(value, bool):
        return value
    if isinstance(value, int):
        return value != 0
    if isinstance(value, str):
        v = value.strip().lower()
        if v in ("1", "true", "yes"):
            return True
        if v in ("0", "false", "no", ""):
            return False
    raise ParseError(f"lsblk: expected a boolean, got {value!r}")


def _size(value: object) -> int | None:
    """Bytes from a number, a digit string, or an old human size ("14.3G": approximate)."""
    if value is None:
        return None
    if isinstance(value, bool):
        raise ParseError(f"lsblk: expected a size, got {value!r}")
    if isinstance(value, int):
        return value
    if isinstance(value, str):
        m = re.fullmatch(r"\s*([0-9]+(?:\.[0-9]+)?)\s*([BKMGTPE]?)i?B?\s*", value)
        if m:
            return int(float(m.group(1)) * _SUFFIXES[m.group(2)])
    raise ParseError(f"lsblk: expected a size, got {value!r}")


def _str(value: object) -> str | None:
    if value is None:
        return None
    return str(value).strip()


@dataclass(frozen=True)
class LsblkDevice:
    name: str
    kname: str
    type: str  # disk, part, loop, rom, lvm, crypt, raid1, ...
    maj_min: str
    size_bytes: int | None
    removable: bool | None
    read_only: bool | None
    rotational: bool | None
    transport: str | None  # tran: sata, nvme, usb, sas, ata, ...
    model: str | None
    serial: str | None
    revision: str | None
    vendor: str | None
    label: str | None
    uuid: str | None
    fstype: str | None
    mountpoints: tuple[str, ...]
    log_sec: int | None
    phy_sec: int | None
    disc_max: int | None
    children: tuple[LsblkDevice, ...]
    wwn: str | None = None  # WWN / EUI-64 / NGUID (udev's ID_WWN, or sysfs wwid)

    def walk(self) -> list[LsblkDevice]:
        out = [self]
        for c in self.children:
            out.extend(c.walk())
        return out


def _device(obj: object) -> LsblkDevice:
    if not isinstance(obj, dict):
        raise ParseError("lsblk: a block device entry is not an object")
    d: dict[str, Any] = obj
    if "name" not in d:
        raise ParseError("lsblk: a block device has no 'name'")
    mounts: list[str] = []
    if isinstance(d.get("mountpoints"), list):
        mounts = [str(m) for m in d["mountpoints"] if m]
    elif d.get("mountpoint"):
        mounts = [str(d["mountpoint"])]
    children = d.get("children") or []
    if not isinstance(children, list):
        raise ParseError("lsblk: 'children' is not a list")
    name = str(d["name"])
    return LsblkDevice(
        name=name,
        kname=str(d.get("kname") or name),
        type=str(d.get("type") or ""),
        maj_min=str(d.get("maj:min") or ""),
        size_bytes=_size(d.get("size")),
        removable=_bool(d.get("rm")),
        read_only=_bool(d.get("ro")),
        rotational=_bool(d.get("rota")),
        transport=_str(d.get("tran")),
        model=_str(d.get("model")),
        serial=_str(d.get("serial")),
        revision=_str(d.get("rev")),
        vendor=_str(d.get("vendor")),
        label=_str(d.get("label")),
        uuid=_str(d.get("uuid")),
        fstype=_str(d.get("fstype")),
        mountpoints=tuple(mounts),
        log_sec=_size(d.get("log-sec")),
        phy_sec=_size(d.get("phy-sec")),
        disc_max=_size(d.get("disc-max")),
        children=tuple(_device(c) for c in children),
        wwn=_str(d.get("wwn")),
    )


def parse_lsblk_json(text: str) -> list[LsblkDevice]:
    """The top-level devices of `lsblk --json` (partitions etc. are their children)."""
    obj = load_json_object(text, "lsblk")
    devices = obj.get("blockdevices")
    if not isinstance(devices, list):
        raise ParseError("lsblk: no 'blockdevices' list")
    return [_device(d) for d in devices]


# Labels and UUIDs when lsblk has none (no udev database: the appliance's BusyBox mdev):
# a low-level probe of every device, bypassing the blkid cache.  Exit 2 = nothing found.
BLKID_ARGV = ("blkid", "-c", "/dev/null", "-o", "export")
BLKID_OK_CODES = (0, 2)


def parse_blkid_export(text: str) -> dict[str, dict[str, str]]:
    """`blkid -o export`: blank-line separated KEY=value blocks → {kernel name: values}."""
    out: dict[str, dict[str, str]] = {}
    for block in re.split(r"\n\s*\n", text.strip()):
        values: dict[str, str] = {}
        for line in block.splitlines():
            key, sep, value = line.partition("=")
            if sep:
                values[key.strip()] = value.strip()
        dev = values.get("DEVNAME", "")
        if dev.startswith("/dev/"):
            out[dev.rsplit("/", 1)[1]] = values
    return out
