"""The erase record of one drive and one erase (docs/results-format.md "Erase record").

Built from what the run already holds: discovery's drive identity (run.json ``drive``),
the erase room's record (run.json ``erase``), the hidden-area checks, the health
snapshots before and after, the tool versions and the people named in the plan
parameters. PASS needs a sanitization (Clear or Purge) that finished *and* a read-back
verification that found none of the markers written before the erase.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from ssdbench.record.nist import NONE, sanitization_for

FORMAT = "ssdbench-erase-record"
VERSION = 1
PASS, FAIL = "PASS", "FAIL"

_GENERIC_VENDORS = {"", "ata", "nvme", "linux"}


def _manufacturer(drive: Mapping[str, Any]) -> str:
    vendor = str(drive.get("vendor") or "").strip()
    if vendor.lower() not in _GENERIC_VENDORS:
        return vendor
    model = str(drive.get("model") or "").strip()
    # SATA drives report vendor "ATA": the model string starts with the maker's name
    return f"{model.split()[0]} (from the model string)" if " " in model else "unknown"


def _media_type(drive: Mapping[str, Any]) -> str:
    transport = str(drive.get("transport") or "")
    if transport in ("loop", "virtio") or drive.get("loop_backing_file"):
        return "virtual disk (no physical media)"
    if drive.get("rotational"):
        return "magnetic (hard disk)"
    return "flash memory (SSD)"


def identity(drive: Mapping[str, Any], hidden: Mapping[str, Any]) -> dict[str, Any]:
    size = drive.get("size_bytes")
    block = int(drive.get("logical_block_size") or 512)
    native: int | None = size if isinstance(size, int) else None
    native_source = "the capacity the host sees (no hidden-area check for this interface)"
    hpa = (hidden.get("ata") or {}).get("hpa")
    if hpa:
        native = int(hpa["native_sectors"]) * block
        native_source = "hdparm -N native max"
    nvme = hidden.get("nvme") or {}
    if isinstance(nvme.get("tnvmcap"), int) and nvme["tnvmcap"] > 0:
        native = nvme["tnvmcap"]
        native_source = "NVMe id-ctrl tnvmcap (total NVM capacity)"
    return {
        "manufacturer": _manufacturer(drive),
        "model": drive.get("model") or "",
        "serial": drive.get("serial") or "",
        "firmware": drive.get("firmware") or "",
        "interface": drive.get("transport") or "",
        "media_type": _media_type(drive),
        "device": drive.get("path") or "",
        "capacity_bytes": size,
        "native_max_bytes": native,
        "native_max_source": native_source,
        "logical_block_size": block,
        # other drives present reported the same serial (kiosk/station.py): it names no
        # single drive, so the record names them
        **({"serial_shared_with": [str(n) for n in shared]}
           if isinstance(shared := drive.get("serial_shared_with"), list) and shared else {}),
    }


def _overwrite_verification(over: Mapping[str, Any]) -> dict[str, Any]:
    ver = over.get("verification")
    if not isinstance(ver, Mapping):
        return {"method": "none", "sampled": 0, "result": "not verified",
                "reason": "verification was switched off"}
    return {
        "method": (f"read-back of {ver.get('percent')}% of the drive after the overwrite, "
                   "compared with the pattern recomputed from the recorded seed; a block "
                   "that does not hold it fails the check"),
        "sampled": ver.get("units_checked"),
        "block_bytes": ver.get("unit_bytes"),
        "where": ("every unit of the drive" if (ver.get("percent") or 0) >= 100 else
                  f"units chosen at random in each of {ver.get('subsections')} equal parts of "
                  "the drive, the first and the last always (sample seed "
                  f"{ver.get('sample_seed')})"),
        "percent": ver.get("percent"),
        "mismatches": ver.get("mismatches"),
        "mismatch_offsets": list(ver.get("mismatch_offsets") or []),
        "unreadable": list(ver.get("unreadable_offsets") or []),
        "result": "passed" if ver.get("passed") and not ver.get("mismatches") else "failed",
    }


def verification(erase: Mapping[str, Any] | None) -> dict[str, Any]:
    if isinstance(over := (erase or {}).get("overwrite"), Mapping):
        return _overwrite_verification(over)
    ver = (erase or {}).get("verification")
    if not isinstance(ver, Mapping):
        why = ("the erase did not finish" if not erase else
               "a discard promises nothing about what reads return: no read-back can prove it"
               if erase.get("method") == "discard" else "verification was switched off")
        return {"method": "none", "sampled": 0, "result": "not verified", "reason": why}
    offsets = list(ver.get("offsets") or [])
    survivors = list(ver.get("survivors") or [])
    return {
        "method": "read-back of marker blocks written before the erase (sampled); a block "
                  "that still holds its marker after the erase fails the check",
        "sampled": len(offsets),
        "block_bytes": ver.get("block_bytes"),
        "where": "the first block, the last block and evenly spaced blocks in between",
        "offsets": offsets,
        "survivors": survivors,
        "result": "passed" if ver.get("passed") and not survivors else "failed",
    }


def reformatted(drive: Mapping[str, Any], erase: Mapping[str, Any] | None) -> Mapping[str, Any]:
    """The drive as the host sees it after a SAS reformat (``erase.scsi_reformat``, 520/528
    -> 512: discovery saw capacity 0), else as discovery saw it."""
    refmt = (erase or {}).get("scsi_reformat")
    after = refmt.get("after") if isinstance(refmt, Mapping) else None
    if refmt is None or not isinstance(after, Mapping) or refmt.get("result") != "done":
        return drive
    size, block = after.get("size_bytes"), after.get("block_size")
    if not all(isinstance(v, int) and not isinstance(v, bool) and v > 0 for v in (size, block)):
        return drive
    return {**drive, "size_bytes": size, "logical_block_size": block}


def _health(snapshot: Mapping[str, Any] | None) -> dict[str, Any] | None:
    if not snapshot:
        return None
    keep = ("available", "reason", "passed", "temperature_c", "power_on_hours",
            "percentage_used", "available_spare", "media_errors", "reallocated_sectors")
    return {k: snapshot[k] for k in keep if k in snapshot}


def verdict(erase: Mapping[str, Any] | None, error: str | None,
            ver: Mapping[str, Any]) -> tuple[str, str]:
    method = (erase or {}).get("method")
    san = sanitization_for(method)
    if error:
        return FAIL, f"the erase failed: {error}"
    if san.category == NONE:
        return FAIL, f"Clear not achieved: {san.note}"
    if ver.get("result") != "passed":
        return FAIL, f"{san.category} not verified: {ver.get('reason') or ver.get('result')}"
    over = (erase or {}).get("overwrite")
    if method == "overwrite" and isinstance(over, Mapping):
        reads = [b for b in over.get("bad_block_list") or []
                 if isinstance(b, Mapping) and b.get("still_reads")]
        if reads:
            return FAIL, (f"Clear not achieved: {len(reads)} blocks could not be written and "
                          "still read (byte offsets "
                          f"{', '.join(str(b.get('offset')) for b in reads[:5])})")
        return PASS, (f"Clear by one overwrite pass ({over.get('pattern')}); "
                      f"{ver['sampled']} sampled units ({ver.get('percent')}% of the drive) "
                      "read back holding the pattern")
    return PASS, (f"{san.category} by {san.technique}; {ver['sampled']} sampled blocks "
                  "read back without their markers")


PEOPLE = ("operator", "organisation", "customer", "asset_tag")
LAB_KEYS = ("lot", "job")  # schema 1.1.0: with `fields`, the lab's own (docs/erase.md)


def people_block(people: Mapping[str, Any]) -> dict[str, Any]:
    """The record's ``people``: who erased what for whom (strings, "" when not given), the
    lot, the lab's job that chose the plan and the lab's own fields (name -> value, by name:
    erase-record.json is written with sorted keys, and the record in memory reads the same;
    pairs or a mapping in ``people["fields"]``)."""
    raw = people.get("fields") or ()
    pairs = raw.items() if isinstance(raw, Mapping) else raw
    return {**{k: str(people.get(k) or "") for k in (*PEOPLE, *LAB_KEYS)},
            "fields": dict(sorted((str(name), str(value)) for name, value in pairs))}


def people_of(params: Any) -> dict[str, Any]:
    """:func:`people_block`'s input from a run's RunParams."""
    return {**{k: str(getattr(params, k, "") or "") for k in (*PEOPLE, *LAB_KEYS)},
            "fields": tuple(getattr(params, "extra_fields", ()) or ())}


def build_record(
    *,
    drive: Mapping[str, Any],
    erase: Mapping[str, Any] | None,
    error: str | None,
    hidden: Mapping[str, Any],
    tools: Mapping[str, Any],
    people: Mapping[str, Any],
    health_before: Mapping[str, Any] | None,
    health_after: Mapping[str, Any] | None,
    started: str,
    finished: str,
    duration_s: float,
    record_id: str | None = None,
    tcg_revert: Mapping[str, Any] | None = None,
    grade: Mapping[str, Any] | None = None,
    authenticity: Mapping[str, Any] | None = None,
    host: Mapping[str, Any] | None = None,
) -> dict[str, Any]:
    """The unsigned record (sign it with :func:`ssdbench.record.sign.sign_record`);
    ``host``: run.json ``host``, the machine and the drive's controller (devices/host.py)."""
    method = (erase or {}).get("method")
    who = identity(reformatted(drive, erase), hidden)
    san = sanitization_for(method, str(who["media_type"]))
    ver = verification(erase)
    result, reason = verdict(erase, error, ver)
    warnings = [*((hidden.get("ata") or {}).get("warnings") or []),
                *((hidden.get("nvme") or {}).get("warnings") or [])]
    over = (erase or {}).get("overwrite")
    if isinstance(over, Mapping) and over.get("bad_blocks"):
        warnings.append(f"{over.get('bad_blocks')} bad blocks could not be written: skipped "
                        "and listed in sanitization.overwrite (not overwritten)")
    if who.get("serial_shared_with"):
        warnings.append(f"serial {who['serial']!r} was also reported by "
                        f"{', '.join(who['serial_shared_with'])} (another drive present at "
                        f"the time): it names no single drive; this record is the drive at "
                        f"{who['device']}")
    return {
        "format": FORMAT,
        "version": VERSION,
        "record_id": record_id or str(uuid.uuid4()),
        "drive": who,
        # the machine the drive was erased in, and its controller (devices/host.py)
        **({} if host is None else {"host": dict(host)}),
        "sanitization": {
            "category": san.category,
            "technique": san.technique,
            "method": method,
            "reference": san.reference,
            "note": san.note,
            "secure": bool((erase or {}).get("secure")),
            "detail": (erase or {}).get("detail") or "",
            "steps": list((erase or {}).get("steps") or []),
            # Clear by overwrite: the pass, the pattern (and its seed), the bad blocks
            **({"overwrite": {k: over.get(k) for k in (
                "passes", "pattern", "pattern_detail", "seed", "bytes", "bytes_written",
                "seconds", "mb_s", "bad_blocks", "bad_block_list")}}
               if isinstance(over, Mapping) else {}),
            # a SAS drive reformatted (520/528 -> 512) before its SANITIZE: the sizes before
            # and after, the command, what the kernel sees after (erase/scsi.py)
            **({"scsi_reformat": dict(refmt)}
               if isinstance(refmt := (erase or {}).get("scsi_reformat"), Mapping) else {}),
        },
        "hidden_areas": dict(hidden),
        "tcg_revert": None if tcg_revert is None else dict(tcg_revert),
        "warnings": warnings,
        "verification": ver,
        "started": started,
        "finished": finished,
        "duration_s": round(duration_s, 1),
        "tools": dict(tools),
        "people": people_block(people),
        "health": {"before": _health(health_before), "after": _health(health_after)},
        "result": {"status": result, "reason": reason},
        # the drive's grade from its counters before the erase (grade/rules.py)
        **({} if grade is None else {"grade": {
            "grade": str(grade.get("grade")),
            "reasons": [str(r.get("text")) for r in grade.get("reasons") or []
                        if isinstance(r, Mapping)]}}),
        # the plan's fake-capacity check before the erase (intake: grade/capacity.py)
        **({} if authenticity is None else {"authenticity": {
            **{k: authenticity.get(k) for k in ("verdict", "fake", "claimed_bytes",
                                                "real_bytes", "summary")},
            # the full check's words, when the plan ran it (capacity_check = "full")
            **({"full": str(authenticity["full"])} if "full" in authenticity else {})}}),
    }
