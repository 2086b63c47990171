"""The batch page (issue #45): one printable page of every drive of a kiosk run or a station
day — serial, model, capacity, grade, capacity verdict, erase method and result, record id —
for drives handed on in a lot (docs/kiosk.md "The batch page").

Read from the results folder only (each drive folder's run.json files and erase records,
never followed through a link, a FIFO never opened, a file over the JSON limit never read:
:func:`ssdbench.jsonfile.read_bytes`): a folder from another bench is untrusted, so every
string goes through the certificate's :func:`~ssdbench.record.render._h` (long ones cut)
and the page is made by the certificate's :func:`~ssdbench.record.render.write_pdf` (its
URL fetcher refuses every URL; the page has a Content-Security-Policy that loads nothing).
A station day (``ssdbench batch DIR --day``) takes only the runs started on that day.
"""

from __future__ import annotations

import os
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench import jsonfile
from ssdbench.devices.host import describe as describe_host
from ssdbench.grade.capacity import drive_capacity
from ssdbench.record.render import CSP, _h, write_pdf
from ssdbench.record.write import RECORD_JSON
from ssdbench.results import atomic
from ssdbench.units import decimal_size

BATCH_STEM = "batch"


@dataclass(frozen=True)
class BatchRow:
    """One drive of the batch, as read from its folder (texts raw: the page escapes)."""

    folder: str
    serial: str
    model: str
    capacity_bytes: int | None
    grade: str
    capacity_verdict: str  # drive_capacity's verdict, "" when the plan ran no check
    fake: bool
    erase_method: str
    erase_result: str  # PASS / FAIL from the record, or what happened instead
    record_id: str
    started: str
    problem: str = ""  # why the folder could not be read (whole or in part)
    device: str = ""  # the kernel name (a drive without a serial is told apart by it)
    asset_tag: str = ""  # the plan's (run.json params): the operator's fields (#45 G)
    lot: str = ""
    operator: str = ""
    reason: str = ""  # why the erase did not PASS
    signed: bool | None = None  # the erase record's signature; None: no record


def _json(path: Path) -> Mapping[str, Any] | None:
    try:
        data = jsonfile.read(path, follow=False)
    except (OSError, ValueError, RecursionError):
        return None
    return data if isinstance(data, Mapping) else None


def _map(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


TEXT_LIMIT = 200  # characters of one read string on the page (a run.json may hold megabytes)


def _str(value: Any) -> str:
    if not isinstance(value, str):
        return ""
    return value if len(value) <= TEXT_LIMIT else value[: TEXT_LIMIT - 1] + "…"


def _folders(top: Path) -> list[Path]:
    """The folders in ``top``, sorted: a link, a file, a FIFO is no folder of it; an
    unreadable ``top`` has none."""
    try:
        entries = sorted(top.iterdir())
    except OSError:
        return []
    return [p for p in entries
            if not p.name.startswith(".") and not p.is_symlink() and p.is_dir()]


def _on_day(meta: Mapping[str, Any], day: str | None) -> bool:
    return day is None or _str(meta.get("started")).startswith(day)


def read_runs(drive_dir: Path, day: str | None = None
              ) -> tuple[list[tuple[Path, Mapping[str, Any]]], list[str]]:
    """The runs of a drive folder as (run folder, run.json), oldest first, and the names of
    the run folders whose run.json is there but not read (a FIFO, a link, over the limit,
    not JSON) or that are a link to a folder (``NAME (a link)``: never followed). ``day``
    (``YYYY-MM-DD``): only the runs started on it."""
    runs: list[tuple[Path, Mapping[str, Any]]] = []
    unreadable = []
    try:
        linked = sorted(p.name for p in drive_dir.iterdir() if p.is_symlink() and p.is_dir())
    except OSError:
        linked = []
    for run_dir in _folders(drive_dir):
        if not os.path.lexists(run_dir / "run.json"):
            continue
        meta = _json(run_dir / "run.json")
        if meta is None:
            unreadable.append(run_dir.name)
        elif _on_day(meta, day):
            runs.append((run_dir, meta))
    runs.sort(key=lambda r: _str(r[1].get("started")))
    return runs, unreadable + [f"{name} (a link)" for name in linked]


def drive_row(drive_dir: Path | Sequence[Path], day: str | None = None) -> BatchRow:
    """One drive as a row, from its folder (or its folders of several sessions: see
    :func:`one_drive_each`): its runs' run.json (oldest first; a later run's grade,
    capacity verdict and erase win) and the erase record of its last erase. ``day``: only
    the runs started on it (a station day's page: the drive's runs of other days left out)."""
    dirs = [drive_dir] if isinstance(drive_dir, Path) else list(drive_dir)
    runs: list[tuple[Path, Mapping[str, Any]]] = []
    unreadable: list[str] = []
    for folder in dirs:
        got, bad = read_runs(folder, day)
        runs += got
        unreadable += bad
    runs.sort(key=lambda r: _str(r[1].get("started")))
    drive: Mapping[str, Any] = {}
    grade = verdict = method = result = record_id = started = reason = ""
    fields = {"asset_tag": "", "lot": "", "operator": ""}
    signed: bool | None = None
    fake = False
    for run_dir, meta in runs:
        d = meta.get("drive")
        if isinstance(d, Mapping):
            drive = d
        started = started or _str(meta.get("started"))
        params = _map(meta.get("params"))
        for key, earlier in fields.items():
            fields[key] = _str(params.get(key)).strip() or earlier
        g = meta.get("grade")
        if isinstance(g, Mapping) and isinstance(g.get("grade"), str):
            grade = g["grade"]
        cap = drive_capacity(meta)
        if cap is not None:
            verdict, fake = str(cap["verdict"]), bool(cap["fake"])
        erase = meta.get("erase")
        rec = _json(run_dir / RECORD_JSON) if os.path.lexists(run_dir / RECORD_JSON) else None
        if rec is not None:
            san = _map(rec.get("sanitization"))
            res = _map(rec.get("result"))
            method = _str(san.get("method")) or method
            result = _str(res.get("status")) or "record without a result"
            reason = "" if result == "PASS" else _str(res.get("reason"))
            record_id = _str(rec.get("record_id"))
            sig = rec.get("signature")
            signed = isinstance(sig, Mapping) and not sig.get("unsigned")
        elif isinstance(erase, Mapping) or meta.get("kind") == "erase":
            method = _str((erase or {}).get("method")) if isinstance(erase, Mapping) else ""
            result = f"no erase record (run {_str(meta.get('state')) or 'unknown'})"
            reason = _str(meta.get("error"))
            record_id = ""
            signed = None
    size = drive.get("size_bytes")
    return BatchRow(
        folder=", ".join(d.name for d in dirs), serial=_str(drive.get("serial")),
        model=_str(drive.get("model")),
        capacity_bytes=size if type(size) is int else None, grade=grade,
        capacity_verdict=verdict, fake=fake, erase_method=method,
        erase_result=result or "not erased", record_id=record_id, started=started,
        problem=("" if runs else "no readable run.json") if not unreadable else
        _str("unreadable run.json in " + ", ".join(unreadable)),
        device=_str(drive.get("name")), reason=reason, signed=signed, **fields)


def one_drive_each(drive_dirs: Iterable[Path], day: str | None = None,
                   rows: Mapping[Path, BatchRow] | None = None) -> list[list[Path]]:
    """The drive folders grouped by drive, in their order: a station day's sessions (a
    reboot at lunch, a grade in the morning and the erase after) give one drive a folder
    each, and the page lists it once. The same drive is the same serial and model in
    folders of different sessions (the folder name's stamp, up to its first ``_``); folders
    without a serial stay apart, and so do all folders of a serial that two folders of one
    session share (twins: two drives that report one serial are two drives). ``rows``:
    each folder's own row, when the caller has read them."""
    groups: dict[tuple[str, str], list[Path]] = {}
    order: list[tuple[str, str] | Path] = []
    for d in drive_dirs:
        row = rows[d] if rows is not None else drive_row(d, day)
        if not row.serial:
            order.append(d)
            continue
        key = (row.serial, row.model)
        if key not in groups:
            groups[key] = []
            order.append(key)
        groups[key].append(d)
    out: list[list[Path]] = []
    for item in order:
        if isinstance(item, Path):
            out.append([item])
            continue
        group = groups[item]
        stamps = [d.name.partition("_")[0] for d in group]
        out.extend([group] if len(set(stamps)) == len(stamps) else [[d] for d in group])
    return out


def short(text: str, limit: int = 120) -> str:
    """A reason on one line of a printed row (the record holds it whole)."""
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def drive_dirs_of_day(root: Path, day: str) -> list[Path]:
    """The drive folders of ``root`` with a run started on ``day`` (``YYYY-MM-DD``, UTC):
    a station day."""
    return list(scan_day(root, day).dirs)


@dataclass(frozen=True)
class DayScan:
    """A results folder read for one day: the drive folders with a run of it, the entries
    that are links (not followed), and each folder's run folders whose run.json could not be
    read (a drive folder among ``dirs`` says it in its row; another is left out: its day is
    unknown). Names raw: print them through :func:`~ssdbench.untrusted.shown`."""

    dirs: tuple[Path, ...]
    links: tuple[str, ...] = ()
    unreadable: tuple[tuple[str, tuple[str, ...]], ...] = ()
    problem: str = ""  # the folder itself could not be read


def scan_day(root: Path, day: str) -> DayScan:
    """The drive folders of ``root`` with a run started on ``day`` (:func:`drive_dirs_of_day`)
    and what was not read on the way."""
    try:
        entries = sorted(root.iterdir())
    except OSError as exc:
        return DayScan((), problem=f"{root}: cannot be read ({exc.strerror or exc})")
    dirs: list[Path] = []
    links: list[str] = []
    unread: list[tuple[str, tuple[str, ...]]] = []
    for d in entries:
        if d.name.startswith("."):  # a temporary or hidden folder: no drive's
            continue
        if d.is_symlink():
            links.append(d.name)
            continue
        if not d.is_dir():
            continue
        runs, unreadable = read_runs(d, day)
        if runs:
            dirs.append(d)
        if unreadable:
            unread.append((d.name, tuple(unreadable)))
    return DayScan(tuple(dirs), tuple(links), tuple(unread))


_CSS = """
@page { size: A4 landscape; margin: 10mm 10mm 12mm 10mm;
        @bottom-center { content: "page " counter(page) " of " counter(pages);
                         font-size: 7pt; color: #555; } }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 8.5pt;
       color: #111; margin: 0; }
h1 { font-size: 15pt; margin: 0 0 2px 0; }
.sub { color: #444; font-size: 8.5pt; margin-bottom: 6px; }
table { border-collapse: collapse; width: 100%; }
th, td { border: 1px solid #999; padding: 2px 4px; text-align: left; vertical-align: top; }
th { background: #e8e8e8; }
tr { break-inside: avoid; page-break-inside: avoid; }
thead { display: table-header-group; }
td.num { text-align: right; white-space: nowrap; }
.mono { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 7.5pt;
        word-break: break-all; }
.PASS { color: #0a6b1f; font-weight: bold; }
.FAIL, .fake { color: #a40000; font-weight: bold; }
.totals { margin-top: 6px; }
.why { font-size: 7.5pt; color: #444; font-weight: normal; }
.sign { display: flex; gap: 12mm; margin-top: 16px; }
.sign div { flex: 1; border-top: 1px solid #111; padding-top: 2px; font-size: 8pt;
            color: #333; height: 14mm; }
"""

COLUMNS = ("#", "Serial", "Model", "Asset tag", "Lot", "Capacity", "Grade",
           "Capacity check", "Erase method", "Erase result", "Record id")


def _cells(n: int, row: BatchRow, *, lot_column: bool = True) -> str:
    cap = (f"{decimal_size(row.capacity_bytes)}" if row.capacity_bytes is not None
           else "unknown")
    verdict = row.capacity_verdict or "not checked"
    fake_cls = ' class="fake"' if row.fake else ""
    res_attr = f' class="{row.erase_result}"' if row.erase_result in ("PASS", "FAIL") else ""
    # a drive without a serial (a loop device, a bridge that hides it): its device name
    serial = (f'<td class="mono">{_h(row.serial)}</td>' if row.serial else
              f"<td>{_h(row.device)} <i>(no serial)</i></td>" if row.device else "<td>—</td>")
    cells = [
        f'<td class="num">{n}</td>',
        serial,
        f"<td>{_h(row.model or '—')}"
        + (f"<br><i>{_h(row.problem)}</i>" if row.problem else "") + "</td>",
        f"<td>{_h(row.asset_tag or '—')}</td>",
        *([f"<td>{_h(row.lot or '—')}</td>"] if lot_column else []),
        f'<td class="num">{_h(cap)}</td>',
        f"<td>{_h(row.grade or '—')}</td>",
        f"<td{fake_cls}>{_h(f'FAKE ({verdict})' if row.fake else verdict)}</td>",
        f"<td>{_h(row.erase_method or '—')}</td>",
        f"<td{res_attr}>{_h(row.erase_result)}"
        + (f"<br><span class=\"why\">{_h(short(row.reason))}</span>" if row.reason else "")
        + "</td>",
        f'<td class="mono">{_h(row.record_id or "—")}'
        + ("<br><b class=\"FAIL\">UNSIGNED</b>" if row.signed is False else "") + "</td>",
    ]
    return "<tr>" + "".join(cells) + "</tr>"


def batch_html(rows: Iterable[BatchRow], *, title: str, made: str,
               host: Mapping[str, Any] | None = None, bench: str = "") -> str:
    """The batch page: ``title`` (the kiosk run or the station day), ``made`` (UTC time),
    ``host`` (run.json ``host`` of one of the drives: the machine the batch was made in)."""
    rows = list(rows)
    said = describe_host(host)
    machine = "; ".join(x for x in (said["machine"], said["serial"]) if x)
    passed = sum(r.erase_result == "PASS" for r in rows)
    failed = sum(r.erase_result == "FAIL" for r in rows)
    fakes = sum(r.fake for r in rows)
    total = sum(r.capacity_bytes or 0 for r in rows)
    lots = {r.lot for r in rows}
    lot = next(iter(lots)) if len(lots) == 1 else ""  # one lot: in the heading
    operators = sorted({r.operator for r in rows if r.operator})
    unsigned = sum(r.signed is False for r in rows)
    records = sum(r.signed is not None for r in rows)
    columns = [c for c in COLUMNS if c != "Lot" or not lot]
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">",
        f"<title>Batch — {_h(title)}</title><style>{_CSS}</style></head><body>",
        f"<h1>Batch of {len(rows)} drive{'s' if len(rows) != 1 else ''}"
        + (f" · lot {_h(lot)}" if lot else "") + "</h1>",
        f"<div class=\"sub\">{_h(title)} · made {_h(_utc(made))}"
        + (f" · bench {_h(bench)}" if bench else "")
        + (f" · operator {_h(', '.join(operators))}" if operators else "")
        + (f"<br>Tested in: {_h(machine)}" if machine else "") + "</div>",
        "<table><thead><tr>" + "".join(f"<th>{_h(c)}</th>" for c in columns)
        + "</tr></thead><tbody>",
        *(_cells(i, r, lot_column=not lot) for i, r in enumerate(rows, 1)),
        "</tbody></table>",
        f"<p class=\"totals\">{len(rows)} drives, {_h(decimal_size(total))} in all; erase "
        f"PASS {passed}, FAIL {failed}, other {len(rows) - passed - failed}; fake capacity "
        f"found on {fakes}. Each drive's erase record (erase-record.json) and certificate "
        "are in its folder"
        + (f"; {unsigned} of the {records} records are UNSIGNED (no lab key signed them: "
           "marked in the Record id column)" if unsigned else
           "; every record is signed" if records else "")
        + "; this page is a list of them, not a record.</p>",
        "<div class=\"sign\"><div>Handed on by (name, signature, date)</div>"
        "<div>Received by (name, signature, date)</div></div>",
        "</body></html>",
    ]
    return "\n".join(parts)


def _utc(made: str) -> str:
    """``made`` with its zone said once: ``…Z`` already is UTC (#45 G: "…Z (UTC)")."""
    return made if made.endswith("Z") or made.endswith("UTC") else f"{made} (UTC)"


def write_batch(root: Path, drive_dirs: Iterable[Path], *, title: str, made: str,
                stem: str, bench: str = "", pdf: bool = True, day: str | None = None,
                out: Path | None = None) -> tuple[Path, str | None]:
    """``root/<stem>.html`` and ``.pdf`` for ``drive_dirs`` (``out``: that HTML file
    instead, the PDF beside it; never written through a link); returns the HTML path and
    None, or why no PDF was made. ``day``: only the runs started on it."""
    dirs = list(drive_dirs)
    own = {d: drive_row(d, day) for d in dirs}  # each folder read once; a merged drive again
    rows = [own[group[0]] if len(group) == 1 else drive_row(group, day)
            for group in one_drive_each(dirs, day, own)]
    host = None
    for d in dirs:  # the machine: run.json host of the first drive that has one
        host = next((meta["host"] for _, meta in read_runs(d, day)[0]
                     if isinstance(meta.get("host"), Mapping)), None)
        if host is not None:
            break
    html = batch_html(rows, title=title, made=made, host=host, bench=bench)
    path = out if out is not None else root / f"{stem}.html"
    atomic.write_text(path, html, root=path.parent)
    return path, (write_pdf(html, path.with_suffix(".pdf")) if pdf
                  else "no PDF: switched off")
