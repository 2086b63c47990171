"""What discovery knows about a drive, as frozen dataclasses.

`Drive.to_json()` is the object `ssdbench list --json` prints (keys documented in
docs/devices.md); the other rooms read the attributes directly.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ssdbench.devices.errors import ParseError as ParseError  # noqa: PLC0414 (re-exported)

if TYPE_CHECKING:
    from ssdbench.devices.sed import SedState

# Erase method names (the `erase_methods` vocabulary shared with the erase room).
ATA_SECURITY_ERASE = "ata-security-erase"
ATA_SECURITY_ERASE_ENHANCED = "ata-security-erase-enhanced"
ATA_SANITIZE_BLOCK = "ata-sanitize-block"
ATA_SANITIZE_CRYPTO = "ata-sanitize-crypto"
NVME_FORMAT_USER_DATA = "nvme-format-user-data"
NVME_FORMAT_CRYPTO = "nvme-format-crypto"
NVME_SANITIZE_BLOCK = "nvme-sanitize-block"
NVME_SANITIZE_CRYPTO = "nvme-sanitize-crypto"
NVME_SANITIZE_OVERWRITE = "nvme-sanitize-overwrite"
# SAS/SCSI SANITIZE (erase/scsi.py): ``scsi-sanitize`` takes the best the drive lists
SCSI_SANITIZE = "scsi-sanitize"
SCSI_SANITIZE_BLOCK = "scsi-sanitize-block"
SCSI_SANITIZE_CRYPTO = "scsi-sanitize-crypto"
SCSI_SANITIZE_OVERWRITE = "scsi-sanitize-overwrite"
# FORMAT UNIT where the drive lists no SANITIZE at all (erase/scsi.py; Clear at most)
SCSI_FORMAT = "scsi-format"

ERASE_METHODS = (
    ATA_SECURITY_ERASE,
    ATA_SECURITY_ERASE_ENHANCED,
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
    NVME_FORMAT_USER_DATA,
    NVME_FORMAT_CRYPTO,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
    SCSI_SANITIZE,
    SCSI_SANITIZE_BLOCK,
    SCSI_SANITIZE_CRYPTO,
    SCSI_SANITIZE_OVERWRITE,
    SCSI_FORMAT,
)

# Transports (`Drive.transport`).
TRANSPORTS = ("sata", "ata", "nvme", "usb", "sas", "scsi", "virtio", "loop", "mmc", "other")

# Path components the kernel numbers in the order it found things (a SCSI host is numbered
# anew at every USB plug-in, an NVMe controller by probe order): not part of a place.
_ENUMERATED = re.compile(r"host\d+|target\d+:\d+:\d+|nvme\d+|virtio\d+|nvme")
_SCSI_ADDRESS = re.compile(r"\d+:(\d+:\d+:\d+)")  # host:channel:target:lun
_NVME_NAMESPACE = re.compile(r"nvme\d+(?:c\d+)?n(\d+)")
_IDENTIFIER = re.compile(r"[0-9A-Za-z.:_-]{1,128}")
# the identity's parts that name one drive and no other (the place only tells where it is)
IDENTITY_FIELDS = ("serial", "model", "wwn", "size_bytes", "place", "backing")


def transport_place(syspath: str, name: str) -> str:
    """Where a block device sits, from its sysfs link (``readlink /sys/block/NAME``:
    ``../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda``):
    the controller, port and LUN it is on (``pci0000:00/0000:00:1f.2/ata1/0:0:0``), without
    the numbers the kernel hands out in the order it finds things (SCSI host, NVMe
    controller, virtio index) and without its kernel name, so the same slot reads the same
    after a reboot or a re-plug. An NVMe namespace keeps its number (``.../n1``); a virtual
    device (loop, zram) has no place but its name (``virtual/block/loop0``). "" when sysfs
    has no link (then the place tells nothing)."""
    parts = [p for p in syspath.split("/") if p not in ("", ".", "..")]
    if parts[:1] == ["devices"]:
        parts = parts[1:]
    if parts[:1] == ["virtual"]:
        return "/".join(parts)
    if "block" in parts:  # .../block/sda: the disk itself, named by the kernel
        parts = parts[:parts.index("block")]
    place = []
    for part in parts:
        ns = _NVME_NAMESPACE.fullmatch(part)
        if ns is not None:
            place.append(f"n{ns.group(1)}")
        elif part == name or _ENUMERATED.fullmatch(part):
            continue
        elif (scsi := _SCSI_ADDRESS.fullmatch(part)) is not None:
            place.append(scsi.group(1))
        else:
            place.append(part)
    return "/".join(place)


def world_wide_name(raw: str) -> str | None:
    """A WWN, EUI-64 or NGUID as sysfs gives it (``naa.5002538e4...``, ``eui.0025388...``,
    an NGUID ``0025-38...``), lower case; "" when the drive reports none (all zeros, or a
    ``t10.`` id the kernel built from the model and serial: not a name of its own); None
    when it is not an identifier at all (a drive reports anything: the caller notes it)."""
    text = raw.strip().strip("\0").strip()
    if not text:
        return ""
    if not _IDENTIFIER.fullmatch(text):
        return None
    text = text.lower()
    if text.startswith(("t10.", "nvme.")):  # made of the vendor, model and serial
        return ""
    if not text.strip("0.-:") or text.removeprefix("naa.").removeprefix("eui.").strip("0") == "":
        return ""
    return text


@dataclass(frozen=True)
class DriveIdentity:
    """A drive as everything it reports and the kernel sees, together: serial, model,
    world wide name (WWN, EUI-64 or NGUID), capacity, the place it is plugged in
    (:func:`transport_place`) and, for a loop device, its backing file. Two drives that
    report one serial (counterfeit drives, USB bridges) differ by their place at least;
    ``consent_id`` is still what an operator names to consent (the serial)."""

    serial: str
    model: str
    wwn: str
    size_bytes: int
    place: str
    backing: str = ""

    @property
    def key(self) -> str:
        """One string for the whole identity (dictionary keys in a session)."""
        return json.dumps(self.to_json(), sort_keys=True)

    @property
    def telling(self) -> bool:
        """Whether it can tell this drive from another of the same model and capacity
        in the same place: it has a serial, a world wide name or a backing file. A drive
        with none of them can be swapped for a twin unnoticed."""
        return bool(self.serial or self.wwn or self.backing)

    def differences(self, other: DriveIdentity) -> list[str]:
        """The parts that differ, for a message (``serial '' not 'S1'``)."""
        return [f"{name} {getattr(self, name)!r} not {getattr(other, name)!r}"
                for name in IDENTITY_FIELDS if getattr(self, name) != getattr(other, name)]

    def to_json(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in IDENTITY_FIELDS}

    @classmethod
    def from_json(cls, obj: object) -> DriveIdentity | None:
        """From a journal entry or a record (untrusted: None unless every part is there
        with its type)."""
        if not isinstance(obj, Mapping):
            return None
        texts = [obj.get(n) for n in IDENTITY_FIELDS if n != "size_bytes"]
        size = obj.get("size_bytes")
        if not all(isinstance(t, str) for t in texts) or not isinstance(size, int) \
                or isinstance(size, bool):
            return None
        return cls(serial=obj["serial"], model=obj["model"], wwn=obj["wwn"],
                   size_bytes=size, place=obj["place"], backing=obj["backing"])


@dataclass(frozen=True)
class AtaSecurity:
    """The ATA Security feature set as IDENTIFY DEVICE (hdparm -I) reports it."""

    supported: bool
    enabled: bool
    locked: bool
    frozen: bool
    expired: bool
    enhanced_supported: bool
    erase_minutes: int | None  # None: not reported
    enhanced_erase_minutes: int | None
    # hdparm prints "more than 508min" when the 8-bit field is all ones: a lower bound.
    erase_minutes_lower_bound: bool = False
    enhanced_erase_minutes_lower_bound: bool = False
    master_password_revision: int | None = None
    level: str | None = None  # "high" / "maximum" when enabled

    def to_json(self) -> dict[str, Any]:
        return {
            "supported": self.supported,
            "enabled": self.enabled,
            "locked": self.locked,
            "frozen": self.frozen,
            "expired": self.expired,
            "enhanced_supported": self.enhanced_supported,
            "erase_minutes": self.erase_minutes,
            "enhanced_erase_minutes": self.enhanced_erase_minutes,
            "erase_minutes_lower_bound": self.erase_minutes_lower_bound,
            "enhanced_erase_minutes_lower_bound": self.enhanced_erase_minutes_lower_bound,
        }


@dataclass(frozen=True)
class AtaSanitize:
    """ATA SANITIZE feature set (ACS-2+)."""

    supported: bool
    block_erase: bool
    crypto_scramble: bool
    overwrite: bool
    antifreeze_lock: bool = False


@dataclass(frozen=True)
class AtaIdentify:
    """`hdparm -I` parsed: identity, TRIM, security, sanitize."""

    model: str
    serial: str
    firmware: str
    transport_line: str
    sectors: int | None  # LBA48 (or LBA28) user addressable sectors
    logical_block_size: int | None
    physical_block_size: int | None
    rotation_rpm: int | None  # 0 = solid state ("Solid State Device")
    trim_supported: bool
    trim_limit_blocks: int | None
    drat: bool  # deterministic read data after TRIM
    rzat: bool  # deterministic read zeros after TRIM
    security: AtaSecurity | None  # None: no Security section
    sanitize: AtaSanitize
    features: tuple[str, ...]  # "Commands/features" lines, '*' (enabled) dropped
    enabled_features: tuple[str, ...]
    cfa: bool = False  # "CompactFlash ATA device"

    @property
    def size_bytes(self) -> int | None:
        if self.sectors is None or self.logical_block_size is None:
            return None
        return self.sectors * self.logical_block_size


@dataclass(frozen=True)
class NvmeLbaFormat:
    index: int
    data_size: int  # bytes (2**lbads)
    metadata_size: int
    relative_performance: int


@dataclass(frozen=True)
class NvmeNamespace:
    """`nvme id-ns DEV -o json` parsed (plus the block device it belongs to)."""

    nsid: int
    name: str  # kernel name, e.g. nvme0n1
    nsze: int  # blocks
    ncap: int
    nuse: int
    flbas: int
    lba_format_index: int
    lba_formats: tuple[NvmeLbaFormat, ...]
    dlfeat: int

    @property
    def block_size(self) -> int | None:
        for f in self.lba_formats:
            if f.index == self.lba_format_index:
                return f.data_size
        return None

    @property
    def size_bytes(self) -> int | None:
        bs = self.block_size
        return None if bs is None else self.nsze * bs

    @property
    def dlfeat_read_zeroes(self) -> bool:
        """DLFEAT bits 2:0 == 1: deallocated blocks read as zeros."""
        return (self.dlfeat & 0x7) == 1

    def to_json(self) -> dict[str, Any]:
        return {
            "nsid": self.nsid,
            "name": self.name,
            "nsze": self.nsze,
            "ncap": self.ncap,
            "nuse": self.nuse,
            "flbas": self.flbas,
            "lba_format": self.lba_format_index,
            "block_size": self.block_size,
            "size_bytes": self.size_bytes,
            "dlfeat": self.dlfeat,
        }


@dataclass(frozen=True)
class NvmeController:
    """`nvme id-ctrl` parsed (JSON or plain text), with the bits ssdbench uses decoded."""

    model: str
    serial: str
    firmware: str
    vid: int
    oacs: int
    fna: int
    sanicap: int
    oncs: int
    nn: int
    tnvmcap: int | None
    unvmcap: int | None
    cntlid: int | None = None
    ver: int | None = None
    missing: tuple[str, ...] = ()  # plain id-ctrl: lines that were absent (defaults used)

    # OACS
    @property
    def format_supported(self) -> bool:
        return bool(self.oacs & (1 << 1))

    @property
    def ns_management_supported(self) -> bool:
        return bool(self.oacs & (1 << 3))

    @property
    def security_send_receive(self) -> bool:
        return bool(self.oacs & (1 << 0))

    # FNA
    @property
    def format_all_namespaces(self) -> bool:
        return bool(self.fna & (1 << 0))

    @property
    def secure_erase_all_namespaces(self) -> bool:
        return bool(self.fna & (1 << 1))

    @property
    def crypto_erase_supported(self) -> bool:
        return bool(self.fna & (1 << 2))

    @property
    def broadcast_nsid_format_supported(self) -> bool:
        """FNA bit 3 is inverted: 1 means Format does NOT accept NSID FFFFFFFFh."""
        return not self.fna & (1 << 3)

    # SANICAP
    @property
    def sanitize_crypto(self) -> bool:
        return bool(self.sanicap & (1 << 0))

    @property
    def sanitize_block(self) -> bool:
        return bool(self.sanicap & (1 << 1))

    @property
    def sanitize_overwrite(self) -> bool:
        return bool(self.sanicap & (1 << 2))

    @property
    def sanitize_no_deallocate_inhibited(self) -> bool:
        """SANICAP bit 29 (NDI)."""
        return bool(self.sanicap & (1 << 29))

    # ONCS
    @property
    def dsm_supported(self) -> bool | None:
        """ONCS bit 2: Dataset Management (deallocate = TRIM); None: no oncs was read."""
        return None if "oncs" in self.missing else bool(self.oncs & (1 << 2))

    @property
    def write_zeroes_supported(self) -> bool | None:
        return None if "oncs" in self.missing else bool(self.oncs & (1 << 3))

    def decoded(self) -> dict[str, Any]:
        return {
            "format": self.format_supported,
            "ns_management": self.ns_management_supported,
            "security_send_receive": self.security_send_receive,
            "format_all_namespaces": self.format_all_namespaces,
            "secure_erase_all_namespaces": self.secure_erase_all_namespaces,
            "crypto_erase": self.crypto_erase_supported,
            "broadcast_nsid_format": self.broadcast_nsid_format_supported,
            "sanitize_crypto": self.sanitize_crypto,
            "sanitize_block": self.sanitize_block,
            "sanitize_overwrite": self.sanitize_overwrite,
            "sanitize_ndi": self.sanitize_no_deallocate_inhibited,
            "dsm": self.dsm_supported,
            "write_zeroes": self.write_zeroes_supported,
        }


@dataclass(frozen=True)
class NvmeInfo:
    """The NVMe part of a drive: its controller, namespaces and transport."""

    controller: NvmeController
    controller_name: str  # nvme0
    controller_transport: str  # pcie, tcp, rdma, fc, loop ("" when unknown)
    namespaces: tuple[NvmeNamespace, ...]
    nsid: int | None  # the namespace this block device is

    def to_json(self) -> dict[str, Any]:
        c = self.controller
        return {
            "oacs": c.oacs,
            "fna": c.fna,
            "sanicap": c.sanicap,
            "oncs": c.oncs,
            "dlfeat": self.current_dlfeat,
            "namespaces": [ns.to_json() for ns in self.namespaces],
            "controller": self.controller_name,
            "controller_transport": self.controller_transport,
            "nsid": self.nsid,
            "nn": c.nn,
            "tnvmcap": c.tnvmcap,
            "unvmcap": c.unvmcap,
            "decoded": c.decoded(),
        }

    @property
    def current_namespace(self) -> NvmeNamespace | None:
        for ns in self.namespaces:
            if ns.nsid == self.nsid:
                return ns
        return None

    @property
    def current_dlfeat(self) -> int | None:
        ns = self.current_namespace
        return None if ns is None else ns.dlfeat


@dataclass(frozen=True)
class SmartSnapshot:
    """The health summary from `smartctl -j -x`."""

    passed: bool | None
    temperature_c: int | None
    power_on_hours: int | None
    percentage_used: int | None  # NVMe
    available_spare: int | None  # NVMe
    media_errors: int | None  # NVMe
    reallocated_sectors: int | None  # ATA attribute 5
    exit_status: int
    messages: tuple[str, ...] = ()

    @property
    def read_nothing(self) -> bool:
        """Not one health figure was read."""
        return all(v is None for v in (
            self.passed, self.temperature_c, self.power_on_hours, self.percentage_used,
            self.available_spare, self.media_errors, self.reallocated_sectors))

    def to_json(self) -> dict[str, Any]:
        return {
            "passed": self.passed,
            "temperature_c": self.temperature_c,
            "power_on_hours": self.power_on_hours,
            "percentage_used": self.percentage_used,
            "available_spare": self.available_spare,
            "media_errors": self.media_errors,
            "reallocated_sectors": self.reallocated_sectors,
            "exit_status": self.exit_status,
            "messages": list(self.messages),
        }


@dataclass(frozen=True)
class ToolProblem:
    """One tool that failed for one drive: the drive is still listed."""

    tool: str  # "hdparm", "nvme id-ctrl", "smartctl", ...
    kind: str  # short code: "failed", "timeout", "not-found", "parse", "pass-through"...
    message: str

    def to_json(self) -> dict[str, str]:
        return {"tool": self.tool, "kind": self.kind, "message": self.message}


@dataclass(frozen=True)
class Drive:
    """One block device ssdbench can show, test or refuse."""

    path: str  # /dev/sda
    name: str  # sda
    transport: str
    model: str
    serial: str
    firmware: str
    size_bytes: int
    logical_block_size: int
    physical_block_size: int
    rotational: bool
    trim_supported: bool
    protected: bool
    protect_reasons: tuple[str, ...]
    erase_methods: tuple[str, ...]
    ata_security: AtaSecurity | None
    nvme: NvmeInfo | None
    erase_refusal: tuple[str, ...] = ()
    vendor: str = ""
    removable: bool = False
    read_only: bool = False
    drat: bool = False
    rzat: bool = False
    trim_limit_blocks: int | None = None
    discard_max_bytes: int = 0
    ata: AtaIdentify | None = None
    smart: SmartSnapshot | None = None
    partitions: tuple[str, ...] = ()
    loop_backing_file: str | None = None
    problems: tuple[ToolProblem, ...] = field(default=())
    sed: SedState | None = None  # TCG Level 0 Discovery (devices/sed.py); None: no answer
    # SAS/SCSI transport opted in as a SATA drive behind an ATA pass-through HBA (discover's
    # ata_passthrough): hdparm -I was read and ATA erase methods are offered.
    ata_passthrough: bool = False
    wwn: str = ""  # WWN / EUI-64 / NGUID (:func:`world_wide_name`); "" when none
    place: str = ""  # where it is plugged in (:func:`transport_place`); "" when unknown
    # the kernel names of the other drives present that report the same serial (kiosk and
    # station set it: a shared serial names no drive)
    serial_shared_with: tuple[str, ...] = ()
    # a SAS/SCSI drive formatted with blocks the kernel cannot use (520, 528: sd shows it
    # with capacity 0), its block length from READ CAPACITY(16); None otherwise. Only the
    # erase plan with scsi_reformat_512 can use it (docs/devices.md).
    scsi_block_size: int | None = None

    @property
    def needs_scsi_reformat(self) -> bool:
        """Whether only the erase plan's ``scsi_reformat_512`` makes the drive usable."""
        return self.scsi_block_size is not None

    @property
    def sed_locked(self) -> bool:
        """A self-encrypting drive that is locked (or shows its shadow MBR): no erase."""
        return self.sed is not None and self.sed.blocks_erase

    @property
    def consent_id(self) -> str:
        """What an operator names to consent to destruction: the serial, else the name."""
        return self.serial or self.name

    @property
    def identity(self) -> DriveIdentity:
        """Everything the drive reports and the kernel sees, together (the station, the
        journal, resume and the record know a drive by it; consent by ``consent_id``)."""
        return DriveIdentity(serial=self.serial, model=self.model, wwn=self.wwn,
                             size_bytes=self.size_bytes,
                             # no sysfs link (a recording, a fake): its kernel name
                             place=self.place or f"kernel name {self.name}",
                             backing=self.loop_backing_file or "")

    @property
    def ata_sanitize(self) -> AtaSanitize | None:
        return None if self.ata is None else self.ata.sanitize

    def to_json(self) -> dict[str, Any]:
        sanitize = self.ata_sanitize
        return {
            "path": self.path,
            "name": self.name,
            "transport": self.transport,
            "model": self.model,
            "serial": self.serial,
            "firmware": self.firmware,
            "vendor": self.vendor,
            "size_bytes": self.size_bytes,
            "logical_block_size": self.logical_block_size,
            "physical_block_size": self.physical_block_size,
            "rotational": self.rotational,
            "removable": self.removable,
            "read_only": self.read_only,
            "trim_supported": self.trim_supported,
            "drat": self.drat,
            "rzat": self.rzat,
            "discard_max_bytes": self.discard_max_bytes,
            "protected": self.protected,
            "protect_reasons": list(self.protect_reasons),
            "erase_methods": list(self.erase_methods),
            "erase_refusal": list(self.erase_refusal),
            "consent_id": self.consent_id,
            "ata_security": None if self.ata_security is None else self.ata_security.to_json(),
            "ata_sanitize": None
            if sanitize is None
            else {
                "supported": sanitize.supported,
                "block_erase": sanitize.block_erase,
                "crypto_scramble": sanitize.crypto_scramble,
                "overwrite": sanitize.overwrite,
            },
            "nvme": None if self.nvme is None else self.nvme.to_json(),
            "smart": None if self.smart is None else self.smart.to_json(),
            "partitions": list(self.partitions),
            "loop_backing_file": self.loop_backing_file,
            "problems": [p.to_json() for p in self.problems],
            # only for drives that answered a TCG Level 0 Discovery (keeps other drives' JSON)
            **({} if self.sed is None else {"sed": self.sed.to_json()}),
            **({"ata_passthrough": True} if self.ata_passthrough else {}),
            # only when another drive present reported the same serial
            **({"serial_shared_with": list(self.serial_shared_with)}
               if self.serial_shared_with else {}),
            # only for a drive of 520/528-byte blocks (keeps other drives' JSON)
            **({"scsi_block_size": self.scsi_block_size}
               if self.scsi_block_size is not None else {}),
        }
