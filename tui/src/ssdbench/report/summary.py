"""summary.csv: one row per run of every drive (columns in docs/results-format.md)."""

from __future__ import annotations

import csv
import io
from collections.abc import Iterable
from typing import Any

from ssdbench.analysis import Events
from ssdbench.grade.capacity import drive_capacity
from ssdbench.report.charts import MB_PER_MIB
from ssdbench.report.model import DriveReport, RunAnalysis, run_warnings
from ssdbench.stages.params import FIELD_NAME
from ssdbench.untrusted import csv_row

SUMMARY_COLUMNS = (
    "drive_dir", "model", "serial", "firmware", "capacity_bytes", "run", "op_percent",
    "duration_s", "iops_mean", "steady_iops_mean", "steady_iops_stddev", "steady_iops_p1",
    "zero_iops_seconds", "longest_stall_s", "steady_state_at_s", "trim_clean_mib_s",
    "trim_after_torture_mib_s", "trim_after_trim_mib_s", "trim_verdict", "erase_method",
    "erase_verified", "run_state",
    # added later, at the end so that older readers' column positions still hold
    "trim_clean_mb_s", "trim_after_torture_mb_s", "trim_after_trim_mb_s", "warnings",
    "steady_state_iops", "steady_start_s", "cliff_at_s", "cliff_plateau_iops", "throttles",
    "events", "grade", "grade_reasons", "authenticity", "real_capacity_bytes",
    "speed_verdict", "speed_corners",
    # schema 1.1.0: the operator's fields (run.json params); then one field_<name> column per
    # lab field any row has (FIELD_COLUMN), in the order the rows name them
    "customer", "asset_tag", "lot", "job",
)
FIELD_COLUMN = "field_"  # summary.csv column of the lab's field <name>: field_<name>
_OPERATOR_CELLS = ("customer", "asset_tag", "lot", "job")


def _fmt(value: Any, digits: int = 1) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int):
        return str(value)
    if isinstance(value, float):
        if value.is_integer() and digits == 0:
            return str(int(value))
        return f"{value:.{digits}f}"
    return str(value)


def summary_row(report: DriveReport, run: RunAnalysis, meta: dict[str, Any]) -> dict[str, str]:
    ident = report.identity
    erase = meta.get("erase") if isinstance(meta.get("erase"), dict) else None
    it = run.iops
    trim = run.trim
    size = ident.get("size_bytes", ident.get("capacity_bytes"))
    return {
        "drive_dir": report.drive_dir.name,
        "model": _fmt(ident.get("model")),
        "serial": _fmt(ident.get("serial")),
        "firmware": _fmt(ident.get("firmware")),
        "capacity_bytes": _fmt(size if isinstance(size, int) else None),
        "run": run.run,
        "op_percent": _fmt(run.op_percent, 0),
        "duration_s": _fmt(it.duration_s if it else None),
        "iops_mean": _fmt(it.whole.mean if it else None),
        "steady_iops_mean": _fmt(it.steady.mean if it else None),
        "steady_iops_stddev": _fmt(it.steady.stddev if it else None),
        "steady_iops_p1": _fmt(it.steady.p1 if it else None),
        "zero_iops_seconds": _fmt(it.stalls.zero_seconds if it else None),
        "longest_stall_s": _fmt(it.stalls.longest_zero_run_s if it else None),
        "steady_state_at_s": _fmt(it.steady_state.at_s if it else None),
        "trim_clean_mib_s": _fmt(trim.clean_mib_s if trim else None),
        "trim_after_torture_mib_s": _fmt(trim.after_torture_mib_s if trim else None),
        "trim_after_trim_mib_s": _fmt(trim.after_trim_mib_s if trim else None),
        "trim_verdict": trim.verdict if trim else "",
        "erase_method": _fmt(erase.get("method")) if erase else "",
        "erase_verified": _fmt(erase.get("verified")) if erase else "",
        "run_state": run.state,
        "trim_clean_mb_s": _fmt(_mb(trim.clean_mib_s) if trim else None),
        "trim_after_torture_mb_s": _fmt(_mb(trim.after_torture_mib_s) if trim else None),
        "trim_after_trim_mb_s": _fmt(_mb(trim.after_trim_mib_s) if trim else None),
        # not known when run.json, which holds them, is unreadable
        "warnings": "" if "run.json" in run.unreadable else str(len(run_warnings(meta))),
        "steady_state_iops": _fmt(it.steady_state.window_mean if it else None),
        "steady_start_s": _fmt(it.steady_start_s if it else None, 0),
        "cliff_at_s": _fmt(it.cliff.at_s if it else None),
        "cliff_plateau_iops": _fmt(it.cliff.reference_iops if it and it.cliff.at_s is not None
                                   else None),
        "throttles": _fmt(len(it.events.of("throttle")) if it and it.events else None),
        "events": events_text(it.events) if it and it.events else "",
        **grade_cells(meta),
        **authenticity_cells(meta),
        **speed_cells(meta),
        **operator_cells(meta),
    }


def operator_cells(meta: dict[str, Any]) -> dict[str, str]:
    """The customer, asset tag, lot and lab job of run.json ``params`` and one
    ``field_<name>`` cell per lab field (``params.extra_fields``, name -> value). run.json
    is untrusted: a value that is not text is no value, a name that is not a lab field's
    name (``[a-z][a-z0-9_]{0,31}``) makes no column."""
    raw = meta.get("params")
    params: dict[str, Any] = raw if isinstance(raw, dict) else {}
    cells = {k: params[k] if isinstance(params.get(k), str) else "" for k in _OPERATOR_CELLS}
    extra = params.get("extra_fields")
    if isinstance(extra, dict):
        cells.update({FIELD_COLUMN + name: value for name, value in extra.items()
                      if isinstance(name, str) and FIELD_NAME.fullmatch(name)
                      and isinstance(value, str)})
    return cells


def summary_columns(rows: Iterable[dict[str, str]]) -> tuple[str, ...]:
    """SUMMARY_COLUMNS, then the ``field_<name>`` columns of ``rows`` in the order they
    first appear (a lab's fields in its order; a field one drive lacks is an empty cell)."""
    extra: dict[str, None] = {}
    for row in rows:
        extra.update(dict.fromkeys(k for k in row if k.startswith(FIELD_COLUMN)))
    return (*SUMMARY_COLUMNS, *extra)


def speed_cells(meta: dict[str, Any]) -> dict[str, str]:
    """The speed plan's verdict against the drive's class and its corners in MB/s (run.json
    ``speed``, read as untrusted: the answer module's words)."""
    if meta.get("kind") != "speed":
        return {"speed_verdict": "", "speed_corners": ""}
    from ssdbench.report.answer import answer

    said = answer("speed", meta)
    return {"speed_verdict": said.cells.get("speed", ""), "speed_corners": said.reason}


def authenticity_cells(meta: dict[str, Any]) -> dict[str, str]:
    """The drive's fake-capacity verdict (run.json ``authenticity`` and ``capacity_full``,
    the stronger evidence winning: grade/capacity.py drive_capacity) and what it holds."""
    a = drive_capacity(meta)
    if a is None:
        return {"authenticity": "", "real_capacity_bytes": ""}
    real = a.get("real_bytes")
    return {"authenticity": a["verdict"],
            "real_capacity_bytes": str(real) if type(real) is int else ""}


def grade_cells(meta: dict[str, Any]) -> dict[str, str]:
    """run.json ``grade`` (grade or erase runs): the grade, and its reasons' words."""
    g = meta.get("grade")
    if not isinstance(g, dict) or not isinstance(g.get("grade"), str):
        return {"grade": "", "grade_reasons": ""}
    raw = g.get("reasons")
    reasons: list[Any] = raw if isinstance(raw, list) else []
    return {"grade": g["grade"], "grade_reasons": "; ".join(
        str(r.get("text")) for r in reasons if isinstance(r, dict))}


def events_text(ev: Events) -> str:
    """The run's events in a few words, for summary.csv and index.html ("2 throttles, 1
    stall of 31 s, 1 late fall"); the cliff has its own columns."""
    parts = []
    for kind, one, many in (("throttle", "throttle", "throttles"), ("step", "step", "steps"),
                            ("decline", "gradual decline", "gradual declines"),
                            ("late-fall", "late fall", "late falls")):
        k = len(ev.of(kind))
        if k:
            parts.append(f"{k} {one if k == 1 else many}")
    stalls = ev.of("stall")
    if stalls:
        longest = max(e.duration_s for e in stalls)
        parts.append(f"{len(stalls)} stall{'s' if len(stalls) > 1 else ''} (longest {longest} s)")
    return ", ".join(parts)


def _mb(mib_s: float | None) -> float | None:
    return None if mib_s is None else mib_s * MB_PER_MIB


def summary_csv(rows: Iterable[dict[str, str]]) -> str:
    """The CSV of ``rows``: every text cell through the display rule and the formula guard
    (untrusted.csv_row: ``=SUM(1)`` as ``'=SUM(1)``), the lab's fields' columns at the end."""
    rows = list(rows)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=summary_columns(rows), lineterminator="\n",
                            restval="")
    writer.writeheader()
    for row in rows:
        writer.writerow(csv_row(row))
    return buf.getvalue()
