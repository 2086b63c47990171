"""What each kind of run answers, in one place: its headline (the capacity verdict, the
grade and its reasons, the erase's PASS/FAIL and why, the four speed corners, the steady
IOPS and the TRIM verdict), the table columns that belong to it, its title and the plan
parameters it uses. The results screen and report.html both lead with it (#45).

Everything here is read back from run.json (untrusted): a value of the wrong type is
"not recorded", never a crash.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from ssdbench.grade.capacity import FAKE_VERDICTS, drive_capacity
from ssdbench.report.model import RunAnalysis

PTS_KINDS = ("wsat", "hir", "iops", "throughput", "latency")

# kind -> its columns (in the order shown); a table over several kinds shows the union
KIND_COLUMNS: dict[str, tuple[str, ...]] = {
    "consistency": ("IOPS", "stalls", "steady at"),
    "trim": ("IOPS", "TRIM", "stalls", "steady at"),  # its torture's too
    "authenticity": ("capacity",),
    "erase": ("erase", "grade"),  # the erase run grades the drive before it erases
    "grade": ("grade",),
    "speed": ("speed",),
    "surface": ("surface",),
    "diagnose": ("health",),
    **dict.fromkeys(PTS_KINDS, ("steady state",)),
}
COLUMN_ORDER = ("capacity", "grade", "surface", "erase", "speed", "IOPS", "TRIM", "stalls",
                "steady at", "steady state", "health")

# kinds whose answer is a verdict with a reason (the reason is shown with the headline)
VERDICT_KINDS = ("authenticity", "grade", "erase", "speed", "surface")
# kinds that never erase: report.html says nothing of an erase for them
NO_ERASE_KINDS = ("authenticity", "grade", "speed", "diagnose", "surface")

KIND_TITLES = {
    "consistency": "Consistency (steady IOPS, stalls)",
    "trim": "TRIM validation",
    "authenticity": "Capacity check",
    "erase": "Erase and record",
    "grade": "Health grade",
    "speed": "Speed (four corners)",
    "surface": "Surface scan (every block read, timed)",
    "diagnose": "Diagnosis (read-only)",
    "wsat": "SNIA PTS write saturation",
    "hir": "SNIA PTS host idle recovery",
    "iops": "SNIA PTS IOPS",
    "throughput": "SNIA PTS throughput",
    "latency": "SNIA PTS latency",
}

# the plan parameters each kind uses (report.html lists only these; the rest of
# run.json "params" does not apply to the run)
_FIO = ("iodepth", "ioengine", "status_timeout_s", "hist_coarseness", "chart_iops_top")
_ERASE = ("erase_fallback", "overwrite_pattern", "overwrite_verify_percent")
_PTS = ("pts_max_rounds", "pts_wipc_passes", "steady_round_s", "block_size_fill", *_ERASE,
        *_FIO)
_GRADE = ("self_test", "grade_reallocated_scrap", "grade_reported_uncorrectable_scrap",
          "grade_media_errors_scrap", "grade_wear_note_percent", "grade_wear_scrap_percent",
          "grade_power_on_hours_note")
KIND_PARAMS: dict[str, tuple[str, ...]] = {
    "consistency": ("torture_seconds", "fill_passes", "op_percent", "steady_start_s",
                    "block_size_fill", "block_size_torture", *_ERASE, *_FIO),
    "trim": ("trim_torture_seconds", "fill_passes", "probe_gib", "probe_preset",
             "probe_max_multiple", "trim_idle_seconds", "block_size_fill",
             "block_size_torture", *_ERASE, *_FIO),
    "diagnose": ("random_read_seconds", "iodepth", "ioengine", "status_timeout_s"),
    "authenticity": ("capacity_check",),
    "grade": _GRADE,
    "erase": ("operator", "organisation", "customer", "asset_tag", "lot", "job",
              "extra_fields", "record_pdf",
              "restore_native_max", *_ERASE, *_GRADE),
    "speed": ("speed_seconds", "speed_ramp_seconds", "speed_gib", "speed_writes",
              "speed_tolerance_percent", "speed_classes", "ioengine"),
    "surface": ("surface_regions", "surface_block_kib"),
    "wsat": ("wsat_capacity_multiple", "wsat_seconds", *_PTS),
    "hir": ("wsat_capacity_multiple", "wsat_seconds", "hir_waits", "hir_repetitions",
            "hir_burst_seconds", *_PTS),
    "iops": _PTS,
    "latency": _PTS,
    "throughput": ("pts_block_sizes", *_PTS),
}


@dataclass(frozen=True)
class Answer:
    """One run's answer. ``tone``: "good", "bad" or "" (no verdict)."""

    kind: str
    headline: str
    tone: str = ""
    reason: str = ""  # why: the erase's reason, the grade's reasons, the corners
    record: str = ""  # the erase record's file, relative to the run folder
    # the erase record's signature (False: UNSIGNED, said beside it: #45 F; None: no
    # record) and its printable certificate's files (.html, .pdf) in the run folder
    signed: bool | None = None
    certificate: tuple[str, ...] = ()
    cells: Mapping[str, str] = field(default_factory=dict)
    also: tuple[Answer, ...] = ()  # what the run answered besides (the erase run's grade)

    def parts(self) -> tuple[Answer, ...]:
        """This answer's own and those it carries, in reading order (the grade, then the
        erase)."""
        return (*self.also, self)


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def _text(value: Any) -> str:
    return value if isinstance(value, str) else ""


def _finite(value: Any) -> float | None:
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    return float(value) if math.isfinite(value) else None


def _file_name(value: Any) -> str:
    """A file name in the run folder (``record.json``), never a path or a link elsewhere."""
    name = _text(value)
    ok = re.fullmatch(r"[A-Za-z0-9_][A-Za-z0-9._-]{0,99}", name) is not None
    return name if ok else ""


def _gb(n: Any) -> str:
    v = _finite(n)
    return "unknown" if v is None else f"{v / 1e9:,.1f} GB"


def columns_for(kinds: Iterable[str]) -> tuple[str, ...]:
    """The columns of a table over runs of these kinds (only those that belong to them)."""
    wanted = {c for k in kinds for c in KIND_COLUMNS.get(k, ())}
    return tuple(c for c in COLUMN_ORDER if c in wanted)


def params_for(kind: str, params: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The recorded parameters the run's kind uses (an unknown kind: all of them)."""
    keep = KIND_PARAMS.get(kind)
    return [(k, v) for k, v in params.items() if keep is None or k in keep]


def title(kind: str, plan: str = "") -> str:
    """``Capacity check (intake)``: what the run is, with the plan it was part of."""
    base = KIND_TITLES.get(kind, kind or "unknown run")
    return f"{base} ({plan})" if plan and plan != kind else base


def plan_name(meta: Mapping[str, Any]) -> str:
    return _text(_map(meta.get("plan")).get("name"))


def _capacity(meta: Mapping[str, Any]) -> Answer:
    c = drive_capacity(meta)
    if c is None:
        return Answer("authenticity", "capacity not checked", "bad",
                      cells={"capacity": "not checked"})
    verdict = str(c["verdict"])
    fake = verdict in FAKE_VERDICTS
    head = f"capacity {'FAKE: ' if fake else ''}{verdict}"
    if fake:
        head += f", holds {_gb(c.get('real_bytes'))} of {_gb(c.get('claimed_bytes'))}"
    return Answer("authenticity", head, "good" if verdict == "genuine" else "bad",
                  reason=f"{c['summary']} ({c['by']})",
                  cells={"capacity": ("FAKE " if fake else "") + verdict})


def _grade(meta: Mapping[str, Any], kind: str = "grade") -> Answer | None:
    g = _map(meta.get("grade"))
    grade = _text(g.get("grade"))
    if not grade:
        return None
    reasons = [_text(r.get("text")) for r in g.get("reasons") or []
               if isinstance(r, Mapping) and _text(r.get("text"))]
    return Answer(kind, f"grade {grade}",
                  {"reuse": "good", "scrap": "bad"}.get(grade, ""),
                  reason="; ".join(reasons) or "no counter gave a reason for anything else",
                  cells={"grade": grade})


def _erase(meta: Mapping[str, Any], error: str) -> Answer:
    rec = _map(meta.get("erase_record"))
    result = _map(rec.get("result"))
    status = _text(result.get("status"))
    graded = _grade(meta, "erase")
    cells = {"grade": graded.cells["grade"]} if graded else {}
    if status:
        reason = _text(result.get("reason"))
        record = _file_name(rec.get("json"))
        signed = rec.get("signed")
        certificate = tuple(f for f in (_file_name(rec.get("html")), _file_name(rec.get("pdf")))
                            if f)
        return Answer("erase", f"erase {status}", "good" if status == "PASS" else "bad",
                      reason=reason, record=record,
                      signed=signed if isinstance(signed, bool) else None,
                      certificate=certificate,
                      cells={"erase": status, **cells},
                      also=(graded,) if graded else ())
    # no record: the run stopped before it was written
    why = error or _text(meta.get("error")) or "no erase record written"
    return Answer("erase", "erase FAIL: no record", "bad", reason=why,
                  cells={"erase": "FAIL", **cells},
                  also=(graded,) if graded else ())


def _speed(meta: Mapping[str, Any]) -> Answer:
    sp = _map(meta.get("speed"))
    v = _map(sp.get("verdict"))
    text = _text(v.get("text")) or "not finished"
    corners = [c for c in sp.get("corners") or [] if isinstance(c, Mapping)]
    said = []
    for c in corners:
        mb = _finite(c.get("mb_s"))
        said.append(f"{_text(c.get('label'))} {_text(c.get('direction'))} "
                    + ("-" if mb is None else f"{mb:,.0f} MB/s"))
    tone = {"as fast": "good", "below": "bad"}.get(_text(v.get("verdict")), "")
    return Answer("speed", f"speed: {text}", tone, reason="; ".join(said),
                  cells={"speed": text})


def _surface(meta: Mapping[str, Any]) -> Answer:
    sf = _map(meta.get("surface"))
    verdict = _text(sf.get("verdict"))
    if not verdict:
        return Answer("surface", "surface scan not finished", "bad",
                      reason=_text(meta.get("error")), cells={"surface": "-"})
    text = {"clean": "clean", "slow": "slow reads",
            "unreadable": "unreadable sectors"}.get(verdict, verdict)
    return Answer("surface", f"surface: {text}", "good" if verdict == "clean" else "bad",
                  reason=_text(sf.get("summary")), cells={"surface": text})


def _pts(run: RunAnalysis | None, kind: str) -> Answer:
    loops = run.pts if run is not None else ()
    if not loops:
        return Answer(kind, f"{kind}: no round loop recorded", cells={"steady state": "-"})
    reached = [lp for lp in loops if lp.reached]
    text = f"steady state in {len(reached)} of {len(loops)} loop(s)"
    return Answer(kind, f"{kind}: {text}", "good" if len(reached) == len(loops) else "bad",
                  cells={"steady state": f"{len(reached)}/{len(loops)} steady"})


def _bench(run: RunAnalysis | None, kind: str) -> Answer:
    it = run.iops if run is not None else None
    trim = run.trim if run is not None else None
    cells: dict[str, str] = {}
    parts: list[str] = []
    if it is not None:
        mean = it.steady.mean
        cells["IOPS"] = "-" if mean is None else f"{mean:,.0f}"
        cells["stalls"] = f"{it.stalls.zero_seconds}s/{it.stalls.longest_zero_run_s}s"
        cells["steady at"] = ("not reached" if not it.steady_state.reached
                              else f"{it.steady_state.at_s} s")
        if mean is not None:
            parts.append(f"steady {mean:,.0f} IOPS")
        parts.append(f"{it.stalls.zero_seconds} s at zero IOPS")
    tone = ""
    if trim is not None:
        cells["TRIM"] = trim.verdict
        parts.append(f"TRIM {trim.verdict}")
        tone = "good" if trim.verdict == "works" else "bad"
    return Answer(kind, ", ".join(parts) or f"{kind}: no figures", tone,
                  reason=trim.reason if trim is not None else "", cells=cells)


def _diagnose(meta: Mapping[str, Any], state: str) -> Answer:
    health = _map(meta.get("health"))
    smart = not health.get("unavailable")
    text = "read-only checks " + ("done" if state == "done" else state)
    return Answer("diagnose", text, cells={"health": "read" if smart else "not available"})


def answer(kind: str, meta: Mapping[str, Any], run: RunAnalysis | None = None, *,
           state: str = "", error: str = "") -> Answer:
    """The answer of one run from its run.json (``meta``) and its analysis."""
    meta = _map(meta)
    if kind == "authenticity":
        return _capacity(meta)
    if kind == "grade":
        return _grade(meta) or Answer("grade", "grade not given", "bad",
                                      reason=error or _text(meta.get("error")),
                                      cells={"grade": "-"})
    if kind == "erase":
        return _erase(meta, error)
    if kind == "speed":
        return _speed(meta)
    if kind == "surface":
        return _surface(meta)
    if kind in PTS_KINDS:
        return _pts(run, kind)
    if kind == "diagnose":
        return _diagnose(meta, state)
    return _bench(run, kind)


def headline(answers: Sequence[Answer]) -> str:
    """A drive's answer in one line: each run's headline, in the plan's order."""
    return " · ".join(p.headline for a in answers for p in a.parts())
