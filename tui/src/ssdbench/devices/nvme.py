"""nvme-cli output parsed: `id-ctrl` (JSON or plain), `id-ns -o json`, `list -o json`,
`sanitize-log` (plain or JSON). The one parser per nvme-cli output: the erase room uses these.

Layouts handled (nvme-cli 1.x .. 2.15):

* `id-ctrl -o json` / `id-ns -o json`: flat objects, the same keys in 1.x and 2.x; 128-bit
  values (tnvmcap) may be numbers or strings.
* plain `id-ctrl` (1.x) and `id-ctrl -H` (2.x, with bit-decoded lines and thousands
  separators); trailing ``# comment`` annotations are ignored.
* `list -o json`: 1.x flat ``Devices`` with ``Index``/``ProductName``; 2.0-2.4 without them;
  2.5+ with ``GenericPath``; 2.11-2.12 a nested tree Devices -> Subsystems -> Controllers ->
  Namespaces.  Early 2.x (2.2.1 is a reported one; fixed by "nvme-print: Serialize
  uint32_t types correctly") squeezed 64-bit values into 32-bit JSON integers: a
  multi-TB drive gets PhysicalSize and UsedBytes of -2147483648 and a wrapped MaximumLBA
  (negative, or positive and wrong). So a
  negative or absurd PhysicalSize makes every size of that namespace unknown (None, with
  ``size_problem`` saying why), and so does a positive PhysicalSize that is not
  ``MaximumLBA x SectorSize`` (a wrapped value can be positive and plausible: a 4 TB
  drive's prints as 2172477440 unsigned); only a *missing* PhysicalSize is recomputed from
  ``MaximumLBA x SectorSize``. Discovery takes the size from sysfs, then id-ns.
* plain id-ctrl with lines missing (a truncated capture, an older nvme-cli): what is there
  is parsed; an absent ``mn``/``fr`` is "", an absent number 0 (so an absent ``oacs`` means
  no format support: nothing is erased on a guess), and ``NvmeController.missing`` names
  them; an absent ``oncs`` makes Dataset Management (TRIM) and Write Zeroes unknown (None),
  not "no". Only text with neither an ``sn`` nor an ``mn`` line is refused.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.model import NvmeController, NvmeLbaFormat, NvmeNamespace, ParseError


def to_int(value: object, what: str = "value") -> int:
    """An integer from nvme-cli JSON/plain text: 5, "5", "0x1f", "1,084,431,360,000"."""
    if isinstance(value, bool):
        return int(value)
    if isinstance(value, int):
        return value
    if isinstance(value, float):
        if not math.isfinite(value):
            raise ParseError(f"{what}: expected an integer, got {value!r}")
        return int(value)
    if isinstance(value, str):
        s = value.strip().replace(",", "")
        try:
            return int(s, 16) if s.lower().startswith("0x") else int(s)
        except ValueError:
            pass
    raise ParseError(f"{what}: expected an integer, got {value!r}")


# Larger than any drive (1 EiB): a value above it is an overflow, not a size.
MAX_SANE_BYTES = 2**60
MAX_SECTOR_BYTES = 2**16


def sane_size(value: int | None) -> int | None:
    """``value`` when it can be a drive's size in bytes (1 … 1 EiB), else None."""
    return value if value is not None and 0 < value <= MAX_SANE_BYTES else None


def _opt_int(obj: Mapping[str, Any], key: str) -> int | None:
    if key not in obj or obj[key] is None:
        return None
    return to_int(obj[key], key)


def load_json_object(text: str, tool: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{tool}: output is not JSON ({exc})") from exc
    except (RecursionError, ValueError) as exc:  # nested too deeply; an integer too long
        raise ParseError(f"{tool}: output is not usable JSON ({type(exc).__name__})") from None
    if not isinstance(data, dict):
        raise ParseError(f"{tool}: expected a JSON object, got {type(data).__name__}")
    return data


def _capacity(value: int | None) -> int | None:
    """tnvmcap/unvmcap: bytes, 0 allowed; a negative or overflowed value is unknown."""
    return value if value is not None and 0 <= value <= MAX_SANE_BYTES else None


def _controller(obj: Mapping[str, Any], tool: str,
                missing_ok: tuple[str, ...] = ()) -> NvmeController:
    missing = [k for k in ("sn", "mn", "fr", "oacs") if k not in obj and k not in missing_ok]
    if missing:
        raise ParseError(f"{tool}: missing {', '.join(missing)}")

    def num(key: str, default: int = 0) -> int:
        v = _opt_int(obj, key)
        return default if v is None else v

    return NvmeController(
        model=str(obj.get("mn", "")).strip(),
        serial=str(obj.get("sn", "")).strip(),
        firmware=str(obj.get("fr", "")).strip(),
        vid=num("vid"),
        oacs=num("oacs"),
        fna=num("fna"),
        sanicap=num("sanicap"),
        oncs=num("oncs"),
        nn=num("nn"),
        tnvmcap=_capacity(_opt_int(obj, "tnvmcap")),
        unvmcap=_capacity(_opt_int(obj, "unvmcap")),
        cntlid=_opt_int(obj, "cntlid"),
        ver=_opt_int(obj, "ver"),
        missing=tuple(k for k in _TEXT_FIELDS if k not in obj),
    )


def parse_id_ctrl_json(text: str) -> NvmeController:
    """`nvme id-ctrl DEV -o json`."""
    return _controller(load_json_object(text, "nvme id-ctrl"), "nvme id-ctrl")


# nvme-cli 1.x plain id-ctrl prints `ver` in hex without 0x ("10200" = 1.2.0); the
# fields below are hex when they carry an 0x prefix, or hex-without-prefix in 1.x.
_HEX_WITHOUT_PREFIX = {"ver", "rtd3r", "rtd3e", "ieee"}
# the id-ctrl lines ssdbench uses; a plain-text capture may lack any of them
_TEXT_FIELDS = ("sn", "mn", "fr", "vid", "oacs", "fna", "sanicap", "oncs", "nn", "tnvmcap")


def parse_id_ctrl_text(text: str) -> NvmeController:
    """Plain `nvme id-ctrl DEV` (1.x) or `-H` (2.x): `key : value` lines."""
    fields: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.split("  #", 1)[0].rstrip()
        m = re.match(r"^([a-z][a-z0-9_]*)\s*:\s?(.*)$", line)
        if not m or raw[:1] in (" ", "\t", "["):
            continue
        key, value = m.group(1), m.group(2).strip()
        if key not in fields:
            fields[key] = value
    if "sn" not in fields and "mn" not in fields:
        raise ParseError("nvme id-ctrl: neither an 'sn' nor an 'mn' line "
                         "(not nvme id-ctrl output?)")
    obj: dict[str, Any] = {}
    for key, value in fields.items():
        if key in ("sn", "mn", "fr", "subnqn", "fguid"):
            obj[key] = value
        elif key in _HEX_WITHOUT_PREFIX and not value.lower().startswith("0x"):
            try:
                obj[key] = int(value, 16)
            except ValueError:
                continue
        else:
            first = value.split()[0] if value.split() else ""
            try:
                obj[key] = to_int(first, key)
            except ParseError:
                continue
    return _controller(obj, "nvme id-ctrl", missing_ok=_TEXT_FIELDS)


def current_lbaf(flbas: int, nlbaf: int) -> int:
    """FLBAS bits 3:0, plus bits 6:5 as the high bits when there are more than 16 formats
    (``nlbaf`` is the number of formats - 1, as in id-ns)."""
    index = flbas & 0xF
    if nlbaf + 1 > 16:
        index |= ((flbas >> 5) & 0x3) << 4
    return index


def parse_id_ns_json(text: str, *, nsid: int, name: str) -> NvmeNamespace:
    """`nvme id-ns DEV -o json` (same keys in 1.x and 2.x)."""
    obj = load_json_object(text, "nvme id-ns")
    missing = [k for k in ("nsze", "flbas", "lbafs") if k not in obj]
    if missing:
        raise ParseError(f"nvme id-ns: missing {', '.join(missing)}")
    formats = []
    lbafs = obj["lbafs"]
    if not isinstance(lbafs, list):
        raise ParseError("nvme id-ns: 'lbafs' is not a list")
    for i, f in enumerate(lbafs):
        if not isinstance(f, dict):
            raise ParseError("nvme id-ns: an 'lbafs' entry is not an object")
        ds = to_int(f.get("ds", 0), "lbafs.ds")
        if not 0 <= ds <= 63:  # log2 of the block size
            raise ParseError(f"nvme id-ns: lbafs.ds {ds} is not a block size's log2")
        formats.append(
            NvmeLbaFormat(
                index=i,
                data_size=1 << ds,
                metadata_size=to_int(f.get("ms", 0), "lbafs.ms"),
                relative_performance=to_int(f.get("rp", 0), "lbafs.rp"),
            )
        )
    if to_int(obj["nsze"], "nsze") < 0:
        raise ParseError(f"nvme id-ns: negative nsze {obj['nsze']!r}")
    flbas = to_int(obj["flbas"], "flbas")
    index = current_lbaf(flbas, len(formats) - 1)
    if index >= len(formats):
        raise ParseError(f"nvme id-ns: current format {index} is not in the lbafs list")
    return NvmeNamespace(
        nsid=nsid,
        name=name,
        nsze=to_int(obj["nsze"], "nsze"),
        ncap=to_int(obj.get("ncap", 0), "ncap"),
        nuse=to_int(obj.get("nuse", 0), "nuse"),
        flbas=flbas,
        lba_format_index=index,
        lba_formats=tuple(formats),
        dlfeat=to_int(obj.get("dlfeat", 0), "dlfeat"),
    )


@dataclass(frozen=True)
class NvmeListEntry:
    """One namespace from `nvme list -o json`."""

    path: str  # /dev/nvme0n1
    nsid: int | None
    model: str
    serial: str
    firmware: str
    size_bytes: int | None  # None when unknowable
    used_bytes: int | None
    sector_size: int | None
    maximum_lba: int | None
    product: str  # 1.x ProductName ("NULL" for fabrics targets), else ""
    transport: str  # 2.11+ nested tree only
    size_recomputed: bool  # PhysicalSize was missing: MaximumLBA x SectorSize
    size_problem: str = ""  # why the printed sizes were not used ("" when they were)


_CTRL_KEYS = ("ModelNumber", "SerialNumber", "Firmware", "Transport", "ProductName")


def _walk_namespaces(
    node: object, context: dict[str, Any]
) -> Iterator[tuple[dict[str, Any], dict[str, Any]]]:
    if isinstance(node, list):
        for item in node:
            yield from _walk_namespaces(item, context)
        return
    if not isinstance(node, dict):
        return
    ctx = dict(context)
    for key in _CTRL_KEYS:
        if key in node and not isinstance(node[key], dict | list):
            ctx[key] = node[key]
    is_ns = ("NameSpace" in node or "NSID" in node) and (
        "PhysicalSize" in node or "MaximumLBA" in node or "UsedBytes" in node
    )
    if is_ns:
        yield node, ctx
        return
    for value in node.values():
        if isinstance(value, dict | list):
            yield from _walk_namespaces(value, ctx)


def parse_nvme_list_json(text: str) -> list[NvmeListEntry]:
    """`nvme list -o json`, any nvme-cli layout (see the module docstring)."""
    if not text.strip():
        return []  # nvme-cli 2.x prints nothing when there is no NVMe device
    obj = load_json_object(text, "nvme list")
    if "Devices" not in obj:
        raise ParseError("nvme list: no 'Devices' key")
    entries: list[NvmeListEntry] = []
    seen: set[str] = set()
    for ns, ctx in _walk_namespaces(obj["Devices"], {}):
        path = ns.get("DevicePath")
        name = ns.get("NameSpace")
        if not isinstance(path, str):
            if isinstance(name, str):
                path = "/dev/" + name
            else:
                raise ParseError("nvme list: a namespace has neither DevicePath nor a name")
        nsid_raw = ns.get("NSID", name if isinstance(name, int) else None)
        nsid = None if nsid_raw is None else to_int(nsid_raw, "NSID")
        sector = _opt_int(ns, "SectorSize")
        if sector is not None and not 0 < sector <= MAX_SECTOR_BYTES:
            sector = None
        max_lba = _opt_int(ns, "MaximumLBA")
        size = _opt_int(ns, "PhysicalSize")
        used = _opt_int(ns, "UsedBytes")
        recomputed = False
        problem = ""
        if size is not None and sane_size(size) is None:
            # the 32-bit JSON bug: MaximumLBA and UsedBytes came from the same printer
            problem = (f"nvme list printed PhysicalSize {size} (MaximumLBA {max_lba}): not a "
                       "size (early nvme-cli 2.x wraps 64-bit values in JSON); not used")
            size = max_lba = used = None
        elif max_lba is not None and (max_lba <= 0 or sane_size(max_lba * (sector or 1)) is None):
            problem = f"nvme list printed MaximumLBA {max_lba}: not a block count; not used"
            max_lba = None
        elif size is not None and max_lba is not None and sector and size != max_lba * sector:
            # wrapped but positive (a 500 GB drive's size fits in 31 bits after wrapping);
            # which of the two wrapped cannot be told: both stay unknown
            problem = (f"nvme list printed PhysicalSize {size} but MaximumLBA {max_lba} x "
                       f"SectorSize {sector} = {max_lba * sector} (early nvme-cli 2.x wraps "
                       "64-bit values in JSON); neither used")
            size = max_lba = used = None
        if size is None and not problem:
            recomputed = True
            size = sane_size(max_lba * sector) if max_lba is not None and sector else None
        used = sane_size(used) if used != 0 else 0
        if path in seen:
            continue
        seen.add(path)
        entries.append(
            NvmeListEntry(
                path=path,
                nsid=nsid,
                model=str(ns.get("ModelNumber", ctx.get("ModelNumber", ""))).strip(),
                serial=str(ns.get("SerialNumber", ctx.get("SerialNumber", ""))).strip(),
                firmware=str(ns.get("Firmware", ctx.get("Firmware", ""))).strip(),
                size_bytes=size,
                used_bytes=used,
                sector_size=sector,
                maximum_lba=max_lba,
                product=str(ctx.get("ProductName", "")),
                transport=str(ctx.get("Transport", "")),
                size_recomputed=recomputed,
                size_problem=problem,
            )
        )
    return entries


@dataclass(frozen=True)
class SanitizeLog:
    """`nvme sanitize-log DEV` (plain or -H)."""

    sprog: int  # 0..65535 (65535 = done / not in progress)
    sstat: int
    scdw10: int | None  # None: the JSON had no cdw10_info
    est_overwrite_s: int | None  # None: "No time period reported" (0xffffffff)
    est_block_erase_s: int | None
    est_crypto_erase_s: int | None

    @property
    def status(self) -> int:
        """SSTAT bits 2:0: 0 never, 1 completed, 2 in progress, 3 failed, 4 completed (ND)."""
        return self.sstat & 0x7

    @property
    def in_progress(self) -> bool:
        return self.status == 2

    @property
    def progress_fraction(self) -> float:
        return self.sprog / 65536

    @property
    def sanitize_action(self) -> int | None:
        """SANACT of the last command: 1 exit failure, 2 block, 3 overwrite, 4 crypto."""
        return None if self.scdw10 is None else self.scdw10 & 0x7

    def estimate_s(self, sanact: int) -> int | None:
        """The drive's estimate for a sanitize action (2 block, 3 overwrite, 4 crypto)."""
        return {2: self.est_block_erase_s, 3: self.est_overwrite_s,
                4: self.est_crypto_erase_s}.get(sanact)


def parse_sanitize_log_text(text: str) -> SanitizeLog:
    values: dict[str, str] = {}
    for line in text.splitlines():
        if line[:1] in (" ", "\t") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        values[re.sub(r"\s+", " ", key.strip())] = value.strip()

    def get(prefix: str) -> str:
        """The first word of the line (a number, then nvme-cli's gloss)."""
        for key, value in values.items():
            if key.startswith(prefix):
                words = value.split()
                if not words:
                    raise ParseError(f"nvme sanitize-log: the '{prefix}' line has no value")
                return words[0]
        raise ParseError(f"nvme sanitize-log: no '{prefix}' line")

    def est(prefix: str) -> int | None:
        n = to_int(get(prefix), prefix)
        return None if n == 0xFFFFFFFF else n

    return SanitizeLog(
        sprog=to_int(get("Sanitize Progress"), "SPROG"),
        sstat=to_int(get("Sanitize Status"), "SSTAT"),
        scdw10=to_int(get("Sanitize Command Dword 10"), "SCDW10"),
        est_overwrite_s=est("Estimated Time For Overwrite"),
        est_block_erase_s=est("Estimated Time For Block Erase"),
        est_crypto_erase_s=est("Estimated Time For Crypto Erase"),
    )


def _json_get(obj: Mapping[str, Any], *names: str) -> Any:
    """A key by any of its spellings, case-insensitively (nvme-cli 1.x vs 2.x)."""
    lower = {k.lower(): v for k, v in obj.items()}
    for name in names:
        if name.lower() in lower:
            return lower[name.lower()]
    return None


def _sstat_from_json(sstat: Any) -> int:
    """SSTAT as a number, a string "(N) text", or an object holding "(N) text"."""
    if isinstance(sstat, str) and sstat.startswith("(") and ")" in sstat:
        return int(sstat[1 : sstat.index(")")])
    if isinstance(sstat, int | str):
        return to_int(sstat, "sanitize-log.sstat")
    if isinstance(sstat, dict):
        # "status": "(2) Sanitize in Progress." - or, in some 2.x releases, the status text
        # itself is the key. Find the value that starts with "(N)".
        for value in [_json_get(sstat, "status"), *sstat.values()]:
            if isinstance(value, str) and value.startswith("(") and ")" in value:
                return int(value[1 : value.index(")")])
        v = _json_get(sstat, "sos", "value")
        if v is not None:
            return to_int(v, "sanitize-log.sstat")
    raise ParseError(f"nvme sanitize-log: cannot read the status from sstat={sstat!r}")


def parse_sanitize_log_json(text: str) -> SanitizeLog:
    """`nvme sanitize-log DEV -o json`: 1.x flat, 2.x keyed by the device name
    (``{"nvme0": {"sprog": ..., "sstat": {...}}}``), SSTAT a number or an object."""
    d = load_json_object(text, "nvme sanitize-log")
    body: Mapping[str, Any] = d
    if _json_get(d, "sprog") is None:
        inner = [v for v in d.values() if isinstance(v, dict) and _json_get(v, "sprog") is not None]
        if len(inner) != 1:
            raise ParseError("nvme sanitize-log: no 'sprog' (at top level or under a device)")
        body = inner[0]
    scdw10 = _json_get(body, "cdw10_info", "scdw10")

    def est(key: str) -> int | None:
        v = _json_get(body, key)
        n = None if v is None else to_int(v, f"sanitize-log.{key}")
        return None if n == 0xFFFFFFFF else n

    return SanitizeLog(
        sprog=to_int(_json_get(body, "sprog"), "sanitize-log.sprog"),
        sstat=_sstat_from_json(_json_get(body, "sstat", "status", "sanitize_status")),
        scdw10=None if scdw10 is None else to_int(scdw10, "sanitize-log.cdw10_info"),
        est_overwrite_s=est("time_over_write"),
        est_block_erase_s=est("time_block_erase"),
        est_crypto_erase_s=est("time_crypto_erase"),
    )
