"""`smartctl -j -x DEV` parsed into a health snapshot (smartmontools 7.x JSON), and the ATA
attribute raw values decoded as smartctl decodes them (docs/grading.md "Raw values")."""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.errors import ParseError
from ssdbench.devices.model import SmartSnapshot
from ssdbench.devices.nvme import load_json_object

# smartctl's exit status is a bit mask; bits 0-2 mean the command could not read the
# device (bad arguments, open failed, SMART command failed); bits 3-7 are health findings.
SMARTCTL_FATAL_BITS = 0x07
SMARTCTL_OK_CODES = tuple(range(256))


def smartctl_unreadable(exit_status: int, read_nothing: bool) -> bool:
    """smartctl could not read the drive: it could not open or talk to it (exit bits 0-1),
    or one of its commands failed (bit 2) and nothing at all was read. Bit 2 alone is
    common and leaves what was read good: `-x` asks for logs many drives do not have
    (QEMU's AHCI disk; a SAS drive without an optional log page, where smartctl 7.3 sets it
    for the one page it could not read)."""
    return bool(exit_status & 0x03 or (exit_status & SMARTCTL_FATAL_BITS and read_nothing))

# raw.value is ata_get_attr_raw_value()'s uint64_t (smartmontools lib/atacmds.cpp): the six
# raw bytes, or up to eight with the reserved, normalized and worst bytes (raw56, raw64)
RAW_VALUE_MAX = 2**64 - 1
# the widest number smartctl prints: NVMe's 128-bit counters (json::set_uint128)
COUNTER_MAX = 2**128 - 1
# the longest raw.string smartctl formats is about 27 characters ("4294967295h+71582m+47.295s")
RAW_STRING_MAX = 64


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


def _shown(value: int) -> str:
    text = str(value)
    return text if len(text) <= 24 else f"a {len(text)}-digit number"


def counter(value: Any, what: str, limit: int = COUNTER_MAX) -> int | None:
    """A count smartctl printed as a JSON number. None where it is absent or not a number (a
    string, a bool: unknown, never 0); a ParseError where it is a number no drive reports:
    negative, above ``limit`` (smartctl's widest, 128 bits), infinite or NaN (``1e400`` in
    JSON is a float infinity)."""
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(f"smartctl: {what} is {value}: not a number a drive reports")
    if not isinstance(value, int) or isinstance(value, bool):
        return None
    if not 0 <= value <= limit:
        raise ParseError(f"smartctl: {what} is {_shown(value)}: out of range "
                         f"(0 to {_shown(limit)})")
    return value


# --- ATA attribute raw values ------------------------------------------------------------
#
# smartctl prints raw.string from raw.value with the attribute's raw format (its drive
# database, drivedb.h, "-v ID,FORMAT"; the DEFAULT entry for drives not in it). The JSON
# does not name the format, so it is found as smartctl would print it: the format whose
# rendering of raw.value is raw.string. Each renderer is a port of
# ata_format_attr_raw_value() (smartmontools lib/atacmds.cpp, 7.5); a raw.string no format
# renders from raw.value is not smartctl's output (a ParseError).


def _b(v: int) -> list[int]:
    """raw[0..5]: the low 48 bits, least significant byte first (as atacmds.cpp splits it)."""
    return [(v >> (8 * i)) & 0xFF for i in range(6)]


def _w(v: int) -> list[int]:
    """word[0..2]: the low 48 bits as three 16-bit words, least significant first."""
    return [(v >> (16 * i)) & 0xFFFF for i in range(3)]


def _s8(byte: int) -> int:
    return byte - 256 if byte >= 128 else byte


def _temp_word(word: int) -> int:
    if word <= 0x7F:
        return 0x11
    if word <= 0xFF:
        return 0x01
    return 0x10 if word >= 0xFF80 else 0x00


def _temp_range(t: int, ut1: int, ut2: int) -> tuple[int, int] | None:
    t1, t2 = sorted((_s8(ut1), _s8(ut2)))
    if -60 <= t1 <= t <= t2 <= 120 and not (t1 == -1 and t2 <= 0):
        return t1, t2
    return None


def _tempminmax(v: int) -> str:
    """RAWFMT_TEMPMINMAX: the current temperature and, where the other bytes hold them in one
    of the vendors' layouts, the min and max (atacmds.cpp, the same search in the same order)."""
    raw, word = _b(v), _w(v)
    t = _s8(raw[0])
    ctw0 = _temp_word(word[0])
    found: tuple[int, int] | None = None
    tformat: int
    if not word[2]:
        if not word[1] and ctw0:
            tformat = 0
        elif ctw0 and (found := _temp_range(t, raw[2], raw[3])):
            tformat = 1
        elif not raw[3] and (found := _temp_range(t, raw[1], raw[2])):
            tformat = 2
        else:
            tformat = -1
    elif ctw0:
        if (ctw0 & _temp_word(word[1]) & _temp_word(word[2])) != 0 and (
                found := _temp_range(t, raw[2], raw[4])):
            tformat = 3
        elif word[2] < 0x7FFF and (found := _temp_range(t, raw[2], raw[3])) \
                and found[1] >= 40:
            tformat = 4
        else:
            tformat = -2
    else:
        tformat = -3
    if tformat == 0:
        return str(t)
    if found is not None and tformat in (1, 2, 3):
        return f"{t} (Min/Max {found[0]}/{found[1]})"
    if found is not None and tformat == 4:
        return f"{t} (Min/Max {found[0]}/{found[1]} #{word[2]})"
    return f"{raw[0]} ({raw[5]} {raw[4]} {raw[3]} {raw[2]} {raw[1]})"


def _min2hour(v: int) -> str:
    w = _w(v)
    minutes = w[0] + (w[1] << 16)
    return f"{minutes // 60}h+{minutes % 60:02d}m" + (f" ({w[2]})" if w[2] else "")


def _sec2hour(v: int) -> str:
    hours = v // 3600
    return f"{hours}h+{(v - 3600 * hours) // 60:02d}m+{v % 60:02d}s"


def _halfmin2hour(v: int) -> str:
    hours = v // 120
    return f"{hours}h+{(v - 120 * hours) // 2:02d}m"


def _msec24hour32(v: int) -> str:
    hours, ms = v & 0xFFFFFFFF, (v >> 32) & 0xFFFFFFFF
    seconds = ms // 1000
    return f"{hours}h+{seconds // 60:02d}m+{seconds % 60:02d}.{ms % 1000:03d}s"


def _opt(head: int, tail: str, show: bool) -> str:
    return f"{head} ({tail})" if show else str(head)


# smartctl's raw formats: how each prints raw.value, and the count it holds (None: a format
# that holds no count: bytes, a time, a temperature). In the order tried: where two print a
# value alike (raw48 and raw16(raw16) print 5 as "5") they hold the same count.
_FORMATS: dict[str, tuple[Callable[[int], str], Callable[[int], int] | None]] = {
    "raw48": (str, lambda v: v),  # also raw56 and raw64: the same decimal number
    "hex48": (lambda v: f"0x{v:012x}", lambda v: v),
    "hex56": (lambda v: f"0x{v:014x}", lambda v: v),
    "hex64": (lambda v: f"0x{v:016x}", lambda v: v),
    "raw16(raw16)": (lambda v: _opt(_w(v)[0], f"{_w(v)[2]} {_w(v)[1]}", bool(v >> 16 & 0xFFFFFFFF)),
                     lambda v: _w(v)[0]),
    "raw16(avg16)": (lambda v: _opt(_w(v)[0], f"Average {_w(v)[1]}", bool(_w(v)[1])),
                     lambda v: _w(v)[0]),
    "raw24(raw8)": (lambda v: _opt(v & 0xFFFFFF, " ".join(map(str, _b(v)[5:2:-1])),
                                   bool(v >> 24 & 0xFFFFFF)),
                    lambda v: v & 0xFFFFFF),
    # three 16-bit fields, most significant first: "0 0 5" is word 2, word 1, word 0
    "raw16": (lambda v: " ".join(map(str, _w(v)[::-1])), lambda v: _w(v)[0]),
    # "errors/operations" (Seagate's 1 and 7, Kingston's 198): the count is the first
    "raw24/raw24": (lambda v: f"{v >> 24 & 0xFFFFFFFF}/{v & 0xFFFFFF}",
                    lambda v: v >> 24 & 0xFFFFFFFF),
    "raw24/raw32": (lambda v: f"{v >> 32 & 0xFFFFFFFF}/{v & 0xFFFFFFFF}",
                    lambda v: v >> 32 & 0xFFFFFFFF),
    "raw8": (lambda v: " ".join(map(str, _b(v)[::-1])), None),
    "min2hour": (_min2hour, None),
    "sec2hour": (_sec2hour, None),
    "halfmin2hour": (_halfmin2hour, None),
    "msec24hour32": (_msec24hour32, None),
    "tempminmax": (_tempminmax, None),
    "temp10x": (lambda v: f"{_w(v)[0] // 10}.{_w(v)[0] % 10}", None),
}
# the DEFAULT entry of smartctl's drive database for the attributes whose format is not
# raw48 (used only when raw.string is missing, as in output that is not smartctl 7's)
_DEFAULT_FORMAT = {3: "raw16(avg16)", 5: "raw16(raw16)", 9: "raw24(raw8)", 22: "raw16(raw16)",
                   190: "tempminmax", 194: "tempminmax", 196: "raw16(raw16)"}
# Command_Timeout: Seagate packs three 16-bit counters into 188's raw value, the count of
# timeouts in the low word (drivedb.h prints it "-v 188,raw16" for 39 Seagate families:
# "0 0 5" is 5). A drive its database does not know gets the DEFAULT raw48, which prints the
# packed fields as one number: 4295032853 is 1 1 21, 21 timeouts (a real Seagate capture in
# tests/data/fixtures/smart). So 188 counts its low 16 bits, however printed.
LOW_WORD_COUNTS = frozenset({188})


@dataclass(frozen=True)
class RawAttribute:
    """One ATA attribute's raw value as smartctl printed it."""

    ident: int
    name: str
    value: int  # raw.value
    string: str  # raw.string: smartctl's words
    format: str  # the smartctl raw format that prints value as string: "raw48", "hex48", ..
    count: int | None  # the count it holds; None: a format that holds none (a temperature)


def render_raw(fmt: str, value: int) -> str:
    """raw.value printed in smartctl's raw format ``fmt`` (a port of its own formatter)."""
    return _FORMATS["raw48" if fmt in ("raw56", "raw64") else fmt][0](value)


def _checked_value(where: str, value: Any) -> int:
    if isinstance(value, float) and not math.isfinite(value):
        raise ParseError(f"{where}: raw value {value} is not a number")
    if not isinstance(value, int) or isinstance(value, bool):
        raise ParseError(f"{where}: raw value is a {type(value).__name__}, not an integer")
    if not 0 <= value <= RAW_VALUE_MAX:
        raise ParseError(f"{where}: raw value {_shown(value)} is out of range (0 to 2^64-1)")
    return value


def decode_raw(ident: int, name: str, value: Any, string: Any) -> RawAttribute:
    """An attribute's raw value and string as smartctl decoded them; a ParseError where the
    value is not a 64-bit unsigned integer or the string is not how smartctl prints it."""
    where = f"smartctl: attribute {ident} {name[:40]}"
    value = _checked_value(where, value)
    if string is None:  # not smartctl 7's output: read as its drive database's DEFAULT
        fmt = _DEFAULT_FORMAT.get(ident, "raw48")
        string = render_raw(fmt, value)
    if not isinstance(string, str) or len(string) > RAW_STRING_MAX:
        shape = f"{len(string)} characters" if isinstance(string, str) else \
            f"a {type(string).__name__}"
        raise ParseError(f"{where}: raw string is {shape}: not a raw value smartctl prints")
    text = string.strip()
    for fmt, (render, count) in _FORMATS.items():
        if render(value) == text:
            n = None if count is None else count(value)
            if n is not None and ident in LOW_WORD_COUNTS:
                n = value & 0xFFFF
            if fmt == "raw48" and value >> 48:  # the same decimal, from 7 or 8 bytes
                return RawAttribute(ident, name, value, text,
                                    "raw56" if value >> 56 == 0 else "raw64", n)
            return RawAttribute(ident, name, value, text, fmt, n)
    raise ParseError(f"{where}: raw string {text!r} is not raw value {_shown(value)} in any "
                     "format smartctl prints")


def attribute_raw(attr: Mapping[str, Any]) -> RawAttribute | None:
    """An ``ata_smart_attributes.table`` entry's raw value decoded (None: it has no raw)."""
    raw = attr.get("raw")
    if raw is None:
        return None
    ident = attr.get("id")
    if not isinstance(raw, Mapping):
        raise ParseError(f"smartctl: attribute {ident}: raw is not an object")
    return decode_raw(ident if isinstance(ident, int) else -1, str(attr.get("name", "")),
                      raw.get("value"), raw.get("string"))


def attribute_raw_value(attr: Mapping[str, Any]) -> int | None:
    """An attribute's raw.value alone (a temperature's low byte needs no format): None where
    it has none; a ParseError where it is not a 64-bit unsigned integer."""
    value = dig(attr, "raw", "value")
    return None if value is None else _checked_value(
        f"smartctl: attribute {attr.get('id')}", value)


def attribute_count(attr: Mapping[str, Any]) -> int | None:
    """The count an attribute holds (Reallocated_Sector_Ct, Command_Timeout, ..): None where
    it has no raw value; a ParseError where its raw value is printed in a format that holds
    no count (a temperature, a time): the count cannot be read, so it is not guessed."""
    decoded = attribute_raw(attr)
    if decoded is None:
        return None
    if decoded.count is None:
        raise ParseError(f"smartctl: attribute {decoded.ident} {decoded.name[:40]}: raw value "
                         f"printed as {decoded.format} ({decoded.string!r}), which holds no "
                         "count")
    return decoded.count


def parse_smartctl_json(text: str) -> tuple[SmartSnapshot, SmartIdentity]:
    obj = load_json_object(text, "smartctl")
    exit_status = _int(dig(obj, "smartctl", "exit_status")) or 0
    messages = tuple(
        str(m.get("string", ""))
        for m in (dig(obj, "smartctl", "messages") or [])
        if isinstance(m, dict)
    )
    passed = dig(obj, "smart_status", "passed")
    nvme_log = dig(obj, "nvme_smart_health_information_log")
    nvme_log = nvme_log if isinstance(nvme_log, dict) else {}
    realloc: int | None = None
    table = dig(obj, "ata_smart_attributes", "table")
    for attr in table if isinstance(table, list) else []:
        if isinstance(attr, dict) and attr.get("id") == 5:
            realloc = attribute_count(attr)
    snapshot = SmartSnapshot(
        passed=passed if isinstance(passed, bool) else None,
        temperature_c=_int(dig(obj, "temperature", "current")),
        power_on_hours=counter(dig(obj, "power_on_time", "hours"), "power_on_time.hours"),
        # NVMe's, else a SAS SSD's endurance indicator (one byte: it may exceed 100)
        percentage_used=counter(nvme_log.get("percentage_used"), "percentage_used")
        if "percentage_used" in nvme_log else counter(
            obj.get("scsi_percentage_used_endurance_indicator"),
            "scsi_percentage_used_endurance_indicator", 255),
        available_spare=counter(nvme_log.get("available_spare"), "available_spare"),
        media_errors=counter(nvme_log.get("media_errors"), "media_errors"),
        # ATA 5, else a SCSI drive's grown defect list (its reallocated blocks; a uint32)
        reallocated_sectors=realloc if realloc is not None else counter(
            obj.get("scsi_grown_defect_list"), "scsi_grown_defect_list", 2**32 - 1),
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
