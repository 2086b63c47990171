"""nvme-cli output parsed: `id-ctrl` (JSON or plain), `id-ns -o json`, `list -o json`,
`sanitize-log` (plain).

Layouts handled (nvme-cli 1.x .. 2.15):

* `id-ctrl -o json` / `id-ns -o json`: flat objects, the same keys in 1.x and 2.x; 128-bit
  values (tnvmcap) may be numbers or strings.
* plain `id-ctrl` (1.x) and `id-ctrl -H` (2.x, with bit-decoded lines and thousands
  separators); trailing ``# comment`` annotations are ignored.
* `list -o json`: 1.x flat ``Devices`` with ``Index``/``ProductName``; 2.0-2.4 without them;
  2.5+ with ``GenericPath``; 2.11-2.12 a nested tree Devices -> Subsystems -> Controllers ->
  Namespaces.  Early 2.x printed negative sizes for large drives: a negative or missing
  size is recomputed from ``MaximumLBA x SectorSize``.
"""

from __future__ import annotations

import json
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
        return int(value)
    if isinstance(value, str):
        s = value.strip().replace(",", "")
        try:
            return int(s, 16) if s.lower().startswith("0x") else int(s)
        except ValueError:
            pass
    raise ParseError(f"{what}: expected an integer, got {value!r}")


def _opt_int(obj: Mapping[str, Any], key: str) -> int | None:
    if key not in obj or obj[key] is None:
        return None
    return to_int(obj[key], key)


def load_json_object(text: str, tool: str) -> dict[str, Any]:
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ParseError(f"{tool}: output is not JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ParseError(f"{tool}: expected a JSON object, got {type(data).__name__}")
    return data


def _controller(obj: Mapping[str, Any], tool: str) -> NvmeController:
    missing = [k for k in ("sn", "mn", "fr", "oacs") if k not in obj]
    if missing:
        raise ParseError(f"{tool}: missing {', '.join(missing)}")

    def num(key: str, default: int = 0) -> int:
        v = _opt_int(obj, key)
        return default if v is None else v

    return NvmeController(
        model=str(obj["mn"]).strip(),
        serial=str(obj["sn"]).strip(),
        firmware=str(obj["fr"]).strip(),
        vid=num("vid"),
        oacs=num("oacs"),
        fna=num("fna"),
        sanicap=num("sanicap"),
        oncs=num("oncs"),
        nn=num("nn"),
        tnvmcap=_opt_int(obj, "tnvmcap"),
        unvmcap=_opt_int(obj, "unvmcap"),
        cntlid=_opt_int(obj, "cntlid"),
        ver=_opt_int(obj, "ver"),
    )


def parse_id_ctrl_json(text: str) -> NvmeController:
    """`nvme id-ctrl DEV -o json`."""
    return _controller(load_json_object(text, "nvme id-ctrl"), "nvme id-ctrl")


# nvme-cli 1.x plain id-ctrl prints `ver` in hex without 0x ("10200" = 1.2.0); the
# fields below are hex when they carry an 0x prefix, or hex-without-prefix in 1.x.
_HEX_WITHOUT_PREFIX = {"ver", "rtd3r", "rtd3e", "ieee"}


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
    if "sn" not in fields:
        raise ParseError("nvme id-ctrl: no 'sn' line (not nvme id-ctrl output?)")
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
    return _controller(obj, "nvme id-ctrl")


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
        formats.append(
            NvmeLbaFormat(
                index=i,
                data_size=1 << to_int(f.get("ds", 0), "lbafs.ds"),
                metadata_size=to_int(f.get("ms", 0), "lbafs.ms"),
                relative_performance=to_int(f.get("rp", 0), "lbafs.rp"),
            )
        )
    flbas = to_int(obj["flbas"], "flbas")
    index = (flbas & 0x0F) | (((flbas >> 5) & 0x03) << 4 if len(formats) > 16 else 0)
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
    size_recomputed: bool  # the printed size was negative/missing: MaximumLBA x SectorSize


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
        max_lba = _opt_int(ns, "MaximumLBA")
        size = _opt_int(ns, "PhysicalSize")
        used = _opt_int(ns, "UsedBytes")
        recomputed = False
        if size is None or size < 0:
            recomputed = True
            size = max_lba * sector if max_lba is not None and sector else None
        if used is not None and used < 0:
            used = None
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
            )
        )
    return entries


@dataclass(frozen=True)
class SanitizeLog:
    """`nvme sanitize-log DEV` (plain or -H)."""

    sprog: int  # 0..65535 (65535 = done / not in progress)
    sstat: int
    scdw10: int
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
    def sanitize_action(self) -> int:
        """SANACT of the last command: 1 exit failure, 2 block, 3 overwrite, 4 crypto."""
        return self.scdw10 & 0x7


def parse_sanitize_log_text(text: str) -> SanitizeLog:
    values: dict[str, str] = {}
    for line in text.splitlines():
        if line[:1] in (" ", "\t") or ":" not in line:
            continue
        key, _, value = line.partition(":")
        values[re.sub(r"\s+", " ", key.strip())] = value.strip()

    def get(prefix: str) -> str:
        for key, value in values.items():
            if key.startswith(prefix):
                return value
        raise ParseError(f"nvme sanitize-log: no '{prefix}' line")

    def est(prefix: str) -> int | None:
        n = to_int(get(prefix).split()[0], prefix)
        return None if n == 0xFFFFFFFF else n

    return SanitizeLog(
        sprog=to_int(get("Sanitize Progress").split()[0], "SPROG"),
        sstat=to_int(get("Sanitize Status").split()[0], "SSTAT"),
        scdw10=to_int(get("Sanitize Command Dword 10").split()[0], "SCDW10"),
        est_overwrite_s=est("Estimated Time For Overwrite"),
        est_block_erase_s=est("Estimated Time For Block Erase"),
        est_crypto_erase_s=est("Estimated Time For Crypto Erase"),
    )
