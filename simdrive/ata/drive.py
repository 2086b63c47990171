"""An ATA SSD's command set: IDENTIFY, the Security feature set, SANITIZE, TRIM, reads/writes.

The drive's non-volatile state (passwords, security level, sanitize result) lives in
``state.json`` and its data in the sparse ``data.img``, both in one folder that outlives a
guest's power cut. Every change to ``state.json`` is written atomically and fsynced
before the command completes. Volatile state (frozen, locked, the wrong-password count,
ERASE PREPARE) is set at power-on (:meth:`AtaDrive.power_on`), as on a real drive.

Host Protected Area (ACS-3 4.11, what ``hdparm -N`` sends): READ NATIVE MAX ADDRESS (EXT)
answers the native max; SET MAX ADDRESS (EXT), directly after it, sets the current max -
volatile until the next power-on, or non-volatile (count bit 0, hdparm's ``p``) in
``state.json``, once per power-on. IDENTIFY, READ CAPACITY and the media commands follow
the current max.

Security states (ACS-3 4.18.11): SEC1 not enabled, SEC2 not enabled + frozen, SEC4
enabled + locked, SEC5 enabled + unlocked, SEC6 enabled + unlocked + frozen; "expired"
after five wrong passwords until the next power-on.
"""

from __future__ import annotations

import json
import os
from dataclasses import dataclass, field
from pathlib import Path

from simdrive.ata import smart as sm
from simdrive.ata.nbd import Backend, FileBackend

SECTOR = 512
MAX_TRIES = 5

# Status / error register bits
DRDY, DSC, ERR = 0x40, 0x10, 0x01
ABRT, IDNF = 0x04, 0x10

# Opcodes
IDENTIFY = 0xEC
SET_PASS, UNLOCK, ERASE_PREPARE, ERASE_UNIT, FREEZE, DISABLE = 0xF1, 0xF2, 0xF3, 0xF4, 0xF5, 0xF6
SANITIZE = 0xB4
DSM = 0x06
READ_DMA_EXT, WRITE_DMA_EXT, READ_SECTORS, READ_SECTORS_EXT = 0x25, 0x35, 0x20, 0x24
CHECK_POWER_MODE, FLUSH_CACHE, FLUSH_CACHE_EXT, SET_FEATURES = 0xE5, 0xE7, 0xEA, 0xEF
READ_LOG_EXT, SMART = 0x2F, 0xB0
READ_NATIVE_MAX_EXT, SET_MAX_EXT, READ_NATIVE_MAX, SET_MAX = 0x27, 0x37, 0xF8, 0xF9

# SANITIZE features and keys (hdparm.c)
SAN_STATUS, SAN_CRYPTO, SAN_BLOCK, SAN_OVERWRITE, SAN_FREEZE = 0x00, 0x11, 0x12, 0x14, 0x20
SAN_CRYPTO_KEY, SAN_BLOCK_KEY, SAN_FREEZE_KEY = 0x43727970, 0x426B4572, 0x46724C6B
SAN_SUCCEEDED, SAN_IN_PROGRESS, SAN_FROZEN = 0x80, 0x40, 0x20  # high byte of COUNT


@dataclass
class TaskFile:
    """ATA registers in or out (LBA48 layout: ``count`` and ``lba`` hold both halves)."""

    command: int = 0
    features: int = 0
    count: int = 0
    lba: int = 0
    device: int = 0
    status: int = DRDY | DSC
    error: int = 0

    def describe(self) -> str:
        return (f"cmd={self.command:02x} feat={self.features:04x} count={self.count:04x} "
                f"lba={self.lba:012x}")


@dataclass
class Outcome:
    tf: TaskFile
    data: bytes = b""
    note: str = ""

    @property
    def ok(self) -> bool:
        return not self.tf.status & ERR


@dataclass
class Config:
    """What the drive is; written once to ``config.json`` when the folder is created."""

    model: str = "SSDBENCH ATA EMU"
    serial: str = "ATAEMU0001"
    firmware: str = "EMU1.0"
    size_bytes: int = 16 * 1024 * 1024
    frozen_at_power_on: bool = False  # the BIOS sends FREEZE LOCK at boot
    erase_minutes: int = 2  # words 89/90
    enhanced_erase_minutes: int = 2
    power_cut_after: str = ""  # "set-pass": the guest powers off after SET PASSWORD
    smart: str = "healthy"  # the SMART profile (simdrive/ata/smart.py): healthy or worn
    self_test_seconds: float = 12.0  # a short self-test's length (extended: four times)
    sanitize: bool = True  # the Sanitize feature set (False: a drive with security erase only;
    # SAS: no SANITIZE command at all, so ssdbench offers FORMAT UNIT)
    # "ata": a SATA SSD behind SAT (scsi.py); "sas": a SAS SSD answering SCSI itself (sas.py)
    personality: str = "ata"
    # SAS only (simdrive/ata/sas.py): the logical block size at creation (512, 520, 528,
    # 4096 or 4160), the protection type READ CAPACITY(16) reports (0: none), how long a
    # SANITIZE and a FORMAT UNIT run (progress through REQUEST SENSE meanwhile), the
    # sanitize service actions the drive lacks and those that end in failure mode
    # ("overwrite", "block", "crypto")
    block_size: int = 512
    protection_type: int = 0
    sanitize_seconds: float = 8.0
    format_seconds: float = 6.0
    unsupported_sanitize: list[str] = field(default_factory=list)
    failing_sanitize: list[str] = field(default_factory=list)


@dataclass
class Persistent:
    user_password: str | None = None  # hex of the 32 bytes
    master_password: str = ("00" * 32)
    level_max: bool = False
    sanitize_succeeded: bool = False
    erase_count: int = 0
    max_sectors: int | None = None  # a non-volatile SET MAX ADDRESS (None: the native max)
    smart_enabled: bool = True
    self_test_log: list[list[int | None]] = field(default_factory=list)  # oldest first
    # SAS (sas.py): the block size and protection type a FORMAT UNIT left (None: the
    # config's), a SANITIZE / FORMAT UNIT under way (resumed at power-on, as SBC-4 says),
    # sanitize failure mode and whether the failed command allowed EXIT FAILURE MODE (AUSE)
    block_size: int | None = None
    protection_type: int | None = None
    operation: dict[str, object] | None = None
    sanitize_failed: bool = False
    sanitize_ause: bool = False
    scsi_self_test_log: list[list[int | None]] = field(default_factory=list)  # newest last


@dataclass
class Volatile:
    frozen: bool = False
    locked: bool = False
    tries_left: int = MAX_TRIES
    prepared: bool = False
    sanitize_frozen: bool = False
    max_sectors: int | None = None  # a volatile SET MAX ADDRESS, until power-off
    native_read: bool = False  # the last command was READ NATIVE MAX ADDRESS (EXT)
    permanent_max_set: bool = False  # one non-volatile SET MAX per power-on
    log: list[str] = field(default_factory=list)


def _ata_string(text: str, words: int, *, right: bool = False) -> list[int]:
    """An ATA string: the bytes of ``text`` padded with spaces (on the left when ``right``,
    as drives pad their serials) to ``words`` words, two bytes a word, the first in the high
    byte. ACS says ASCII; the emulated drive sends any string's UTF-8 bytes as they are
    (the hostile identity's U+202E: what a counterfeit drive's firmware may send), cut to
    the field."""
    data = text.encode("utf-8")
    raw = (data.rjust(2 * words) if right else data.ljust(2 * words))[: 2 * words]
    return [(raw[i] << 8) | raw[i + 1] for i in range(0, len(raw), 2)]


class AtaDrive:
    """``backend``: where the data lives (default: the sparse ``data.img`` in the folder;
    :class:`simdrive.ata.nbd.NbdBackend` for simdrive's FTL)."""

    def __init__(self, folder: Path, backend: Backend | None = None) -> None:
        self.folder = folder
        self.config = Config(**json.loads((folder / "config.json").read_text()))
        state = folder / "state.json"
        self.nv = Persistent(**json.loads(state.read_text())) if state.exists() else Persistent()
        self.data_path = folder / "data.img"
        self.data: Backend = backend or FileBackend(self.data_path, self.config.size_bytes)
        self.vol = Volatile()
        self.smart = sm.Smart(self.config.smart, self.config.self_test_seconds,
                              self.nv.self_test_log, self._save)
        self.power_on()

    @staticmethod
    def create(folder: Path, config: Config) -> AtaDrive:
        folder.mkdir(parents=True, exist_ok=True)
        (folder / "config.json").write_text(json.dumps(config.__dict__, indent=1) + "\n")
        return AtaDrive(folder)

    @property
    def sectors(self) -> int:
        """The native max: the drive's whole capacity in sectors."""
        return self.config.size_bytes // SECTOR

    @property
    def current_sectors(self) -> int:
        """What the host sees: the native max unless a SET MAX ADDRESS hides the end (HPA)."""
        if self.vol.max_sectors is not None:
            return self.vol.max_sectors
        return self.nv.max_sectors if self.nv.max_sectors is not None else self.sectors

    def power_on(self) -> None:
        self.vol = Volatile(
            frozen=self.config.frozen_at_power_on,
            locked=self.nv.user_password is not None,
        )
        self.smart.power_on()

    def _save(self) -> None:
        tmp = self.folder / "state.json.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(self.nv.__dict__, f, indent=1)
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.folder / "state.json")
        dfd = os.open(self.folder, os.O_RDONLY)
        try:
            os.fsync(dfd)
        finally:
            os.close(dfd)

    # ---- IDENTIFY DEVICE -------------------------------------------------------------

    @property
    def enabled(self) -> bool:
        return self.nv.user_password is not None

    @property
    def expired(self) -> bool:
        return self.vol.tries_left <= 0

    def security_word(self) -> int:
        w = 0x0001 | 0x0020  # supported, enhanced erase supported
        if self.enabled:
            w |= 0x0002
        if self.vol.locked:
            w |= 0x0004
        if self.vol.frozen:
            w |= 0x0008
        if self.expired:
            w |= 0x0010
        if self.nv.level_max:
            w |= 0x0100
        return w

    def identify(self) -> bytes:
        w = [0] * 256
        n = self.current_sectors
        w[0] = 0x0040
        w[1], w[3], w[6] = 16383, 16, 63
        w[10:20] = _ata_string(self.config.serial, 10, right=True)  # "": no serial, blanks
        w[23:27] = _ata_string(self.config.firmware, 4)
        w[27:47] = _ata_string(self.config.model, 20)
        w[47] = 0x8001
        w[49] = 0x0F00  # LBA, DMA, IORDY
        w[53] = 0x0007
        # Sanitize: supported (12), crypto (13), block (15); multiple-sector setting valid.
        w[59] = (0x1000 | 0x2000 | 0x8000 if self.config.sanitize else 0) | 0x0101
        w[60], w[61] = min(n, 0x0FFFFFFF) & 0xFFFF, min(n, 0x0FFFFFFF) >> 16
        w[63], w[64] = 0x0007, 0x0003
        w[65] = w[66] = w[67] = w[68] = 120
        w[69] = 0x4020  # deterministic read after TRIM (14), zeroes after TRIM (5)
        w[75] = 31
        w[76] = 0x0106  # SATA Gen1/Gen2, NCQ
        w[80] = 0x07F0  # ATA/ATAPI-4 .. ACS-3
        w[81] = 0x0110
        # NOP, HPA, look-ahead, WC, Security, SMART (no SET MAX security extension: 83/86 bit 8)
        w[82] = 0x4000 | 0x0400 | 0x0040 | 0x0020 | 0x0002 | 0x0001
        w[83] = 0x4000 | 0x2000 | 0x1000 | 0x0400  # FLUSH EXT, FLUSH, LBA48
        # SMART error logging and self-test (0-1); no GPL: hdparm -I then asks for no log
        # pages, and smartctl reads SMART's own logs
        w[84] = 0x4000 | 0x0003
        w[85] = 0x0400 | 0x0040 | 0x0020 | (0x0001 if self.nv.smart_enabled else 0) | (
            0x0002 if self.enabled else 0)
        w[86] = 0x3400
        w[87] = 0x4000 | 0x0003
        w[88] = 0x407F
        w[89] = self.config.erase_minutes // 2 if self.config.erase_minutes else 0
        w[90] = self.config.enhanced_erase_minutes // 2 if self.config.enhanced_erase_minutes else 0
        w[92] = 0xFFFE
        w[100:104] = [(n >> s) & 0xFFFF for s in (0, 16, 32, 48)]
        w[105] = 8  # DSM: 8 blocks of 64 ranges
        w[106] = 0x4000
        w[128] = self.security_word()
        w[169] = 0x0001  # TRIM supported
        w[217] = 0x0001  # non-rotating
        w[222] = 0x107F  # Serial ATA, SATA 1.0a .. 3.2
        w[255] = 0x00A5
        raw = bytearray(b"".join(x.to_bytes(2, "little") for x in w))
        raw[511] = (-sum(raw[:511])) & 0xFF
        return bytes(raw)

    # ---- dispatch -------------------------------------------------------------------

    def execute(self, tf: TaskFile, data_out: bytes) -> Outcome:
        prepared, self.vol.prepared = self.vol.prepared, False
        native_read, self.vol.native_read = self.vol.native_read, False
        cmd = tf.command
        if cmd == IDENTIFY:
            return Outcome(TaskFile(), self.identify(), "IDENTIFY DEVICE")
        if cmd == SET_PASS:
            return self._set_password(data_out)
        if cmd == UNLOCK:
            return self._unlock(data_out)
        if cmd == ERASE_PREPARE:
            return self._erase_prepare()
        if cmd == ERASE_UNIT:
            return self._erase_unit(data_out, prepared)
        if cmd == FREEZE:
            return self._freeze()
        if cmd == DISABLE:
            return self._disable(data_out)
        if cmd == SANITIZE:
            return self._sanitize(tf)
        if cmd in (READ_NATIVE_MAX_EXT, READ_NATIVE_MAX):
            return self._read_native_max(cmd)
        if cmd in (SET_MAX_EXT, SET_MAX):
            return self._set_max(tf, native_read)
        if cmd == DSM:
            return self._trim(tf, data_out)
        if cmd in (READ_SECTORS, READ_SECTORS_EXT, READ_DMA_EXT):
            if self.vol.locked:
                return _abort("read refused: locked")
            count = tf.count or (0x10000 if cmd != READ_SECTORS else 0x100)
            if tf.lba + count > self.current_sectors:
                return _abort(f"READ lba={tf.lba} beyond the max {self.current_sectors}", IDNF)
            return Outcome(TaskFile(), self.read(tf.lba * SECTOR, count * SECTOR), "READ")
        if cmd == WRITE_DMA_EXT:
            if self.vol.locked:
                return _abort("write refused: locked")
            if tf.lba * SECTOR + len(data_out) > self.current_sectors * SECTOR:
                return _abort(f"WRITE lba={tf.lba} beyond the max {self.current_sectors}", IDNF)
            self.write(tf.lba * SECTOR, data_out)
            return Outcome(TaskFile(), note="WRITE")
        if cmd == READ_LOG_EXT:
            if tf.lba & 0xFF == 0:  # the log directory: GPL version 1, no logs
                return Outcome(TaskFile(), (1).to_bytes(2, "little") + bytes(510), "LOG DIRECTORY")
            return _abort(f"READ LOG EXT log {tf.lba & 0xFF:#04x} not implemented")
        if cmd == SMART:
            return self._smart(tf)
        if cmd in (CHECK_POWER_MODE,):
            return Outcome(TaskFile(count=0xFF), note="CHECK POWER MODE: active")
        if cmd in (FLUSH_CACHE, FLUSH_CACHE_EXT):
            self.data.flush()
            return Outcome(TaskFile(), note="FLUSH CACHE")
        return _abort(f"command {cmd:#04x} not implemented")

    # ---- SMART (simdrive/ata/smart.py) ------------------------------------------------

    def _smart(self, tf: TaskFile) -> Outcome:
        feat, low = tf.features & 0xFF, tf.lba & 0xFF
        if (tf.lba >> 8) & 0xFFFF != sm.SIGNATURE:
            return _abort(f"SMART {feat:#04x} without the 4Fh/C2h signature")
        if feat in (sm.ENABLE, sm.DISABLE):
            self.nv.smart_enabled = feat == sm.ENABLE
            self._save()
            return Outcome(TaskFile(lba=tf.lba),
                           note=f"SMART {'EN' if feat == sm.ENABLE else 'DIS'}ABLE OPERATIONS")
        if not self.nv.smart_enabled:
            return _abort(f"SMART {feat:#04x}: SMART is disabled")
        if feat == sm.READ_DATA:
            return Outcome(TaskFile(lba=tf.lba), self.smart.read_data(), "SMART READ DATA")
        if feat == sm.READ_THRESHOLDS:
            return Outcome(TaskFile(lba=tf.lba), self.smart.read_thresholds(),
                           "SMART READ THRESHOLDS")
        if feat in (sm.AUTOSAVE, sm.AUTO_OFFLINE):
            return Outcome(TaskFile(lba=tf.lba), note=f"SMART {feat:#04x}: ok")
        if feat == sm.RETURN_STATUS:
            failing = self.smart.failing()
            word = sm.THRESHOLD_EXCEEDED if failing else sm.SIGNATURE
            said = "threshold exceeded" if failing else "good"
            return Outcome(TaskFile(lba=(word << 8) | low), note=f"SMART RETURN STATUS: {said}")
        if feat == sm.OFFLINE_IMMEDIATE:
            note = self.smart.start(low)
            return Outcome(TaskFile(lba=tf.lba), note=note) if note else _abort(
                f"SMART EXECUTE OFF-LINE IMMEDIATE {low:#04x} refused")
        if feat == sm.READ_LOG:
            data = self.smart.read_log(low)
            if data is None:
                return _abort(f"SMART READ LOG {low:#04x}: no such log")
            return Outcome(TaskFile(lba=tf.lba), data, f"SMART READ LOG {low:#04x}")
        return _abort(f"SMART {feat:#04x} not implemented")

    # ---- Security feature set --------------------------------------------------------

    @staticmethod
    def _pw(data: bytes) -> tuple[bool, str]:
        """(master?, password hex) from a security command's 512-byte data."""
        return bool(data[0] & 1), data[2:34].hex()

    def _wrong(self, what: str) -> Outcome:
        self.vol.tries_left -= 1
        if self.expired:
            return _abort(f"{what}: wrong password; attempt counter expired")
        return _abort(f"{what}: wrong password ({self.vol.tries_left} tries left)")

    def _matches(self, master: bool, pw: str, *, unlock: bool) -> bool:
        if master:
            # In Maximum level the master password erases but does not unlock/disable.
            return pw == self.nv.master_password and not (unlock and self.nv.level_max)
        return pw == self.nv.user_password

    def _set_password(self, data: bytes) -> Outcome:
        if self.vol.frozen:
            return _abort("SET PASSWORD refused: frozen")
        if self.vol.locked:
            return _abort("SET PASSWORD refused: locked")
        master, pw = self._pw(data)
        if master:
            self.nv.master_password = pw
        else:
            self.nv.user_password = pw
            self.nv.level_max = bool(data[1] & 1)
        self._save()
        who = "master" if master else "user"
        note = f"SET PASSWORD ({who}, level {'max' if self.nv.level_max else 'high'}): set"
        if not master and self.config.power_cut_after == "set-pass":
            (self.folder / "power-cut").write_text("after SET PASSWORD\n")
            _power_cut()
        return Outcome(TaskFile(), note=note)

    def _unlock(self, data: bytes) -> Outcome:
        if self.vol.frozen:
            return _abort("UNLOCK refused: frozen")
        if self.expired:
            return _abort("UNLOCK refused: attempt counter expired (power-cycle)")
        if not self.enabled:
            return _abort("UNLOCK refused: security not enabled")
        master, pw = self._pw(data)
        if not self._matches(master, pw, unlock=True):
            return self._wrong("UNLOCK")
        self.vol.locked = False
        self.vol.tries_left = MAX_TRIES
        return Outcome(TaskFile(), note="UNLOCK: unlocked")

    def _erase_prepare(self) -> Outcome:
        if self.vol.frozen:
            return _abort("ERASE PREPARE refused: frozen")
        self.vol.prepared = True
        return Outcome(TaskFile(), note="ERASE PREPARE")

    def _erase_unit(self, data: bytes, prepared: bool) -> Outcome:
        if not prepared:
            return _abort("ERASE UNIT refused: not preceded by ERASE PREPARE")
        if self.vol.frozen:
            return _abort("ERASE UNIT refused: frozen")
        if self.expired:
            return _abort("ERASE UNIT refused: attempt counter expired (power-cycle)")
        if not self.enabled:
            return _abort("ERASE UNIT refused: security not enabled (no user password)")
        master, pw = self._pw(data)
        if not self._matches(master, pw, unlock=False):
            return self._wrong("ERASE UNIT")
        enhanced = bool(data[0] & 2)
        self._erase_all()
        self.nv.user_password = None
        self.nv.level_max = False
        self.nv.erase_count += 1
        self._save()
        self.vol.locked = False
        self.vol.tries_left = MAX_TRIES
        kind = "enhanced" if enhanced else "normal"
        note = f"ERASE UNIT ({kind}): all user data erased, password removed"
        return Outcome(TaskFile(), note=note)

    def _freeze(self) -> Outcome:
        if self.vol.locked:
            return _abort("FREEZE LOCK refused: locked")
        self.vol.frozen = True
        return Outcome(TaskFile(), note="FREEZE LOCK: frozen")

    def _disable(self, data: bytes) -> Outcome:
        if self.vol.frozen:
            return _abort("DISABLE PASSWORD refused: frozen")
        if self.vol.locked:
            return _abort("DISABLE PASSWORD refused: locked")
        if not self.enabled:
            return Outcome(TaskFile(), note="DISABLE PASSWORD: security was not enabled")
        master, pw = self._pw(data)
        if not self._matches(master, pw, unlock=True):
            return self._wrong("DISABLE PASSWORD")
        self.nv.user_password = None
        self.nv.level_max = False
        self._save()
        return Outcome(TaskFile(), note="DISABLE PASSWORD: security disabled")

    # ---- Host Protected Area -----------------------------------------------------------

    def _read_native_max(self, cmd: int) -> Outcome:
        last = self.sectors - 1
        self.vol.native_read = True
        if cmd == READ_NATIVE_MAX_EXT:
            return Outcome(TaskFile(lba=last, device=0x40), note=f"READ NATIVE MAX EXT: {last}")
        last = min(last, 0x0FFFFFFF)  # 28-bit: LBA 24-27 in the device register
        return Outcome(TaskFile(lba=last & 0xFFFFFF, device=0x40 | (last >> 24)),
                       note=f"READ NATIVE MAX: {last}")

    def _set_max(self, tf: TaskFile, native_read: bool) -> Outcome:
        ext = tf.command == SET_MAX_EXT
        name = "SET MAX ADDRESS EXT" if ext else "SET MAX ADDRESS"
        if not ext and tf.features & 0xFF:
            return _abort(f"{name} feature {tf.features:#04x}: security extension not supported")
        if not native_read:
            return _abort(f"{name} refused: not preceded by READ NATIVE MAX ADDRESS")
        if self.vol.locked:
            return _abort(f"{name} refused: security locked")
        lba = tf.lba if ext else (tf.lba & 0xFFFFFF) | ((tf.device & 0x0F) << 24)
        sectors, permanent = lba + 1, bool(tf.count & 1)
        if sectors > self.sectors:
            return _abort(f"{name} {sectors} refused: beyond the native max {self.sectors}", IDNF)
        if permanent and self.vol.permanent_max_set:
            return _abort(f"{name} refused: one non-volatile change per power cycle")
        if permanent:
            self.vol.permanent_max_set = True
            self.nv.max_sectors = None if sectors == self.sectors else sectors
            self._save()
        self.vol.max_sectors = sectors
        kind = "non-volatile" if permanent else "volatile"
        return Outcome(TaskFile(lba=lba, device=0x40),
                       note=f"{name} ({kind}): max {sectors} of {self.sectors} sectors")

    # ---- SANITIZE, TRIM, data --------------------------------------------------------

    def _sanitize(self, tf: TaskFile) -> Outcome:
        feat, key = tf.features & 0xFF, tf.lba & 0xFFFFFFFF
        if not self.config.sanitize:
            return _abort("SANITIZE refused: the Sanitize feature set is not supported")
        if feat == SAN_STATUS:
            flags = SAN_SUCCEEDED if self.nv.sanitize_succeeded else 0
            if self.vol.sanitize_frozen:
                flags |= SAN_FROZEN
            return Outcome(TaskFile(count=flags << 8), note=f"SANITIZE STATUS: {flags:#04x}")
        if self.vol.sanitize_frozen:
            return _abort("SANITIZE refused: sanitize frozen")
        if self.vol.locked:
            return _abort("SANITIZE refused: security locked")
        wanted = {SAN_BLOCK: SAN_BLOCK_KEY, SAN_CRYPTO: SAN_CRYPTO_KEY, SAN_FREEZE: SAN_FREEZE_KEY}
        if feat not in wanted or key != wanted[feat]:
            return _abort(f"SANITIZE feature {feat:#04x} key {key:#x} refused")
        if feat == SAN_FREEZE:
            self.vol.sanitize_frozen = True
            return Outcome(TaskFile(), note="SANITIZE FREEZE LOCK")
        self._erase_all()
        self.nv.sanitize_succeeded = True
        self._save()
        name = "BLOCK ERASE" if feat == SAN_BLOCK else "CRYPTO SCRAMBLE"
        # Completes at once: the first status poll finds it done.
        return Outcome(TaskFile(), note=f"SANITIZE {name}: done")

    def _trim(self, tf: TaskFile, data: bytes) -> Outcome:
        if not tf.features & 1:
            return _abort("DATA SET MANAGEMENT without the TRIM bit")
        if self.vol.locked:
            return _abort("TRIM refused: locked")
        ranges = 0
        for off in range(0, len(data), 8):
            entry = int.from_bytes(data[off : off + 8], "little")
            lba, count = entry & 0xFFFFFFFFFFFF, entry >> 48
            if count:
                self.punch(lba * SECTOR, count * SECTOR)
                ranges += 1
        return Outcome(TaskFile(), note=f"TRIM: {ranges} ranges")

    def _erase_all(self) -> None:
        self.data.erase_all()

    def punch(self, offset: int, length: int) -> None:
        """Deallocate (TRIM): reads back as zeros."""
        self.data.trim(offset, length)

    def read(self, offset: int, length: int) -> bytes:
        return self.data.read(offset, length)

    def write(self, offset: int, data: bytes) -> None:
        self.data.write(offset, data)


def _abort(note: str, error: int = ABRT) -> Outcome:
    return Outcome(TaskFile(status=DRDY | DSC | ERR, error=error), note=note)


def _power_cut() -> None:
    """Cut the guest's power at once (no sync, no shutdown): sysrq 'o'."""
    with open("/proc/sysrq-trigger", "w") as f:
        f.write("o")
