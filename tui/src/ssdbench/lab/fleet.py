"""The fleet view (``ssdbench fleet SOURCE``, docs/lab.md "The fleet page"): one
self-contained HTML page and a CSV from a store's layout, ``<bench>/status.json`` and
``<bench>/<serial>/<run id>/[<run>/]{drive.json,run.json}``, read from a folder (a copy of
the bucket, e.g. ``aws s3 sync``) or from the store itself. Only status.json, drive.json and
run.json are read, and the erase records with their chain (``<bench>/_bench/record-chain.json``:
a record missing, twice or changed is named per bench); charts are inline SVG drawn here (no
matplotlib: quick on 10,000 runs).
"""

from __future__ import annotations

import csv
import html
import io
import json
import math
import os
import statistics
from array import array
from bisect import bisect_left
from collections.abc import Callable, Iterable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssdbench.devices.host import describe as describe_host
from ssdbench.grade.capacity import FAKE_VERDICTS
from ssdbench.lab.sentfile import FLEET_FILES
from ssdbench.lab.store import Store
from ssdbench.report.summary import authenticity_cells
from ssdbench.untrusted import csv_row, visible

WANTED = FLEET_FILES  # the files a build reads (lab/sentfile.py: the uploader's too)
SILENT_AFTER_S = 120.0
CSV_COLUMNS = ("bench", "model", "firmware", "serial", "run_id", "run", "state", "trim_verdict",
               "steady_iops", "steady_iops_stddev", "erase_method", "erase_verified",
               "started", "finished", "grade", "grade_reasons",
               "authenticity", "real_capacity_bytes",
               "lot", "asset_tag")  # schema 1.1.0: the operator's fields (#46)
Loader = Callable[[], bytes]


@dataclass
class Bench:
    name: str
    state: str = "unknown"  # running | done | failed | cancelled | silent | unknown
    status: dict[str, Any] = field(default_factory=dict)
    silent_s: float | None = None
    # its erase records' hash chain (record/chain.py): "" when it has none
    records: str = ""
    records_ok: bool = True
    records_unsigned: bool = False  # every problem is an unsigned record (no lab key)


@dataclass
class Fleet:
    benches: dict[str, Bench]
    # every run (a small fleet), or the newest ones (lab/fleetindex.py: `summary` has all)
    rows: list[dict[str, str]]
    generated: str
    # files left out, as "<key>: why": a bench's bad file never stops the page
    skipped: list[str] = field(default_factory=list)
    summary: Summary | None = None  # of every run; None: made from `rows`
    total_runs: int | None = None  # None: len(rows)


class Summary:
    """What the page shows of every run, fed one row at a time (a million rows never held):
    counts per bench, per model and per lot, and the steady IOPS of every finished run by
    (drive name, run name), for the charts and the baseline."""

    def __init__(self) -> None:
        self.benches: dict[str, list[int]] = {}  # runs, done, failed
        self.models: dict[str, list[int]] = {}  # runs, done, failed, fake capacity
        self.lots: dict[str, list[int]] = {}  # runs, done, failed, fake capacity
        self.iops: dict[tuple[str, str], array[float]] = {}
        self.lot_iops: dict[tuple[str, str], array[float]] = {}
        self.sorted: dict[tuple[str, str], list[float]] = {}
        # the search pages (lab/fleetindex.py): folder -> {page: runs}
        self.search: dict[str, dict[str, int]] = {}

    def add(self, r: Mapping[str, str]) -> None:
        state = r["state"]
        done, failed = state == "done", state in ("failed", "damaged")
        fake = r.get("authenticity") in FAKE_VERDICTS
        name = r["model"] or drive_name(r)
        lot = r.get("lot")
        for table, key in ((self.benches, r["bench"]), (self.models, name), (self.lots, lot)):
            if key:
                c = table.get(key)
                if c is None:
                    c = table[key] = [0, 0, 0, 0]
                c[0] += 1
                c[1] += done
                c[2] += failed
                c[3] += fake
        if done and r["steady_iops"]:
            value = _num(_float(r["steady_iops"]))
            if value is not None and value > 0:
                run = r["run"]
                values = self.iops.get((name, run))
                if values is None:
                    values = self.iops[(name, run)] = array("d")
                values.append(value)
                if lot:
                    self.lot_iops.setdefault((lot, run), array("d")).append(value)

    def values(self, name: str, run: str) -> list[float]:
        """The steady IOPS of ``name``'s finished ``run`` runs, sorted."""
        key = (name, run)
        if key not in self.sorted:
            self.sorted[key] = sorted(self.iops.get(key, ()))
        return self.sorted[key]


def folder_entries(root: Path) -> dict[str, Loader]:
    """The wanted files under a folder, keyed by their path relative to it. The folder is
    a copy of a store (anyone's): a file is read as :func:`ssdbench.jsonfile.read_bytes`
    reads it (a regular file, never through a link, at most FILE_LIMIT bytes: a FIFO, a
    link or a huge file is a file the page skips, with why); a folder that is a link is
    not entered."""
    out: dict[str, Loader] = {}
    for dirpath, _dirs, files in os.walk(root):  # links to folders are not followed
        for name in files:
            if name in WANTED:
                path = Path(dirpath) / name
                out[path.relative_to(root).as_posix()] = _file(path)
    return out


FILE_LIMIT = 16 << 20  # bytes: jsonfile.JSON_LIMIT, for status.json, run.json, a record


def _file(path: Path) -> Loader:
    from ssdbench import jsonfile

    return lambda: jsonfile.read_bytes(path, limit=FILE_LIMIT, follow=False)


def store_entries(store: Store, prefix: str, workers: int = 8) -> dict[str, Loader]:
    """The wanted objects under ``prefix`` of a store, fetched in parallel up front (one
    that cannot be fetched is a file the page skips, with the store's reason)."""
    base = prefix.strip("/") + "/" if prefix.strip("/") else ""
    keys = [k for k in store.keys(base) if k.rpartition("/")[2] in WANTED]

    def fetch(key: str) -> Loader:
        try:
            return _const(store.get(key))
        except Exception as exc:  # StoreError, or a client library's own
            return _failing(f"the store: {exc}")

    with ThreadPoolExecutor(workers) as pool:
        loaders = list(pool.map(fetch, keys))
    return {k[len(base):]: load for k, load in zip(keys, loaders, strict=True)}


def _const(blob: bytes) -> Loader:
    return lambda: blob


def _failing(why: str) -> Loader:
    def load() -> bytes:
        raise OSError(why)
    return load


def _no_constant(name: str) -> float:
    raise ValueError(f"{name} is not a JSON number")


def _json(load: Loader) -> tuple[dict[str, Any], str | None]:
    """(the file's JSON object, None), or ({}, why it cannot be used): unreadable, not
    UTF-8 JSON, NaN or Infinity in it, nested too deeply, not an object."""
    try:
        doc = json.loads(load(), parse_constant=_no_constant)
    except OSError as exc:
        return {}, f"cannot be read: {exc}"
    except (ValueError, UnicodeDecodeError) as exc:
        return {}, f"not JSON: {exc}"
    except RecursionError:
        return {}, "nested too deeply"
    if not isinstance(doc, dict):
        return {}, f"a JSON {type(doc).__name__}, not an object"
    return doc, None


def _obj(value: object) -> dict[str, Any]:
    """``value`` when it is a JSON object, else an empty one (a field of the wrong type)."""
    return value if isinstance(value, dict) else {}


def _parse_time(text: object) -> datetime | None:
    if not isinstance(text, str):
        return None
    try:
        return datetime.strptime(text, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=UTC)
    except ValueError:
        return None


def _num(value: object) -> float | None:
    """A finite number, else None (a string, a bool, NaN or infinity from a bad file)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return None
    try:
        number = float(value)
    except OverflowError:  # an int too large for a float
        return None
    return number if math.isfinite(number) else None


def _fmt(value: float | None, digits: int = 0) -> str:
    return "" if value is None else f"{value:.{digits}f}"


def build(entries: dict[str, Loader], *, now: datetime | None = None,
          silent_after_s: float = SILENT_AFTER_S) -> Fleet:
    now = now or datetime.now(UTC)
    benches: dict[str, Bench] = {}
    drives: dict[str, dict[str, Any]] = {}  # the folder of a drive.json -> its identity
    run_keys: list[str] = []
    skipped: list[str] = []
    records: dict[str, list[str]] = {}  # bench -> its erase-record.json keys
    chain_state: dict[str, str] = {}  # bench -> its _bench/record-chain.json key
    for key in sorted(entries):
        parts = key.split("/")
        name = parts[-1]
        if name == "erase-record.json" and len(parts) >= 5:  # <bench>/<serial>/<id>/<run>/
            records.setdefault(parts[-5], []).append(key)
        elif name == "record-chain.json" and len(parts) >= 3 and parts[-2] == "_bench":
            chain_state[parts[-3]] = key
        if name == "status.json" and len(parts) >= 2:
            bench = benches.setdefault(parts[-2], Bench(parts[-2]))
            bench.status, why = _json(entries[key])
            if why:
                skipped.append(f"{key}: {why}")
        elif name == "drive.json":
            doc, why = _json(entries[key])
            if why:
                skipped.append(f"{key}: {why}")
                continue
            drive = _obj(doc.get("drive", doc))
            drives["/".join(parts[:-1])] = {k: drive.get(k) for k in
                                            ("model", "firmware", "serial")}
        elif name == "run.json" and len(parts) >= 4:
            run_keys.append(key)
    for bench in benches.values():
        st = bench.status
        bench.state = str(st.get("state") or "unknown")
        at = _parse_time(st.get("time"))
        if at is not None:
            bench.silent_s = (now - at).total_seconds()
            if bench.state == "running" and bench.silent_s > silent_after_s:
                bench.state = "silent"
    rows = []
    for key in run_keys:  # one run.json at a time: 10,000 of them must fit in memory
        doc, why = _json(entries[key])
        if why:  # its row stays, "damaged": the run happened
            skipped.append(f"{key}: {why}")
        rows.append(_row(key, doc, drives))
        benches.setdefault(rows[-1]["bench"], Bench(rows[-1]["bench"]))
    rows.sort(key=lambda r: (r["started"], r["bench"], r["serial"], r["run"]), reverse=True)
    for name, keys in records.items():
        _check_records(benches.setdefault(name, Bench(name)), name, keys,
                       chain_state.get(name), entries)
    return Fleet(benches, rows, now.strftime("%Y-%m-%dT%H:%M:%SZ"), skipped)


def _check_records(bench: Bench, name: str, keys: list[str], state_key: str | None,
                   entries: dict[str, Loader]) -> None:
    """The bench's erase records checked as a chain (intact, none missing, twice or out of
    order); who signed them is for ``verify-record --chain`` with the lab's key."""
    from ssdbench.record.chain import check_chain_blobs

    def read(key: str) -> bytes | str:
        try:
            return entries[key]()
        except OSError as exc:
            return f"cannot be read: {exc}"

    prefix = name + "/"
    report = check_chain_blobs(
        [(k[k.find(prefix) + len(prefix):] if prefix in k else k, read(k)) for k in keys],
        read(state_key) if state_key else None)
    bench.records_ok = report.ok
    bench.records_unsigned = report.unsigned_only
    bench.records = "; ".join(report.lines) if not report.ok else (
        f"{len(keys)} record{'s' if len(keys) != 1 else ''}, chain intact")


def _row(key: str, doc: dict[str, Any], drives: dict[str, dict[str, Any]]) -> dict[str, str]:
    """The CSV row of one run.json at ``<bench>/<serial>/<run id>/[<run>/]run.json``."""
    parts = key.split("/")
    run_dir = parts[:-1]
    session = run_dir[:-1] if len(run_dir) >= 4 else run_dir
    bench_name, serial, run_id = session[-3], session[-2], session[-1]
    ident = {**drives.get("/".join(session), {}), **_obj(doc.get("drive"))}
    analysis = _obj(doc.get("analysis"))
    steady = _obj(_obj(analysis.get("iops")).get("steady"))
    trim = _obj(analysis.get("trim"))
    erase = _obj(doc.get("erase"))
    grade = _obj(doc.get("grade"))
    raw = grade.get("reasons")
    reasons: list[Any] = raw if isinstance(raw, list) else []
    return {
        "bench": bench_name, "model": str(ident.get("model") or ""),
        "firmware": str(ident.get("firmware") or ""),
        "serial": str(ident.get("serial") or serial), "run_id": run_id,
        "run": str(doc.get("run") or run_dir[-1]),
        "state": str(doc.get("state") or ("damaged" if not doc else "unknown")),
        "trim_verdict": str(trim.get("verdict") or ""),
        "steady_iops": _fmt(_num(steady.get("mean"))),
        "steady_iops_stddev": _fmt(_num(steady.get("stddev"))),
        "erase_method": str(erase.get("method") or ""),
        "erase_verified": "" if not erase else str(bool(erase.get("verified"))).lower(),
        "started": str(doc.get("started") or ""), "finished": str(doc.get("finished") or ""),
        "grade": str(grade.get("grade") or "") if isinstance(grade.get("grade"), str) else "",
        "grade_reasons": "; ".join(str(_obj(r).get("text") or "") for r in reasons),
        **authenticity_cells(doc),  # the intake plan's fake-capacity check
        **{name: _operator_field(doc, name) for name in ("lot", "asset_tag")},
        # the page only (not in fleet.csv): the machine and the controller (devices/host.py)
        **{f"host_{k}": v for k, v in describe_host(_obj(doc.get("host")) or None).items()
           if k in ("machine", "controller")},
    }


def _operator_field(doc: dict[str, Any], name: str) -> str:
    """The run's lot or asset tag: run.json ``params`` (what ``ssdbench run``, the TUI, the
    kiosk and the station write), else a top-level or ``operator`` member; "" when none is
    text."""
    for where in (_obj(doc.get("params")), doc, _obj(doc.get("operator"))):
        value = where.get(name)
        if isinstance(value, str) and value:
            return value
    return ""


def fleet_csv(fleet: Fleet) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n",
                            extrasaction="ignore")  # the page's host_* cells
    writer.writeheader()
    writer.writerows(csv_row(r) for r in fleet.rows)
    return buf.getvalue()


# ---- the page ----

CSS = """body{font:14px/1.4 system-ui,sans-serif;margin:1.5em;color:#222}
h1{font-size:1.5em}h2{font-size:1.2em;margin-top:1.6em}
table{border-collapse:collapse;margin:.5em 0;max-width:100%}th,td{padding:.2em .6em;
border-bottom:1px solid #ddd;text-align:left;vertical-align:top;overflow-wrap:break-word}
td.n{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}
th{background:#f3f3f3;overflow-wrap:normal}.state{white-space:nowrap}
svg{max-width:100%;height:auto}div.long{max-width:28em;overflow-wrap:anywhere}
.state{font-weight:600;padding:.05em .5em;border-radius:.6em}.running{background:#d6eaff}
.done{background:#d8f5d8}.failed,.damaged{background:#ffd6d6}.silent{background:#ffe9b3}
.cancelled,.interrupted,.unknown{background:#eee}.small{color:#666;font-size:.9em}
svg text{font:12px system-ui,sans-serif}"""


def _store_state(store: object) -> str:
    """The store column (HTML): the error the bench reports now, else how many outages it
    had, healed, the last one's reason in the tooltip (it names a key: too wide a cell)."""
    if not isinstance(store, dict):
        return ""
    if store.get("last_error"):
        return _long(store["last_error"])
    n = store.get("outages")
    if isinstance(n, int) and n > 0:
        return (f"<span title='{_e(store.get('last_failure') or '')}'>{n} outage"
                f"{'s' if n > 1 else ''}, healed (last {_e(store.get('last_failure_at') or '?')})"
                "</span>")
    return ""


def _e(text: object) -> str:
    """Text for the page (HTML text, a quoted attribute, SVG text): control and invisible
    characters as ``?`` as on every screen and CSV (``untrusted.visible``), then escaped."""
    return html.escape(visible(text), quote=True)


def _long(text: object) -> str:
    """Free text a bench reports (an error, a URL): at most 28em wide, broken anywhere, so
    one long token cannot widen the page past its window."""
    return f'<div class="long">{_e(text)}</div>' if text else ""


def _state(state: str) -> str:
    return f'<span class="state {_e(state)}">{_e(state)}</span>'


def _ago(seconds: float | None) -> str:
    if seconds is None:
        return ""
    s = max(0, int(seconds))
    return f"{s} s ago" if s < 120 else f"{s // 60} min ago" if s < 7200 else f"{s // 3600} h ago"


def _table(head: Iterable[str], rows: Iterable[Iterable[str]], numeric: set[int]) -> str:
    out = ["<table><tr>", *(f"<th>{_e(h)}</th>" for h in head), "</tr>"]
    for row in rows:
        out.append("<tr>")
        out.extend(f'<td class="n">{c}</td>' if i in numeric else f"<td>{c}</td>"
                   for i, c in enumerate(row))
        out.append("</tr>")
    out.append("</table>")
    return "".join(out)


def drive_name(r: Mapping[str, str]) -> str:
    """What a row's drive is called: its model, or, for a drive that reports none (a USB
    bridge, a counterfeit), what is known of it."""
    if r.get("model"):
        return r["model"]
    known = [f"serial {r['serial']}" if r.get("serial") else "",
             f"firmware {r['firmware']}" if r.get("firmware") else "",
             f"bench {r['bench']}" if r.get("bench") else ""]
    return "no model string: " + (", ".join(k for k in known if k) or "nothing reported")


def model_chart(rows: list[dict[str, str]], run: str, limit: int = 25) -> str:
    """Inline SVG: per model, the steady IOPS of every run named ``run`` — a bar to the
    median, a line from min to max, n runs — on a log scale of whole decades, so that a
    100-IOPS drive and a 35,000-IOPS one are both visible."""
    summary = Summary()
    for r in rows:
        summary.add(r)
    return summary_chart(summary, run, limit)


def summary_chart(summary: Summary, run: str, limit: int = 25) -> str:
    """:func:`model_chart` of every run a :class:`Summary` was fed."""
    by_model = {name: summary.values(name, r) for name, r in summary.iops if r == run}
    if not by_model:
        return ""
    models = sorted(by_model, key=lambda m: (-len(by_model[m]), m))[:limit]
    # a decade below the slowest: its bar is a bar, not a sliver at the axis
    lo = math.floor(math.log10(min(min(by_model[m]) for m in models))) - 1
    hi = max(lo + 1, math.ceil(math.log10(max(max(by_model[m]) for m in models))))
    label_w, bar_w, row_h = 300, 520, 22
    h = 46 + row_h * len(models)
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{label_w + bar_w + 140}" '
           f'height="{h}" role="img" aria-label="steady IOPS by model, {_e(run)}">']

    def x(v: float) -> float:
        return label_w + (math.log10(v) - lo) / (hi - lo) * bar_w

    for i, m in enumerate(models):
        vals = by_model[m]
        y = 20 + i * row_h
        med, low, high = statistics.median(vals), vals[0], vals[-1]
        out.append(f'<text x="{label_w - 8}" y="{y + 14}" text-anchor="end">{_e(m[:44])}</text>'
                   f'<rect x="{label_w}" y="{y + 3}" width="{x(med) - label_w:.1f}" '
                   f'height="{row_h - 8}" fill="#4a90d9"/>'
                   f'<line x1="{x(low):.1f}" x2="{x(high):.1f}" y1="{y + 10}" y2="{y + 10}" '
                   f'stroke="#222" stroke-width="1.5"/>'
                   f'<text x="{label_w + bar_w + 8}" y="{y + 14}">{med:,.0f} (n={len(vals)})'
                   "</text>")
    axis_y = 22 + row_h * len(models)
    for d in range(lo, hi + 1):
        out.append(f'<line x1="{x(10.0 ** d):.1f}" x2="{x(10.0 ** d):.1f}" y1="18" '
                   f'y2="{axis_y}" stroke="#ccc"/><text x="{x(10.0 ** d):.1f}" '
                   f'y="{axis_y + 14}" text-anchor="middle" fill="#666">{10 ** d:,}</text>')
    out.append(f'<text x="{label_w}" y="12" fill="#666">steady IOPS (log scale), median '
               "(bar), min–max (line)</text></svg>")
    return "".join(out)


def _float(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def _iops_text(mean: str, stddev: str) -> str:
    """Steady IOPS as the page prints them: thousands separated, the same way every row."""
    m, sd = _num(_float(mean)), _num(_float(stddev))
    if m is None:
        return ""
    return f"{m:,.0f}" + ("" if sd is None else f" ± {sd:,.0f}")


def fleet_html(fleet: Fleet) -> str:
    summary = fleet.summary
    if summary is None:
        summary = Summary()
        for r in fleet.rows:
            summary.add(r)
    total = len(fleet.rows) if fleet.total_runs is None else fleet.total_runs
    benches = sorted(fleet.benches.values(), key=lambda b: b.name)
    counts: dict[str, int] = {}
    for b in benches:
        counts[b.state] = counts.get(b.state, 0) + 1
    # the page loads nothing (its style and charts are inline): CSP for the browser
    parts = [f"<!doctype html><html><head><meta charset='utf-8'><meta http-equiv="
             "'Content-Security-Policy' content=\"default-src 'none'; style-src "
             "'unsafe-inline'\"><title>ssdbench fleet"
             f"</title><style>{CSS}</style></head><body><h1>ssdbench fleet</h1>"
             f"<p class='small'>Built {_e(fleet.generated)}: {len(benches)} benches ("
             + ", ".join(f"{n} {_e(s)}" for s, n in sorted(counts.items()))
             + f"), {total:,} runs. A running bench that sent no status for "
             f"{SILENT_AFTER_S:.0f} s is <b>silent</b>.</p>", "<h2>Benches</h2>"]
    parts.append(_table(
        ("bench", "machine", "state", "plan", "last event", "errors", "status sent", "store",
         "erase records"),
        ((_e(b.name), _long(describe_host(_obj(b.status.get("host")) or None)["machine"]),
          _state(b.state), _e(b.status.get("plan", "")),
          _long(b.status.get("last_event", "")),
          _long("; ".join(_strings(b.status.get("errors")))),
          _ago(b.silent_s), _store_state(b.status.get("store")), _records(b))
         for b in benches), set()))
    live = [(b, d) for b in benches for d in _list(b.status.get("drives"))
            if isinstance(d, dict)]
    if live:
        parts.append("<h2>Drives on the benches</h2>")
        parts.append(_table(
            ("bench", "drive", "serial", "run", "stage", "state", "%", "IOPS", "ETA"),
            ((_e(b.name), _e(d.get("drive", "")), _e(d.get("serial", "")), _e(d.get("run", "")),
              _e(d.get("stage", "")),
              _state("silent" if b.state == "silent" and d.get("state") == "running"
                     else str(d.get("state", ""))),
              _fmt(_num(d.get("percent")), 1), _fmt(_num(d.get("iops"))),
              _eta(_num(d.get("eta_s"))))
             for b, d in live), {6, 7, 8}))
    runs = sorted({run for _, run in summary.iops})
    charts = [(run, summary_chart(summary, run)) for run in runs]
    if any(svg for _, svg in charts):
        parts.append("<h2>Models compared</h2>")
        parts.extend(f"<h3>{_e(run)}</h3>{svg}" for run, svg in charts if svg)
    parts.extend(_summary_tables(summary, runs))
    if len(fleet.rows) < total:
        parts.append(f"<h2>The newest {len(fleet.rows):,} runs</h2><p class='small'>Every "
                     f"run ({total:,}) is in fleet.csv (grouped by bench, newest first), and "
                     "on the search pages above, by serial"
                     + (", asset tag and lot" if len(summary.search) > 1 else "") + ".</p>")
    else:
        parts.append("<h2>Every drive tested</h2><p class='small'>The same runs as "
                     "fleet.csv, newest first.</p>")
    baseline = off_baseline(fleet.rows, summary)
    if baseline:
        parts.append(f"<p class='small'>{len(baseline)} run(s) far from their model's other "
                     f"runs (steady IOPS {BASELINE_FAR:.0%} or more from their median, at "
                     f"least {BASELINE_MIN_OTHERS} others): marked below.</p>")
    parts.append(_table(
        ("when", "bench", "host", "model", "firmware", "serial", "run", "state", "TRIM",
         "steady IOPS", "erase", "grade", "capacity check"),
        ((_e(r["started"]), _e(r["bench"]),
          f"<span title='{_e(r.get('host_controller', ''))}'>"
          f"{_long(r.get('host_machine', ''))}</span>",
          _e(r["model"]) or "<span class='small'>none reported</span>", _e(r["firmware"]),
          _e(r["serial"]), _e(r["run"]), _state(r["state"]), _e(r["trim_verdict"]),
          _e(_iops_text(r["steady_iops"], r["steady_iops_stddev"]))
          + (f"<br><b class='small'>{_e(off)}</b>" if (off := baseline.get(id(r))) else ""),
          _e(r["erase_method"] + (" (verified)" if r["erase_verified"] == "true" else "")),
          f"<span title='{_e(r['grade_reasons'])}'>{_e(r['grade'])}</span>"
          if r["grade"] else "", _capacity(r))
         for r in fleet.rows), {9}))
    if fleet.skipped:
        parts.append("<h2>Files left out</h2><p class='small'>A bench's file that could not "
                     "be used: the page is built without it (a run.json's row stays, "
                     "damaged).</p><ul>")
        parts.extend(f"<li>{_e(line)}</li>" for line in fleet.skipped[:500])
        if len(fleet.skipped) > 500:
            parts.append(f"<li>and {len(fleet.skipped) - 500} more</li>")
        parts.append("</ul>")
    parts.append("</body></html>\n")
    return "".join(parts)


SUMMARY_LIMIT = 200  # models or lots in their table, most runs first


def _summary_tables(summary: Summary, runs: list[str]) -> list[str]:
    """The search pages' links, then runs by bench, by model (with the median steady IOPS
    of each run name) and by lot, when any run names one."""
    parts = []
    if summary.search:
        names = {"serials": "serial", "asset-tags": "asset tag", "lots": "lot"}
        parts.append("<h2>Find a run</h2><p>Every run, on pages by the first characters of "
                     "its " + ", ".join(
                         f"<a href='fleet-{_e(folder)}/index.html'>{_e(names.get(folder, folder))}"
                         f"</a> ({len(pages):,} pages)"
                         for folder, pages in sorted(summary.search.items())) + ".</p>")
    parts.append("<h2>Runs by bench</h2>")
    parts.append(_table(("bench", "runs", "done", "failed or damaged"),
                        ((_e(name), f"{c[0]:,}", f"{c[1]:,}", f"{c[2]:,}")
                         for name, c in sorted(summary.benches.items())), {1, 2, 3}))

    def medians(name: str, table: dict[tuple[str, str], array[float]]) -> list[str]:
        cells = []
        for run in runs:
            vals = table.get((name, run))
            cells.append(f"{statistics.median(vals):,.0f} (n={len(vals):,})" if vals else "")
        return cells

    for title, counts, iops in (("model", summary.models, summary.iops),
                                ("lot", summary.lots, summary.lot_iops)):
        if not counts:
            continue
        top = sorted(counts, key=lambda k: (-counts[k][0], k))[:SUMMARY_LIMIT]
        more = len(counts) - len(top)
        parts.append(f"<h2>Runs by {title}</h2><p class='small'>Steady IOPS: the median of "
                     "the finished runs of each name, and how many."
                     + (f" The {len(top)} {title}s with most runs ({more:,} more in "
                        "fleet.csv)." if more else "") + "</p>")
        parts.append(_table(
            (title, "runs", "done", "failed or damaged", "fake capacity",
             *(f"{run} steady IOPS" for run in runs)),
            ((_e(k), f"{counts[k][0]:,}", f"{counts[k][1]:,}", f"{counts[k][2]:,}",
              f"{counts[k][3]:,}", *medians(k, iops)) for k in top),
            set(range(1, 5 + len(runs)))))
    return parts


BASELINE_FAR = 0.30  # steady IOPS this far from the model's median is named
BASELINE_MIN_OTHERS = 3  # runs of the same model and run name it is compared with


def off_baseline(rows: list[dict[str, str]], summary: Summary | None = None
                 ) -> dict[int, str]:
    """Runs far from their model's fleet baseline: (id of the row) -> what to say. The
    baseline is the median steady IOPS of the model's OTHER finished runs of the same name
    (a drive does not pull its own baseline), with at least BASELINE_MIN_OTHERS of them;
    the runs are ``summary``'s (every run of the fleet), else ``rows``."""
    if summary is None:
        summary = Summary()
        for r in rows:
            summary.add(r)
    out: dict[int, str] = {}
    for r in rows:
        value = _num(_float(r["steady_iops"]))
        if not (r["model"] and r["state"] == "done" and value is not None and value > 0):
            continue
        vals = summary.values(r["model"], r["run"])
        median, n = _median_without(vals, value)
        if n < BASELINE_MIN_OTHERS:
            continue
        ratio = value / median - 1
        if abs(ratio) >= BASELINE_FAR:
            out[id(r)] = (f"{abs(ratio):.0%} {'below' if ratio < 0 else 'above'} its model "
                          f"(median {median:,.0f} of {n} others)")
    return out


def _median_without(vals: list[float], value: float) -> tuple[float, int]:
    """The median of the sorted ``vals`` with one ``value`` taken out, and how many are
    left (``vals`` whole when ``value`` is not in it)."""
    i = bisect_left(vals, value)
    skip = i if i < len(vals) and vals[i] == value else len(vals)
    n = len(vals) - (skip < len(vals))
    if n == 0:
        return 0.0, 0

    def at(k: int) -> float:
        return vals[k if k < skip else k + 1]

    mid = n // 2
    return (at(mid) if n % 2 else (at(mid - 1) + at(mid)) / 2), n


def _capacity(row: dict[str, str]) -> str:
    """The fake-capacity check's cell: genuine, or the fake's verdict and what it holds."""
    verdict = row.get("authenticity") or ""
    if not verdict or verdict == "genuine":
        return _e(verdict)
    real = row.get("real_capacity_bytes") or ""
    holds = f", holds {int(real) / 1e6:,.1f} MB" if real.isdigit() else ""
    word = "FAKE: " if verdict in FAKE_VERDICTS else ""
    return f"<b>{_e(word + verdict + holds)}</b>"


def _records(bench: Bench) -> str:
    """The erase records' cell: the chain intact, or what is wrong with it (red)."""
    if not bench.records:
        return ""
    if bench.records_ok:
        return _e(bench.records)
    # a bench with no lab key signs nothing: its records cannot be checked, which is not
    # the same as a chain found broken
    label = '<span class="state silent">unsigned</span>' if bench.records_unsigned else \
        '<span class="state failed">chain broken</span>'
    return f'<div class="long">{label} {_e(bench.records[:2000])}</div>'


def _strings(value: object) -> list[str]:
    """A list of strings from a field that should be one (anything else: shown as text)."""
    if isinstance(value, list):
        return [str(v) for v in value]
    return [] if value in (None, "") else [str(value)]


def _list(value: object) -> list[Any]:
    return value if isinstance(value, list) else []


def _eta(seconds: float | None) -> str:
    if seconds is None or seconds < 0:
        return ""
    return f"{int(seconds) // 60}:{int(seconds) % 60:02d}"
