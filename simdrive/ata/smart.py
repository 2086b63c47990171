"""SMART for the emulated ATA drive (ACS-3 / ATA8-ACS, command B0h): what ``smartctl -x``,
``-t``, ``-c`` and ``-X`` send through SAT, answered from a wear profile.

Subcommands (the FEATURE register; LBA mid/high must hold the 4Fh/C2h signature): READ DATA
(D0h: the attributes, the off-line and self-test status, the polling times), READ
THRESHOLDS (D1h), ATTRIBUTE AUTOSAVE (D2h), EXECUTE OFF-LINE IMMEDIATE (D4h: short and
extended self-tests in off-line or captive mode, abort), READ LOG (D5h: the log directory,
the summary error log 01h and the self-test log 06h), ENABLE / DISABLE OPERATIONS (D8h,
D9h), RETURN STATUS (DAh: LBA mid/high C24Fh, or 2CF4h when a pre-failure attribute is at or
below its threshold) and AUTOMATIC OFF-LINE (DBh).

A self-test runs in the background for ``Config.self_test_seconds`` (extended: four times
that), counting its remaining tens of percent down in READ DATA byte 363, then logs its
result in the self-test log (kept in ``state.json``: it outlives a power cycle, as a real
drive's does). A power cycle interrupts a running test (status 2).

Profiles (``Config.smart``): ``healthy`` (no defects, 98% life left, 1,234 hours) and
``worn`` (1,520 reallocated and 48 pending sectors, 3% life left, 46,000 hours, its
self-tests fail at a read element). The attribute IDs and names are smartctl's defaults
(its drive database's DEFAULT entry; 177 is Wear_Leveling_Count on an SSD).
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from time import monotonic

SECTOR = 512
SIGNATURE = 0xC24F  # LBA high:mid of every SMART command, and of RETURN STATUS "good"
THRESHOLD_EXCEEDED = 0x2CF4
READ_DATA, READ_THRESHOLDS, AUTOSAVE, OFFLINE_IMMEDIATE, READ_LOG = 0xD0, 0xD1, 0xD2, 0xD4, 0xD5
ENABLE, DISABLE, RETURN_STATUS, AUTO_OFFLINE = 0xD8, 0xD9, 0xDA, 0xDB
# EXECUTE OFF-LINE IMMEDIATE subcommands (LBA low)
SHORT, EXTENDED, ABORT, SHORT_CAPTIVE, EXTENDED_CAPTIVE = 0x01, 0x02, 0x7F, 0x81, 0x82
# self-test execution status (upper nibble)
PASSED, ABORTED, INTERRUPTED, READ_FAILURE, RUNNING = 0x0, 0x1, 0x2, 0x7, 0xF
PREFAIL = 0x0001  # attribute flag bit 0: pre-failure (else old-age)


@dataclass(frozen=True)
class Attribute:
    ident: int
    flags: int
    value: int
    worst: int
    threshold: int
    raw: int


# smartctl's default names: 5 Reallocated_Sector_Ct, 9 Power_On_Hours, 12 Power_Cycle_Count,
# 177 Wear_Leveling_Count (SSD), 187 Reported_Uncorrect, 194 Temperature_Celsius, 197
# Current_Pending_Sector, 198 Offline_Uncorrectable, 199 UDMA_CRC_Error_Count.
# id, flags, threshold, then (value, worst, raw) healthy and worn
_TABLE = (
    (5, 0x0033, 10, (100, 100, 0), (8, 8, 1520)),
    (9, 0x0032, 0, (99, 99, 1234), (1, 1, 46000)),
    (12, 0x0032, 0, (99, 99, 57), (95, 95, 3180)),
    (177, 0x0013, 5, (98, 98, 61), (3, 3, 2911)),
    (187, 0x0032, 0, (100, 100, 0), (88, 88, 212)),
    (194, 0x0022, 0, (65, 52, 35), (58, 31, 42)),
    (197, 0x0012, 0, (100, 100, 0), (100, 100, 48)),
    (198, 0x0010, 0, (100, 100, 0), (100, 100, 48)),
    (199, 0x003E, 0, (100, 100, 0), (100, 100, 0)),
)
PROFILES: dict[str, tuple[Attribute, ...]] = {
    "healthy": tuple(Attribute(i, f, h[0], h[1], t, h[2]) for i, f, t, h, _ in _TABLE),
    "worn": tuple(Attribute(i, f, w[0], w[1], t, w[2]) for i, f, t, _, w in _TABLE),
}
FAILING_LBA = {"healthy": None, "worn": 0x1234}  # where a self-test finds its read error


def checksummed(raw: bytearray) -> bytes:
    raw[511] = (-sum(raw[:511])) & 0xFF
    return bytes(raw)


@dataclass
class Running:
    """A self-test running in the background (volatile: a power cycle interrupts it)."""

    test: int  # SHORT or EXTENDED
    start: float
    seconds: float


class Smart:
    """The SMART state machine of one drive. ``log``: the self-test log's entries, oldest
    first (lists of [test, status byte, hours, failing LBA or None]); kept by the caller in
    its non-volatile state, ``save`` called after each change."""

    def __init__(self, profile: str, self_test_seconds: float, log: list[list[int | None]],
                 save: object) -> None:
        if profile not in PROFILES:
            raise ValueError(f"SMART profile {profile!r}: one of {', '.join(PROFILES)}")
        self.profile = profile
        self.attrs = PROFILES[profile]
        self.self_test_seconds = self_test_seconds
        self.log = log
        self.save = save
        self.running: Running | None = None
        self.last_status = (log[-1][1] or 0) if log else PASSED << 4

    @property
    def hours(self) -> int:
        return next(a.raw for a in self.attrs if a.ident == 9)

    def power_on(self) -> None:
        """A power cycle interrupts a running self-test."""
        if self.running is not None:
            self._finish(INTERRUPTED)

    def failing(self) -> bool:
        return any(a.flags & PREFAIL and a.threshold and a.value <= a.threshold
                   for a in self.attrs)

    # ---- self-tests -----------------------------------------------------------------

    def _finish(self, status: int, remaining: int = 0) -> None:
        assert self.running is not None
        byte = (status << 4) | remaining
        lba = FAILING_LBA[self.profile] if status == READ_FAILURE else None
        self.log.append([self.running.test, byte, self.hours, lba])
        del self.log[:-21]  # the log holds 21 descriptors
        self.last_status = byte
        self.running = None
        self.save()  # type: ignore[operator]

    def tick(self) -> None:
        """Ends a running test whose time is up, with the profile's result."""
        if self.running is not None and \
                monotonic() - self.running.start >= self.running.seconds:
            self._finish(READ_FAILURE if FAILING_LBA[self.profile] is not None else PASSED)

    def status_byte(self) -> int:
        self.tick()
        if self.running is None:
            return self.last_status
        left = 1 - (monotonic() - self.running.start) / self.running.seconds
        return (RUNNING << 4) | min(9, max(1, int(left * 10) + 1))

    def start(self, subcommand: int) -> str:
        """EXECUTE OFF-LINE IMMEDIATE: the note for the log ("" when refused)."""
        self.tick()
        if subcommand == ABORT:
            if self.running is None:
                return "SMART ABORT SELF-TEST: none running"
            self._finish(ABORTED, self.status_byte() & 0x0F)
            return "SMART ABORT SELF-TEST: aborted"
        if subcommand not in (SHORT, EXTENDED, SHORT_CAPTIVE, EXTENDED_CAPTIVE):
            return ""
        if self.running is not None:
            return ""  # a test runs: only an abort is taken (ACS-3 7.44.5)
        test = subcommand & 0x7F
        seconds = self.self_test_seconds * (4 if test == EXTENDED else 1)
        self.running = Running(test, monotonic(), seconds)
        name = "short" if test == SHORT else "extended"
        if subcommand & 0x80:  # captive: the command completes with the test
            time.sleep(seconds)
            self.tick()
            return f"SMART {name} self-test (captive): status {self.last_status:#04x}"
        return f"SMART {name} self-test started ({seconds:g} s)"

    # ---- data structures --------------------------------------------------------------

    def read_data(self) -> bytes:
        raw = bytearray(SECTOR)
        raw[0:2] = (0x0010).to_bytes(2, "little")
        for i, a in enumerate(self.attrs[:30]):
            o = 2 + 12 * i
            raw[o] = a.ident
            raw[o + 1:o + 3] = a.flags.to_bytes(2, "little")
            raw[o + 3], raw[o + 4] = a.value, a.worst
            raw[o + 5:o + 11] = a.raw.to_bytes(6, "little")
        raw[362] = 0x02  # off-line data collection completed without error
        raw[363] = self.status_byte()
        raw[364:366] = (30).to_bytes(2, "little")  # off-line collection: 30 s
        raw[367] = 0x11  # EXECUTE OFF-LINE IMMEDIATE and the short/extended self-tests
        raw[368:370] = (0x0003).to_bytes(2, "little")
        raw[370] = 0x01  # error logging
        raw[372] = max(1, round(self.self_test_seconds / 60))  # polling minutes: short
        extended = max(1, round(4 * self.self_test_seconds / 60))
        raw[373] = min(extended, 0xFF)
        raw[375:377] = extended.to_bytes(2, "little")
        return checksummed(raw)

    def read_thresholds(self) -> bytes:
        raw = bytearray(SECTOR)
        raw[0:2] = (0x0010).to_bytes(2, "little")
        for i, a in enumerate(self.attrs[:30]):
            raw[2 + 12 * i], raw[3 + 12 * i] = a.ident, a.threshold
        return checksummed(raw)

    def read_log(self, address: int) -> bytes | None:
        """A SMART log's one sector (None: no such log)."""
        raw = bytearray(SECTOR)
        if address == 0x00:  # the directory: version 1, one sector each of 01h and 06h
            raw[0] = 0x01
            raw[2 * 0x01] = raw[2 * 0x06] = 1
            return bytes(raw)
        if address == 0x01:  # summary error log: version 1, no error
            raw[0] = 0x01
            return checksummed(raw)
        if address == 0x06:
            raw[0:2] = (0x0001).to_bytes(2, "little")
            for i, (test, status, hours, lba) in enumerate(self.log[-21:]):
                o = 2 + 24 * i
                raw[o], raw[o + 1] = int(test or 0), int(status or 0)
                raw[o + 2:o + 4] = int(hours or 0).to_bytes(2, "little")
                raw[o + 5:o + 9] = (lba or 0).to_bytes(4, "little")
            raw[508] = len(self.log[-21:])  # the newest descriptor, counting from 1
            return checksummed(raw)
        return None
