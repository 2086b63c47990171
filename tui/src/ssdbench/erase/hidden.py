"""Hidden capacity an erase may not reach: ATA HPA (``hdparm -N``) and DCO
(``hdparm --dco-identify``), NVMe namespaces other than the erased one and unallocated
NVM capacity (id-ctrl ``tnvmcap`` / ``unvmcap``).

The parsers follow hdparm.c (``get_set_max_sectors``: `` max sectors   = A/B, HPA is
enabled|disabled``; ``dco_identify_print``: ``Real max sectors: N``) and are tested on
public captures (tests/data/erase/hidden, each file names its source).
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.model import ParseError
from ssdbench.system import CommandError, Host

_MAX = re.compile(r"max sectors\s*=\s*(\d+)\s*/\s*(\d+)\s*,\s*HPA is (enabled|disabled)")
_DCO_MAX = re.compile(r"Real max sectors:\s*(\d+)")
_DCO_REV = re.compile(r"DCO Revision:\s*(0x[0-9a-fA-F]+)")


@dataclass(frozen=True)
class HpaState:
    """``hdparm -N``: the sectors the host sees now and the drive's native maximum."""

    current_sectors: int
    native_sectors: int
    enabled: bool

    @property
    def hidden_sectors(self) -> int:
        return max(0, self.native_sectors - self.current_sectors)


@dataclass(frozen=True)
class DcoState:
    """``hdparm --dco-identify``: the real maximum a DCO may hide (behind the HPA's)."""

    real_max_sectors: int
    revision: str
    checksum_ok: bool


def parse_hdparm_n(text: str) -> HpaState:
    m = _MAX.search(text)
    if m is None:
        raise ParseError("hdparm -N: no 'max sectors = A/B, HPA is ...' line in "
                         f"{text.strip()[:200]!r}")
    current, native = int(m.group(1)), int(m.group(2))
    if native == 0:
        raise ParseError("hdparm -N: native max of 0 sectors (the drive did not answer)")
    return HpaState(current, native, m.group(3) == "enabled")


def parse_dco_identify(text: str) -> DcoState:
    m = _DCO_MAX.search(text)
    if m is None:
        raise ParseError(
            f"hdparm --dco-identify: no 'Real max sectors' line in {text.strip()[:200]!r}"
        )
    rev = _DCO_REV.search(text)
    return DcoState(
        real_max_sectors=int(m.group(1)),
        revision=rev.group(1) if rev else "",
        checksum_ok="DCO Checksum verified" in text,
    )


def _try(host: Host, argv: list[str], parse: Any) -> tuple[Any, str | None]:
    try:
        res = host.runner.run(argv, timeout=30.0)
        return parse(res.text), None
    except CommandError as exc:
        return None, f"{' '.join(argv)} failed: {exc}"
    except ParseError as exc:
        return None, str(exc)


def ata_hidden_areas(host: Host, path: str, sectors_seen: int | None) -> dict[str, Any]:
    """Read HPA and DCO; ``warnings`` says when the native max is larger than what the
    host sees (an erase through the host's view may not have covered it) or unknown."""
    hpa, hpa_err = _try(host, ["hdparm", "-N", path], parse_hdparm_n)
    dco, dco_err = _try(host, ["hdparm", "--dco-identify", path], parse_dco_identify)
    warnings: list[str] = []
    if hpa is None:
        warnings.append(f"HPA state unknown ({hpa_err}): the native max could not be checked")
    elif hpa.enabled or hpa.hidden_sectors:
        warnings.append(
            f"HPA enabled: the host sees {hpa.current_sectors} of {hpa.native_sectors} "
            f"sectors; {hpa.hidden_sectors} sectors beyond the visible end may not be "
            "covered by the erase (restore the native max with hdparm -N p<native> first)"
        )
    native = hpa.native_sectors if hpa is not None else sectors_seen
    if dco is not None and native is not None and dco.real_max_sectors > native:
        warnings.append(
            f"DCO: the drive's real max is {dco.real_max_sectors} sectors, "
            f"{dco.real_max_sectors - native} more than the native max {native}; a DCO "
            "hides them and the erase may not have covered them"
        )
    return {
        "hpa": None if hpa is None else {
            "enabled": hpa.enabled, "current_sectors": hpa.current_sectors,
            "native_sectors": hpa.native_sectors, "hidden_sectors": hpa.hidden_sectors},
        "hpa_error": hpa_err,
        "dco": None if dco is None else {
            "real_max_sectors": dco.real_max_sectors, "revision": dco.revision,
            "checksum_ok": dco.checksum_ok},
        "dco_error": dco_err,
        "warnings": warnings,
    }


def nvme_hidden_capacity(nvme: Mapping[str, Any] | None, nsid: int | None,
                         *, sanitize: bool = False) -> dict[str, Any]:
    """From discovery's ``Drive.nvme`` JSON form (``tnvmcap``, ``unvmcap``, ``namespaces``):
    the namespaces other than the erased one, and the NVM capacity no namespace holds.
    ``sanitize``: the erase was an NVMe Sanitize, which acts on all of the NVM subsystem's
    user data (the notes then say so instead of warning)."""
    if not nvme:
        return {"warnings": []}
    namespaces: Sequence[Mapping[str, Any]] = nvme.get("namespaces") or []
    others = [ns for ns in namespaces if ns.get("nsid") != nsid]
    sizes = [ns.get("size_bytes") for ns in namespaces]
    allocated = sum(s for s in sizes if isinstance(s, int)) if all(
        isinstance(s, int) for s in sizes) and sizes else None
    tnvmcap, unvmcap = nvme.get("tnvmcap"), nvme.get("unvmcap")
    warnings: list[str] = []
    if others:
        names = ", ".join(f"{ns.get('name') or 'nsid ' + str(ns.get('nsid'))}" for ns in others)
        warnings.append(
            f"other namespaces on this controller: {names}; a Format NVM of one namespace does "
            "not erase them (a sanitize covers the whole NVM subsystem)"
        )
    if not namespaces:
        warnings.append("no namespace list was read: other namespaces cannot be excluded")
    if isinstance(unvmcap, int) and unvmcap > 0:
        warnings.append(
            f"{unvmcap} bytes of NVM capacity belong to no namespace (unvmcap); data in "
            "capacity that was a namespace before is only reached by a sanitize"
        )
    notes: list[str] = []
    if sanitize:  # a sanitize acts on all user data of the NVM subsystem
        notes = [f"{w.split(';')[0]}: covered by the sanitize (it acts on all user data of "
                 "the NVM subsystem)" for w in warnings]
        warnings = []
    return {
        "nsid": nsid,
        "notes": notes,
        "tnvmcap": tnvmcap,
        "unvmcap": unvmcap,
        "namespaces_bytes": allocated,
        "other_namespaces": [
            {"nsid": ns.get("nsid"), "name": ns.get("name"), "size_bytes": ns.get("size_bytes")}
            for ns in others
        ],
        "warnings": warnings,
    }


def restore_native_max_argv(path: str, native_sectors: int) -> list[str]:
    """``hdparm -N p<native>``: SET MAX ADDRESS to the native max, permanent (``p``: survives
    a power cycle, so the next owner sees the whole drive too). hdparm 9.65 asks for
    --yes-i-know-what-i-am-doing only when the new value is *smaller* than the current
    capacity (hdparm.c): ssdbench never passes it, so a wrong value cannot shrink a drive."""
    return ["hdparm", "-N", f"p{native_sectors}", path]


def restore_native_max(host: Host, path: str) -> dict[str, Any]:
    """Restore an HPA's hidden sectors before the erase: read ``hdparm -N``, set the native
    max when the host sees less, read again. Returns the record's ``native_max_restore``
    (``result``: "done", "not needed", or "failed" with ``reason``); never raises."""
    before, err = _try(host, ["hdparm", "-N", path], parse_hdparm_n)
    if before is None:
        return {"result": "failed", "reason": f"HPA state unknown: {err}"}
    out: dict[str, Any] = {"before_sectors": before.current_sectors,
                           "native_sectors": before.native_sectors}
    if before.hidden_sectors == 0:
        return {**out, "result": "not needed", "after_sectors": before.current_sectors}
    argv = restore_native_max_argv(path, before.native_sectors)
    out["command"] = " ".join(argv)
    try:
        host.runner.run(argv, timeout=60.0)
    except CommandError as exc:
        return {**out, "result": "failed",
                "reason": f"{exc} (a drive allows one permanent change per power cycle; a "
                          "DCO or a frozen SET MAX also refuse it)"}
    after, err = _try(host, ["hdparm", "-N", path], parse_hdparm_n)
    if after is None:
        return {**out, "result": "failed", "reason": f"could not read it back: {err}"}
    out["after_sectors"] = after.current_sectors
    if after.hidden_sectors:
        return {**out, "result": "failed",
                "reason": f"the drive still hides {after.hidden_sectors} sectors after "
                          "SET MAX ADDRESS"}
    kernel = rescan_kernel_view(host, path)
    out["kernel"] = kernel
    if isinstance(kernel.get("sectors"), int) and kernel["sectors"] < after.current_sectors:
        return {**out, "result": "failed",
                "reason": f"the kernel still sees {kernel['sectors']} of "
                          f"{after.current_sectors} sectors after the rescan: an erase "
                          "through it would not reach the restored end"}
    return {**out, "result": "done"}


def rescan_argv(path: str) -> list[str]:
    """SCSI rescan of the disk (``sd`` reads the capacity again: hdparm -N does not tell the
    kernel, which keeps the old, smaller size until then)."""
    name = os.path.basename(path)
    if not re.fullmatch(r"[A-Za-z0-9]+", name):
        raise ValueError(f"not a kernel disk name: {path!r}")
    return ["sh", "-c", f"echo 1 > /sys/block/{name}/device/rescan"]


def rescan_kernel_view(host: Host, path: str) -> dict[str, Any]:
    """After SET MAX ADDRESS: rescan, then the sectors the kernel sees (``/sys/block/X/size``,
    None when unreadable) - what the erase and its verification will address."""
    out: dict[str, Any] = {"command": " ".join(rescan_argv(path))}
    try:
        host.runner.run(rescan_argv(path), timeout=60.0)
    except CommandError as exc:
        out["error"] = str(exc)
    size = (host.fs.read_text(f"/sys/block/{os.path.basename(path)}/size") or "").strip()
    out["sectors"] = int(size) if size.isdigit() else None
    return out
