"""The machine a drive is tested in (issue #45): its DMI identity and the controller the
drive hangs off, for run.json ``host``, the erase record, the certificate, report.html,
status.json and the fleet page (docs/results-format.md "Host").

Everything is read through ``host.fs`` (so a support bundle replays it) and is untrusted: a
firmware writes anything into its SMBIOS strings. A value is kept as given (stripped of the
padding, cut at :data:`VALUE_LIMIT` characters); a reader shows it through
:func:`ssdbench.untrusted.visible`. A value that is a known placeholder of board makers
(``To be filled by O.E.M.``, an all-zero UUID) is kept too, and flagged in ``notes``;
``product_serial`` and ``product_uuid`` are readable by root only: as another user they are
``not readable``, never an error.
"""

from __future__ import annotations

import os.path
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ssdbench.system import Host

DMI_DIR = "/sys/class/dmi/id"
DMI_FIELDS = ("sys_vendor", "product_name", "product_serial", "product_uuid",
              "bios_version", "bios_date", "board_vendor", "board_name")
VALUE_LIMIT = 128  # SMBIOS strings are short; a longer one is cut, and flagged
LINE_LIMIT = 400  # a line of describe(): what the pages show
NOT_READABLE = "not readable"
# what a flagged value's note says
NOTE_PLACEHOLDER = "placeholder"
NOTE_UNREADABLE = "not readable (root only)"
NOTE_ABSENT = "absent"
NOTE_EMPTY = "empty"
NOTE_CUT = f"cut at {VALUE_LIMIT} characters"

# board makers' texts for "not set" (compared without case and surrounding blanks)
PLACEHOLDERS = frozenset(s.casefold() for s in (
    "To be filled by O.E.M.", "To Be Filled By O.E.M.", "Default string", "Default",
    "System Serial Number", "System Product Name", "System manufacturer", "System Version",
    "Base Board Serial Number", "Chassis Serial Number", "Not Specified", "Not Applicable",
    "Not Available", "None", "N/A", "NA", "OEM", "O.E.M.", "Unknown", "Invalid",
    "0123456789", "123456789", "1234567890", "Type1ProductConfigId", "XXXXXXXX",
    "SKU", "Serial", "Empty",
))
# an all-zero or all-ones UUID, and the one AMI boards ship with by the thousand
_BLANK_UUID = re.compile(r"[0-]+|[fF-]+")
_UUID_PLACEHOLDERS = frozenset({"03000200-0400-0500-0006-000700080009"})

_PCI_ADDRESS = re.compile(r"[0-9a-f]{4}:[0-9a-f]{2}:[0-9a-f]{2}\.[0-7]")
_USB_DEVICE = re.compile(r"\d+-[\d.]+")
_PCI_HEX = re.compile(r"0x([0-9a-fA-F]{4})")
_USB_HEX = re.compile(r"[0-9a-fA-F]{4}")
_DRIVER = re.compile(r"[A-Za-z0-9_.-]{1,64}")
_MAX_DEPTH = 64  # path components walked up from a block device


def is_placeholder(key: str, value: str) -> bool:
    """Whether ``value`` of DMI field ``key`` is a maker's "not set" text."""
    text = value.strip()
    if key == "product_uuid":
        return bool(_BLANK_UUID.fullmatch(text)) or text.lower() in _UUID_PLACEHOLDERS
    return text.casefold() in PLACEHOLDERS


@dataclass(frozen=True)
class Machine:
    """The DMI identity of the machine: each field's value (None: absent or not
    readable) and, for a value not to be trusted as an identity, a note saying why."""

    values: Mapping[str, str | None]
    notes: Mapping[str, str] = field(default_factory=dict)
    dmi: str = "read"  # or why there is no DMI at all

    def to_json(self) -> dict[str, Any]:
        return {"machine": {k: self.values.get(k) for k in DMI_FIELDS},
                "notes": {k: self.notes[k] for k in DMI_FIELDS if k in self.notes},
                "dmi": self.dmi}


def read_machine(host: Host) -> Machine:
    """The machine's DMI identity from ``/sys/class/dmi/id``; never raises."""
    if not host.fs.exists(DMI_DIR):
        return Machine({k: None for k in DMI_FIELDS}, {},
                       f"absent: no {DMI_DIR} (no SMBIOS tables: a virtual machine "
                       "without them, or a board that has none)")
    values: dict[str, str | None] = {}
    notes: dict[str, str] = {}
    for key in DMI_FIELDS:
        path = f"{DMI_DIR}/{key}"
        text = host.fs.read_text(path)
        if text is None:
            # the file is there but not for us (root only), or the firmware has no such field
            readable = not host.fs.exists(path)
            values[key] = None if readable else NOT_READABLE
            notes[key] = NOTE_ABSENT if readable else NOTE_UNREADABLE
            continue
        value = text.strip()
        if len(value) > VALUE_LIMIT:
            value = value[:VALUE_LIMIT]
            notes[key] = NOTE_CUT
        values[key] = value
        if not value:
            notes[key] = NOTE_EMPTY
        elif is_placeholder(key, value):
            notes[key] = NOTE_PLACEHOLDER
    return Machine(values, notes)


@dataclass(frozen=True)
class Controller:
    """The controller a drive hangs off: the PCI function (its ids and bound driver) and,
    for a drive behind a USB bridge, the bridge's ids; ``reason`` when none was found."""

    bus: str  # "pci", "usb" (a USB bridge on a PCI host controller) or "none"
    pci_address: str | None = None
    pci_id: str | None = None  # vendor:device, 4 hex digits each
    subsystem_id: str | None = None
    driver: str | None = None
    usb_id: str | None = None  # idVendor:idProduct of the bridge
    usb_product: str | None = None  # the bridge's own name for itself (untrusted)
    reason: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {k: v for k, v in (
            ("bus", self.bus), ("pci_address", self.pci_address), ("pci_id", self.pci_id),
            ("subsystem_id", self.subsystem_id), ("driver", self.driver),
            ("usb_id", self.usb_id), ("usb_product", self.usb_product),
            ("reason", self.reason)) if v is not None}


def _hex_pair(host: Host, a: str, b: str, pattern: re.Pattern[str]) -> str | None:
    """``a:b`` from two sysfs id files (``0x1b36`` for PCI, ``46f4`` for USB): lower-case
    hex; ``?`` for a side that is missing or not an id."""
    sides = []
    for path in (a, b):
        m = pattern.fullmatch((host.fs.read_text(path) or "").strip())
        sides.append((m.group(1) if m.groups() else m.group(0)).lower() if m else "?")
    return None if sides == ["?", "?"] else ":".join(sides)


def _chain(host: Host, link: str) -> str | None:
    """The sysfs directory a link such as ``/sys/block/sda`` points at, as a normalised
    absolute path (``readlink`` is all a recorded bundle answers)."""
    target = host.fs.readlink(link)
    if not target:
        return None
    return os.path.normpath(os.path.join(os.path.dirname(link), target))


def _ancestors(path: str) -> list[str]:
    out = []
    for _ in range(_MAX_DEPTH):
        if path in ("/", "") or not path.startswith("/sys/"):
            break
        out.append(path)
        path = os.path.dirname(path)
    return out


def _controller_at(host: Host, path: str) -> Controller | None:
    ups = _ancestors(path)
    pci = next((p for p in ups if _PCI_ADDRESS.fullmatch(os.path.basename(p))), None)
    if pci is None:
        return None
    usb = next((p for p in ups if _USB_DEVICE.fullmatch(os.path.basename(p))), None)
    driver_link = host.fs.readlink(f"{pci}/driver")
    name = os.path.basename(driver_link) if driver_link else ""
    driver = name if _DRIVER.fullmatch(name) else ("none bound" if not name else "?")
    product = None
    if usb is not None:
        raw = (host.fs.read_text(f"{usb}/product") or "").strip()
        product = raw[:VALUE_LIMIT] or None
    return Controller(
        bus="usb" if usb is not None else "pci",
        pci_address=os.path.basename(pci),
        pci_id=_hex_pair(host, f"{pci}/vendor", f"{pci}/device", _PCI_HEX),
        subsystem_id=_hex_pair(host, f"{pci}/subsystem_vendor", f"{pci}/subsystem_device",
                               _PCI_HEX),
        driver=driver,
        usb_id=None if usb is None else _hex_pair(host, f"{usb}/idVendor", f"{usb}/idProduct",
                                                  _USB_HEX),
        usb_product=product,
    )


def read_controller(host: Host, name: str) -> Controller:
    """The controller of block device ``name`` (``sda``, ``nvme0n1``): the nearest PCI
    function up its sysfs chain, and the USB device between them when there is one. Never
    raises: a loop device, a device-mapper volume or a path with no PCI function in it
    gives ``bus="none"`` and the reason."""
    if not re.fullmatch(r"[A-Za-z0-9_.:-]{1,64}", name) or name in (".", ".."):
        return Controller("none", reason="not a block device name")
    block = _chain(host, f"/sys/block/{name}")
    if block is None:
        return Controller("none", reason=f"no /sys/block/{name}")
    tried = [block]
    device = _chain(host, f"{block}/device")
    if device is not None:
        tried.append(device)
    m = re.fullmatch(r"nvme(\d+)n\d+", name)
    if m is not None:  # a multipath namespace lives under nvme-subsystem: its controller
        ctrl = _chain(host, f"/sys/class/nvme/nvme{m.group(1)}")
        if ctrl is not None:
            tried.append(ctrl)
    for path in tried:
        found = _controller_at(host, path)
        if found is not None:
            return found
    return Controller("none", reason="no PCI function in its sysfs path ("
                      + ("a virtual device" if "/virtual/" in block else block) + ")")


def host_record(host: Host, name: str | None, machine: Machine | None = None
                ) -> dict[str, Any]:
    """run.json ``host``: the machine's identity and the drive's controller (``name``:
    the block device; None: none, the machine only)."""
    return {**(machine or read_machine(host)).to_json(),
            "controller": None if name is None else read_controller(host, name).to_json()}


def _flagged(record: Mapping[str, Any], key: str) -> str:
    machine = record.get("machine") if isinstance(record.get("machine"), Mapping) else {}
    notes = record.get("notes") if isinstance(record.get("notes"), Mapping) else {}
    value = machine.get(key) if isinstance(machine, Mapping) else None
    note = notes.get(key) if isinstance(notes, Mapping) else None
    text = "" if value is None else str(value)
    if note and note not in (NOTE_ABSENT, NOTE_UNREADABLE):
        return f"{text} ({note})" if text else f"({note})"
    return text or (NOT_READABLE if note == NOTE_UNREADABLE else "")


def describe(record: Mapping[str, Any] | None) -> dict[str, str]:
    """The host record as a few labelled lines (certificate, report.html, the fleet page):
    ``machine``, ``serial``, ``bios``, ``controller``; empty strings where nothing is
    known. The texts are raw: the reader escapes them (they hold firmware strings)."""
    if not isinstance(record, Mapping):
        return {"machine": "", "serial": "", "bios": "", "controller": ""}
    words = [w for w in (_flagged(record, "sys_vendor"), _flagged(record, "product_name"))
             if w]
    board = " ".join(w for w in (_flagged(record, "board_vendor"),
                                 _flagged(record, "board_name")) if w)
    machine = " ".join(words) + (f" (board: {board})" if board else "")
    if not machine and str(record.get("dmi") or "").startswith("absent"):
        machine = "no DMI identity: " + str(record.get("dmi"))
    ident = [f"serial {s}" for s in [_flagged(record, "product_serial")] if s]
    ident += [f"UUID {u}" for u in [_flagged(record, "product_uuid")] if u]
    bios = " ".join(w for w in (_flagged(record, "bios_version"),
                                _flagged(record, "bios_date")) if w)
    said = {"machine": machine, "serial": ", ".join(ident), "bios": bios,
            "controller": describe_controller(record.get("controller"))}
    # a record from elsewhere holds anything: no line longer than a page's line or two
    return {k: v if len(v) <= LINE_LIMIT else v[:LINE_LIMIT - 1] + "…"
            for k, v in said.items()}


def describe_controller(ctrl: Any) -> str:
    """``PCI 0000:00:05.0 1b36:0010 (subsystem 1af4:1100), driver nvme`` and, behind a USB
    bridge, ``USB bridge 46f4:0001 "QEMU USB HARDDRIVE" on ...``."""
    if not isinstance(ctrl, Mapping):
        return ""
    if ctrl.get("bus") == "none" or not ctrl.get("pci_address"):
        return f"none ({ctrl.get('reason') or 'not found'})"
    pci = (f"PCI {ctrl.get('pci_address')} {ctrl.get('pci_id') or '?'}"
           + (f" (subsystem {ctrl['subsystem_id']})" if ctrl.get("subsystem_id") else "")
           + f", driver {ctrl.get('driver') or '?'}")
    if ctrl.get("bus") == "usb":
        name = f" \"{ctrl['usb_product']}\"" if ctrl.get("usb_product") else ""
        return f"USB bridge {ctrl.get('usb_id') or '?'}{name} on {pci}"
    return pci
