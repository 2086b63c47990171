"""What the erase room needs from a drive, what it is told, and what it records.

The erase room does not depend on discovery's ``Drive``: it takes an :class:`EraseTarget`
(built by :func:`ssdbench.erase.adapter.target_from_drive`, or by hand in tests).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

if TYPE_CHECKING:
    from ssdbench.devices.model import DriveIdentity

# Method names: the vocabulary shared with discovery (`Drive.erase_methods`), run.json
# (`erase.method`) and summary.csv (`erase_method`).
ATA_SECURITY_ERASE = "ata-security-erase"
ATA_SECURITY_ERASE_ENHANCED = "ata-security-erase-enhanced"
ATA_SANITIZE_BLOCK = "ata-sanitize-block"
ATA_SANITIZE_CRYPTO = "ata-sanitize-crypto"
NVME_FORMAT_USER_DATA = "nvme-format-user-data"
NVME_FORMAT_CRYPTO = "nvme-format-crypto"
NVME_SANITIZE_BLOCK = "nvme-sanitize-block"
NVME_SANITIZE_CRYPTO = "nvme-sanitize-crypto"
NVME_SANITIZE_OVERWRITE = "nvme-sanitize-overwrite"
# SAS/SCSI: SCSI SANITIZE through sg3_utils (erase/scsi.py)
SCSI_SANITIZE = "scsi-sanitize"  # the best the drive has: block, else crypto, else overwrite
SCSI_SANITIZE_BLOCK = "scsi-sanitize-block"
SCSI_SANITIZE_CRYPTO = "scsi-sanitize-crypto"
SCSI_SANITIZE_OVERWRITE = "scsi-sanitize-overwrite"  # one pass of zeros
# FORMAT UNIT (sg_format, the current block size kept) on a drive that lists no SANITIZE at
# all, as many older SAS drives: re-initializes every block; Clear at most (record/nist.py)
SCSI_FORMAT = "scsi-format"
DISCARD = "discard"  # the fallback with secure=false (erase_fallback = "discard")
# Clear by overwrite: one pass over every block (erase/overwrite.py); any drive, the
# fallback with erase_fallback = "overwrite" or chosen by name
OVERWRITE = "overwrite"
FALLBACKS = ("fail", "discard", "overwrite")

ATA_METHODS = (
    ATA_SECURITY_ERASE,
    ATA_SECURITY_ERASE_ENHANCED,
    ATA_SANITIZE_BLOCK,
    ATA_SANITIZE_CRYPTO,
)
NVME_METHODS = (
    NVME_FORMAT_USER_DATA,
    NVME_FORMAT_CRYPTO,
    NVME_SANITIZE_BLOCK,
    NVME_SANITIZE_CRYPTO,
    NVME_SANITIZE_OVERWRITE,
)
# ``scsi-sanitize`` is what discovery offers and a plan asks for; the record's method is the
# service action that ran (one of the other three)
SCSI_SANITIZE_METHODS = (
    SCSI_SANITIZE,
    SCSI_SANITIZE_BLOCK,
    SCSI_SANITIZE_CRYPTO,
    SCSI_SANITIZE_OVERWRITE,
)
SCSI_METHODS = (*SCSI_SANITIZE_METHODS, SCSI_FORMAT)
SECURE_METHODS = ATA_METHODS + NVME_METHODS + SCSI_METHODS
ALL_METHODS = (*SECURE_METHODS, OVERWRITE, DISCARD)


class EraseError(Exception):
    """The erase stage failed; the message says why and what to do."""

    def __init__(self, message: str, *, method: str | None = None) -> None:
        super().__init__(message)
        self.method = method


class NoEraseMethod(EraseError):
    """Nothing can securely erase this drive (USB bridge, virtual disk, frozen, ...)."""


class VerificationFailed(EraseError):
    """Markers written before the erase were still readable after it."""


class Clock(Protocol):
    """Time for polling loops; tests pass a fake that advances instead of sleeping."""

    def monotonic(self) -> float: ...

    def sleep(self, seconds: float) -> None: ...


class SystemClock:
    def monotonic(self) -> float:
        return time.monotonic()

    def sleep(self, seconds: float) -> None:
        time.sleep(seconds)


@dataclass(frozen=True)
class AtaSecurityState:
    """ATA Security feature set (IDENTIFY words 82, 89, 90, 128) plus SANITIZE support."""

    supported: bool
    enabled: bool
    locked: bool
    frozen: bool
    expired: bool
    enhanced_supported: bool
    erase_minutes: int | None = None
    enhanced_erase_minutes: int | None = None
    level: str | None = None  # "high" / "maximum" when enabled
    sanitize_block: bool = False
    sanitize_crypto: bool = False
    sanitize_overwrite: bool = False


@dataclass(frozen=True)
class NvmeCaps:
    """Identify Controller bits the erase needs (libnvme nvme-types names)."""

    oacs: int
    fna: int
    sanicap: int
    oncs: int = 0
    dlfeat: int = 0

    @property
    def format_supported(self) -> bool:
        return bool(self.oacs & 0x2)

    @property
    def format_crypto_supported(self) -> bool:
        return bool(self.fna & 0x4)

    @property
    def sanitize_crypto(self) -> bool:
        return bool(self.sanicap & 0x1)

    @property
    def sanitize_block(self) -> bool:
        return bool(self.sanicap & 0x2)

    @property
    def sanitize_overwrite(self) -> bool:
        return bool(self.sanicap & 0x4)


@dataclass(frozen=True)
class EraseTarget:
    """The drive to erase, as the erase room sees it."""

    path: str  # whole device: /dev/sda, /dev/nvme0n1
    name: str  # kernel name: sda, nvme0n1
    transport: str  # sata, ata, nvme, usb, sas, scsi, virtio, loop, mmc, other
    serial: str  # the consent id: serial, or the kernel name when there is none
    model: str
    size_bytes: int
    logical_block_size: int
    ata: AtaSecurityState | None = None
    nvme: NvmeCaps | None = None
    nvme_controller: str | None = None  # /dev/nvme0 (derived from the name when None)
    nsid: int = 1
    sed_lock: str = ""  # a locked self-encrypting drive: why, and what to do (no erase)
    # A SAS/SCSI-transport drive the operator declared a SATA drive whose HBA passes ATA
    # commands through (discovery's per-drive opt-in): ATA methods are offered.
    ata_passthrough: bool = False
    # A SAS/SCSI drive discovery offered ``scsi-sanitize`` (it lists a SANITIZE service
    # action, or did not answer REPORT SUPPORTED OPERATION CODES): the erase's default
    scsi_sanitize: bool = False
    # A SAS/SCSI drive discovery offered ``scsi-format`` (it lists FORMAT UNIT and no
    # SANITIZE service action at all): the erase's default when it has no SANITIZE
    scsi_format: bool = False
    # Everything the drive reports and the kernel sees (``Drive.identity``): the password
    # journal knows the drive by it, so twins that share a serial keep a password each.
    identity: DriveIdentity | None = None

    @property
    def controller_path(self) -> str:
        if self.nvme_controller:
            return self.nvme_controller
        name = self.name
        if name.startswith("nvme") and "n" in name[4:]:
            return "/dev/" + name[: 4 + name[4:].index("n")]
        raise EraseError(f"{self.path}: cannot tell the NVMe controller of {name}")


@dataclass(frozen=True)
class EraseOptions:
    """Plan values for the erase stage (documented in docs/erase.md)."""

    allow_suspend: bool = False  # unfreeze a frozen ATA drive by suspend-to-RAM
    suspend_seconds: int = 5  # rtcwake -s
    enhanced: bool = True  # ATA: enhanced security erase when supported
    crypto: bool = False  # NVMe format: crypto erase (SES=2) when FNA bit 2 says so
    erase_fallback: str = "fail"  # "fail", "discard" or "overwrite"
    overwrite_pattern: str = "random"  # "random" (AES-CTR from a recorded seed) or "zero"
    overwrite_verify_percent: float = 1.0  # of the drive read back after an overwrite
    overwrite_seed: bytes | None = None  # the random pattern's seed (None: random); tests
    cancel: threading.Event | None = None  # the run's cancel: stops an overwrite between writes
    verify: bool = True  # write markers before, check them after
    marker_count: int = 16  # first, last, and evenly spread in between
    poll_interval_s: float = 2.0  # sanitize status polling
    sanitize_stall_s: float = 1800.0  # no sanitize progress for this long: fail
    sanitize_timeout_s: float | None = None  # overall limit; None: derived from capacity
    run: str = ""  # the run name for Progress events
    password: str | None = None  # the temporary ATA password (None: random)
    nonce: bytes | None = None  # marker nonce (None: random); tests make it fixed
    clock: Clock = field(default_factory=SystemClock)


def sanitize_limit_s(options: EraseOptions, size_bytes: int) -> float:
    """How long an NVMe or SCSI sanitize (or a SCSI format) may run in all: the plan's
    ``sanitize_timeout_s``, else six hours or 30 MB/s over the drive plus an hour."""
    return options.sanitize_timeout_s or max(6 * 3600.0, size_bytes / 30e6 + 3600.0)


@dataclass
class StallWatch:
    """The stall rule every sanitize poll shares (ATA, NVMe, SCSI): the progress the drive
    reports unchanged for ``stall_s`` (EraseOptions.sanitize_stall_s). ``last`` starts as
    the caller's "nothing seen yet", ``last_change`` at the start."""

    stall_s: float
    last_change: float
    last: object = None

    def stalled_for(self, progress: object, now: float) -> float | None:
        """Seconds without a change once that reached ``stall_s``, else None."""
        if progress != self.last:
            self.last, self.last_change = progress, now
            return None
        stuck = now - self.last_change
        return stuck if stuck >= self.stall_s else None


@dataclass(frozen=True)
class MarkerCheck:
    """One marker block: where, and whether it survived the erase."""

    offset: int  # bytes
    survived: bool


@dataclass(frozen=True)
class Verification:
    """The marker test around the erase."""

    markers: int
    block_bytes: int
    survivors: tuple[int, ...]  # byte offsets whose marker read back after the erase
    offsets: tuple[int, ...]

    @property
    def passed(self) -> bool:
        return not self.survivors

    def to_dict(self) -> dict[str, Any]:
        return {
            "markers": self.markers,
            "block_bytes": self.block_bytes,
            "offsets": list(self.offsets),
            "survivors": list(self.survivors),
            "passed": self.passed,
        }


@dataclass(frozen=True)
class EraseRecord:
    """What the erase did: run.json `erase` (the first five keys) and drive.json erases."""

    method: str
    secure: bool
    verified: bool | None  # None: verification was switched off
    duration_s: float
    detail: str
    device: str = ""
    serial: str = ""
    started: str = ""  # UTC, %Y-%m-%dT%H:%M:%SZ
    finished: str = ""
    verification: Verification | None = None
    steps: tuple[str, ...] = ()  # what was done, in order (human text)
    overwrite: dict[str, Any] | None = None  # the pass and its check (erase/overwrite.py)
    # a SAS drive reformatted before its sanitize (scsi_reformat_512, erase/scsi.py):
    # result, before/after {block_size, blocks, size_bytes, protection_type}, command, kernel
    scsi_reformat: dict[str, Any] | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "method": self.method,
            "secure": self.secure,
            "verified": self.verified,
            "duration_s": round(self.duration_s, 3),
            "detail": self.detail,
            "device": self.device,
            "serial": self.serial,
            "started": self.started,
            "finished": self.finished,
            "verification": None if self.verification is None else self.verification.to_dict(),
            "steps": list(self.steps),
            **({} if self.overwrite is None else {"overwrite": self.overwrite}),
            **({} if self.scsi_reformat is None else {"scsi_reformat": self.scsi_reformat}),
        }
