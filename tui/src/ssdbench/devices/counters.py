"""The drive's own counters (host and NAND writes, temperature, throttling, wear) from
`nvme smart-log -o json` or `smartctl -x -j`, read before and after every run, and the
temperature read about once a second during tortures and probes (docs/results-format.md,
run.json "health", sensors-<phase>.csv).

Shapes handled:

* `nvme smart-log -o json`, nvme-cli 1.x .. 2.16 (checked against nvme-cli's source at each
  tag; captures in tests/data/fixtures/smart/): flat keys (``data_units_written``,
  ``power_on_hours``, ``percent_used`` or ``percentage_used``, ``avail_spare``,
  ``warning_temp_time``, ``critical_comp_time``, ``thm_temp1_trans_count`` ..). The composite
  ``temperature`` is in kelvin as a number; a string such as "36 C" / "309 K" / "36°C
  (309 K)" is read by its unit; 2.7 spelled it "Temperature" (keys are matched without
  case). 128-bit counters are numbers (1.x, 2.4+), strings of digits (2.2), with the
  locale's thousands separators (2.3) or "4445011.000000" (2.1). Data units are
  1000 blocks of 512 bytes (NVMe base spec, SMART / Health log).
* `smartctl -x -j` (smartmontools 7.x): ``temperature.current`` (deg C),
  ``power_on_time.hours``, ``power_cycle_count``; NVMe drives through
  ``nvme_smart_health_information_log``; ATA drives through the device statistics
  ("Logical Sectors Written") or the attributes whose names say their unit
  (Total_LBAs_Written, Host_Writes_32MiB, Host_Writes_GiB, NAND_Writes_1GiB, ...). An
  attribute whose unit is not known is not guessed at: the value is null. Raw values are
  decoded as smartctl printed them (devices/smart.py).

A counter that is a number no drive reports (negative, wider than 128 bits, infinite, a
string of more digits than a 128-bit number has) is a ParseError, never a crash or a guess.
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping
from dataclasses import asdict, dataclass
from typing import Any

from ssdbench.devices.model import ParseError
from ssdbench.devices.nvme import load_json_object
from ssdbench.devices.smart import (
    COUNTER_MAX,
    attribute_count,
    attribute_raw_value,
    dig,
    smartctl_unreadable,
)

NVME_DATA_UNIT = 512 * 1000
KELVIN = 273
# counters whose change over a run is reported (run.json health.delta)
DELTA_KEYS = ("host_writes_bytes", "nand_writes_bytes", "thermal_throttle_events",
              "media_errors", "warning_temp_minutes", "critical_temp_minutes",
              "percentage_used")


@dataclass(frozen=True)
class DriveCounters:
    """One reading of the drive's own counters; None where the drive does not report it."""

    tool: str  # "nvme smart-log" | "smartctl"
    temperature_c: int | None = None
    host_writes_bytes: int | None = None
    host_reads_bytes: int | None = None
    nand_writes_bytes: int | None = None
    power_on_hours: int | None = None
    power_cycles: int | None = None
    unsafe_shutdowns: int | None = None
    media_errors: int | None = None
    percentage_used: int | None = None
    available_spare: int | None = None
    warning_temp_minutes: int | None = None
    critical_temp_minutes: int | None = None
    thermal_throttle_events: int | None = None
    read_at: str | None = None  # UTC, ISO 8601, when the engine read it

    def to_json(self) -> dict[str, Any]:
        data = asdict(self)
        del data["tool"]
        return data


_COUNTER_DIGITS = len(str(COUNTER_MAX))  # 39


def _count(value: Any, what: str = "a counter") -> int | None:
    """A non-negative counter: a JSON number, or a string of digits (thousands separators
    allowed); anything else is unknown. A number no drive reports (negative, over 128 bits,
    infinite) is a ParseError naming ``what``."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, float):
        if not math.isfinite(value) or value < 0 or value > COUNTER_MAX:
            raise ParseError(f"{what} is {value}: out of range")
        return int(value) if value.is_integer() else None
    if isinstance(value, str):
        # "17" (2.2), "2,752,848" (2.3 under a locale with separators), "4445011.000000" (2.1)
        text = re.sub(r"\.0*$", "", value.strip().replace(",", ""))
        if not (text.isascii() and text.isdigit()):
            return None
        if len(text.lstrip("0")) > _COUNTER_DIGITS:  # int() of 4300+ digits raises
            raise ParseError(f"{what} is a {len(text)}-digit number: out of range")
        value = int(text)
    if isinstance(value, int):
        if not 0 <= value <= COUNTER_MAX:
            shown = value if len(str(abs(value))) <= 24 else "a huge number"
            raise ParseError(f"{what} is {shown}: out of range")
        return value
    return None


def nvme_temperature_c(value: Any) -> int | None:
    """The composite temperature: kelvin as a number (0 = not reported); a string by its
    unit ("309 K", "36 C", "36°C (309 K)")."""
    if isinstance(value, str):
        if m := re.search(r"(-?\d+)\s*°?\s*C\b", value):
            return int(m.group(1))
        if m := re.search(r"(\d+)\s*K\b", value):
            return int(m.group(1)) - KELVIN
        value = _count(value, "temperature")
    kelvin = _count(value, "temperature")
    return kelvin - KELVIN if kelvin else None


def _sum(*values: int | None) -> int | None:
    known = [v for v in values if v is not None]
    return sum(known) if known else None


def _times(value: int | None, unit: int) -> int | None:
    return None if value is None else value * unit


def _nvme_log(log: Mapping[str, Any], tool: str, temperature_c: int | None) -> DriveCounters:
    lower = {str(k).lower(): v for k, v in log.items()}  # nvme-cli 2.7 spelled "Temperature"

    def num(*keys: str) -> int | None:
        """The first of ``keys`` the log has, as a counter (its name in the error)."""
        key = next((k for k in keys if k in lower), keys[0])
        return _count(lower.get(key), f"{tool}: {key}")

    return DriveCounters(
        tool=tool,
        temperature_c=temperature_c,
        host_writes_bytes=_times(num("data_units_written"), NVME_DATA_UNIT),
        host_reads_bytes=_times(num("data_units_read"), NVME_DATA_UNIT),
        power_on_hours=num("power_on_hours"),
        power_cycles=num("power_cycles"),
        unsafe_shutdowns=num("unsafe_shutdowns"),
        media_errors=num("media_errors"),
        percentage_used=num("percent_used", "percentage_used"),
        available_spare=num("avail_spare", "available_spare"),
        warning_temp_minutes=num("warning_temp_time"),
        critical_temp_minutes=num("critical_comp_time"),
        thermal_throttle_events=_sum(*(
            num(f"thm_temp{i}_trans_count", f"thermal_mgmt_temperature_{i}_transition_count")
            for i in (1, 2))),
    )


def parse_nvme_smart_log(text: str) -> DriveCounters:
    log = load_json_object(text, "nvme smart-log")
    keys = {str(k).lower() for k in log}
    if "data_units_written" not in keys and "temperature" not in keys:
        raise ParseError("nvme smart-log: no data_units_written or temperature key")
    temperature = next((v for k, v in log.items() if str(k).lower() == "temperature"), None)
    return _nvme_log(log, "nvme smart-log", nvme_temperature_c(temperature))


# ATA attributes whose name says the unit of their raw value
_UNIT = {"mib": 2**20, "gib": 2**30, "gb": 2**30}


def _attribute_unit(name: str, sector: int) -> tuple[str, int] | None:
    """("host"|"nand", bytes per unit of the raw count) of an ATA attribute whose name gives
    its unit (Total_LBAs_Written, Host_Writes_32MiB, NAND_Writes_1GiB, ..)."""
    low = name.lower()
    if low == "total_lbas_written":
        return "host", sector
    m = re.fullmatch(r"(host|nand|flash|total_nand)_writes?_(\d{0,6})(mib|gib|gb)", low)
    if m is None:
        m = re.fullmatch(r"(lifetime|total)_writes_(\d{0,6})(gib|gb)", low)
        if m is None:
            return None
    kind = "host" if m.group(1) in ("host", "lifetime", "total") else "nand"
    return kind, int(m.group(2) or 1) * _UNIT[m.group(3)]


def _list(value: Any) -> list[Any]:
    return value if isinstance(value, list) else []


class Unreadable(ParseError):
    """The tool answered, but could not read the drive."""


def parse_smartctl_counters(text: str) -> DriveCounters:
    """The counters of `smartctl -x -j` / `-A -j`; :class:`Unreadable` when smartctl could
    not open or talk to the drive (exit bits 0-1), or one of its commands failed (bit 2) and
    nothing at all was read. Bit 2 alone is common: `-x` asks for logs many drives (and
    QEMU's AHCI disk) do not have, and what was read is still good."""
    obj = load_json_object(text, "smartctl")
    counters = _smartctl_counters(obj)
    status = _count(dig(obj, "smartctl", "exit_status"), "smartctl: exit_status") or 0
    nothing = all(v is None for k, v in vars(counters).items() if k != "tool")
    if smartctl_unreadable(status, nothing):
        raise Unreadable("smartctl could not read the drive")
    return counters


def _smartctl_counters(obj: dict[str, Any]) -> DriveCounters:
    temperature = dig(obj, "temperature", "current")
    temp_c = temperature if isinstance(temperature, int) and not isinstance(
        temperature, bool) else None
    nvme_log = obj.get("nvme_smart_health_information_log")
    if isinstance(nvme_log, Mapping):
        # smartctl's own names (available_spare, percentage_used, and after 7.5
        # thermal_mgmt_temperature_N_transition_count) are looked up beside nvme-cli's
        return _nvme_log(nvme_log, "smartctl", temp_c)
    sector = _count(obj.get("logical_block_size"), "smartctl: logical_block_size") or 512
    table = _list(dig(obj, "ata_smart_attributes", "table"))
    if temp_c is None:  # `smartctl -A` of some versions: the attributes only
        temp_c = _attribute_temperature(table)
    host = nand = None
    for page in _list(dig(obj, "ata_device_statistics", "pages")):
        for entry in _list(dig(page, "table")):
            if isinstance(entry, Mapping) and entry.get("name") == "Logical Sectors Written":
                written = _count(entry.get("value"), "smartctl: Logical Sectors Written")
                host = None if written is None else written * sector
    # an attribute's name (and so its unit) is the drive database's: a drive not in it gets
    # generic names whose units may be wrong (a WD Red SA500 counts "Total_LBAs_Written" in
    # GiB), so only the device statistics count then
    named = obj.get("in_smartctl_database") is not False
    for attr in table if named else []:
        unit = _attribute_unit(str(attr.get("name", "")), sector) if isinstance(
            attr, Mapping) else None
        raw = None if unit is None else attribute_count(attr)  # as smartctl printed it
        if unit is None or raw is None:
            continue
        kind, value = unit[0], raw * unit[1]
        if kind == "host" and host is None:
            host = value
        elif kind == "nand" and nand is None:
            nand = value
    return DriveCounters(
        tool="smartctl",
        temperature_c=temp_c,
        host_writes_bytes=host,
        nand_writes_bytes=nand,
        power_on_hours=_count(dig(obj, "power_on_time", "hours"), "smartctl: power_on_time"),
        power_cycles=_count(obj.get("power_cycle_count"), "smartctl: power_cycle_count"),
    )


def _attribute_temperature(table: list[Any]) -> int | None:
    """ATA attribute 194 (Temperature_Celsius) or 190 (Airflow_Temperature_Cel): the
    current temperature is the low byte of the raw value (the others hold min / max)."""
    for wanted in (194, 190):
        for attr in table:
            if isinstance(attr, Mapping) and attr.get("id") == wanted:
                raw = attribute_raw_value(attr)
                if raw is not None and 0 < raw & 0xFF < 128:
                    return raw & 0xFF
    return None


def counters_argv(transport: str, path: str) -> list[str]:
    """How to read the counters of a drive: nvme-cli for NVMe, smartctl for the rest."""
    if transport == "nvme":
        return ["nvme", "smart-log", "-o", "json", path]
    return ["smartctl", "-x", "-j", path]


def temperature_argv(transport: str, path: str) -> list[str]:
    """The cheaper once-a-second read: nvme smart-log, or smartctl's attributes only."""
    if transport == "nvme":
        return ["nvme", "smart-log", "-o", "json", path]
    return ["smartctl", "-A", "-j", path]


def parse_counters(argv: list[str], text: str) -> DriveCounters:
    if argv[0] == "nvme":
        return parse_nvme_smart_log(text)
    return parse_smartctl_counters(text)


def health_record(before: DriveCounters | None, after: DriveCounters | None
                  ) -> dict[str, Any]:
    """run.json "health": both readings and the change of the counters that count up."""
    delta: dict[str, Any] = {}
    for key in DELTA_KEYS:
        a = getattr(before, key) if before else None
        b = getattr(after, key) if after else None
        delta[key] = b - a if a is not None and b is not None else None
    host, nand = delta["host_writes_bytes"], delta["nand_writes_bytes"]
    delta["write_amplification"] = (round(nand / host, 3) if host and nand is not None
                                    else None)
    reading = before or after
    tool = reading.tool if reading is not None else None
    return {"tool": tool,
            "before": before.to_json() if before else None,
            "after": after.to_json() if after else None,
            "delta": delta}
