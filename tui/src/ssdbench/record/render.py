"""The erase record as a printable certificate (self-contained HTML, and a PDF made from
that HTML with WeasyPrint) and as rows of the session's CSV.

The certificate fetches nothing (docs/erase.md, the paragraph of that name): every drive
string is HTML text through :func:`_h` (control and invisible characters as ``?``, the rule
of every screen and CSV, then HTML-escaped), none reaches the ``<style>`` (the page footer
takes the record id and the serial from the page with ``string-set``), a
Content-Security-Policy tells a browser to load nothing, and WeasyPrint gets a URL fetcher
that refuses every URL."""

from __future__ import annotations

import csv
import html as html_
import io
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from ssdbench.devices.host import describe as describe_host
from ssdbench.results import atomic
from ssdbench.units import decimal_size
from ssdbench.untrusted import csv_row as neutral
from ssdbench.untrusted import shown, visible

CSV_COLUMNS = (
    "record_id", "result", "reason", "category", "technique", "manufacturer", "model",
    "serial", "firmware", "interface", "media_type", "capacity_bytes", "native_max_bytes",
    "verification", "sampled_blocks", "started", "finished", "duration_s", "operator",
    "organisation", "customer", "asset_tag", "warnings", "signed_by", "grade",
)

_CSS = """
@page { size: A4; margin: 11mm 13mm 13mm 13mm; }
* { box-sizing: border-box; }
body { font-family: "DejaVu Sans", "Liberation Sans", Arial, sans-serif; font-size: 10pt;
       color: #111; margin: 0 auto; max-width: 190mm; line-height: 1.35; }
header { display: flex; justify-content: space-between; align-items: flex-start; gap: 4mm;
         border-bottom: 2px solid #111; padding-bottom: 6px; margin-bottom: 10px; }
h1 { font-size: 17pt; margin: 0 0 2px 0; }
.sub { color: #444; font-size: 9pt; }
.badge { font-size: 20pt; font-weight: bold; padding: 4px 16px; border: 3px solid;
         border-radius: 4px; white-space: nowrap; }
.PASS { color: #0a6b1f; border-color: #0a6b1f; }
.FAIL { color: #a40000; border-color: #a40000; }
.reason { font-size: 10.5pt; margin: 0 0 8px 0; padding: 6px 8px; background: #f3f3f3;
          border-left: 4px solid #777; }
h2 { font-size: 11pt; margin: 12px 0 4px 0; border-bottom: 1px solid #999;
     text-transform: uppercase; letter-spacing: 0.04em; }
table { border-collapse: collapse; width: 100%; }
td, th { padding: 2px 6px; vertical-align: top; text-align: left; }
table.kv td:first-child { width: 34%; color: #333; }
table.kv tr:nth-child(odd) td { background: #fafafa; }
table.pairs { table-layout: fixed; }
table.pairs td { overflow-wrap: anywhere; }
table.pairs td:nth-child(odd) { width: 17%; color: #333; }
table.pairs td:nth-child(even) { width: 33%; }
table.pairs tr:nth-child(odd) td { background: #fafafa; }
table.grid th, table.grid td { border: 1px solid #bbb; }
.warn { border: 2px solid #b36b00; background: #fff6e5; padding: 4px 8px; margin: 6px 0; }
.warn ul { margin: 2px 0; padding-left: 16px; }
.warn li { margin: 1px 0; }
.unsigned { border: 2px solid #a40000; color: #a40000; padding: 4px 8px; font-weight: bold; }
.mono { font-family: "DejaVu Sans Mono", "Liberation Mono", monospace; font-size: 8.5pt;
        word-break: break-all; }
.sign { display: flex; gap: 12mm; margin-top: 14px; }
.sign div { flex: 1; border-top: 1px solid #111; padding-top: 2px; font-size: 8.5pt;
            color: #333; height: 18mm; }
footer { margin-top: 10px; font-size: 8pt; color: #555; border-top: 1px solid #999;
         padding-top: 4px; }
.keep { break-inside: avoid; page-break-inside: avoid; }
.record-id { string-set: record content(); }
.serial { string-set: serial content(); }
@page { @bottom-center { content: "record " string(record) " · serial " string(serial)
        " · page " counter(page) " of " counter(pages); font-size: 7pt; color: #555; } }
p.small { font-size: 7pt; margin: 0; line-height: 1.1; }
@media print {
  body { max-width: none; font-size: 8pt; line-height: 1.2; }
  h1 { font-size: 15pt; }
  .badge { font-size: 16pt; }
  h2 { margin: 5px 0 2px 0; font-size: 9pt; }
  td, th { padding: 0.5px 5px; }
  table.kv td:first-child { width: 26%; }
  .mono { font-size: 7.5pt; }
  .sign { margin-top: 8px; }
  .sign div { height: 10mm; }
  footer { margin-top: 4px; }
}
"""
# a browser that opens the HTML certificate loads nothing: no image, font, style sheet or
# frame from anywhere (the page's own <style> only)
CSP = "default-src 'none'; style-src 'unsafe-inline'"


def _h(value: object) -> str:
    """A string for HTML text or a quoted attribute: control and invisible characters as
    ``?`` (:func:`ssdbench.untrusted.visible`), then ``& < > " '`` escaped."""
    return html_.escape(visible(value), quote=True)


def _size(n: Any) -> str:
    if not isinstance(n, int):
        return "unknown"
    return f"{n:,} bytes ({decimal_size(n)})"


def _text(value: Any) -> str:
    if value is None or value == "":
        return "—"
    if isinstance(value, bool):
        return "yes" if value else "no"
    return str(value)


def _rows(pairs: Iterable[tuple[str, Any]], mono: tuple[str, ...] = ()) -> str:
    out = []
    for key, value in pairs:
        # the serial's cell also gives the page footer its text (string-set: serial)
        cls = (' class="mono"' if key in mono
               else ' class="serial"' if key == "Serial number" else "")
        out.append(f"<tr><td>{_h(key)}</td><td{cls}>{_h(_text(value))}</td></tr>")
    return '<table class="kv">' + "".join(out) + "</table>"


def _reformat_text(refmt: dict[str, Any]) -> str:
    """``sanitization.scsi_reformat`` in words: "520 -> 512 bytes a block (32263 -> 32768
    blocks), sg_format ..." (a record is untrusted input: anything not a mapping is "?")."""
    def side(key: str) -> dict[str, Any]:
        value = refmt.get(key)
        return value if isinstance(value, dict) else {}

    before, after = side("before"), side("after")
    return (f"{before.get('block_size', '?')} -> {after.get('block_size', '?')} bytes a block "
            f"({before.get('blocks', '?')} -> {after.get('blocks', '?')} blocks), "
            f"{refmt.get('result', '?')}"
            + (f": {refmt['command']}" if refmt.get("command") else ""))


def _pairs(pairs: list[tuple[str, Any]]) -> str:
    """Label-value pairs two to a line (the organisation's block: the operator's fields, the
    lab's own fields after them, and the page stays one A4 page); a long value wraps."""
    cells = [f"<td>{_h(key)}</td><td>{_h(_text(value))}</td>" for key, value in pairs]
    lines = ["".join(cells[i:i + 2]) + ("<td></td><td></td>" if i + 1 == len(cells) else "")
             for i in range(0, len(cells), 2)]
    return '<table class="pairs">' + "".join(f"<tr>{line}</tr>" for line in lines) + "</table>"


def lab_rows(people: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """The lot, the lab's job that chose the plan and the lab's own fields of a record's
    ``people`` (schema 1.1.0; none of them in an older record): label and value, the label
    of a lab field its name. A record is read back as untrusted: a field that is not text
    is shown as the text it is, through the display rule like every other cell."""
    rows: list[tuple[str, Any]] = []
    if "lot" in people:
        rows.append(("Lot", people.get("lot")))
    if people.get("job"):
        rows.append(("Lab job (chose the plan)", people.get("job")))
    fields = people.get("fields")
    if isinstance(fields, Mapping):
        rows += [(shown(name, 64), value) for name, value in fields.items()]
    return rows


def _grade_heading(record: Mapping[str, Any]) -> str:
    """The health heading, with the drive's grade when the record has one (its reasons in a
    line below when there are any: a printout says why)."""
    g = record.get("grade")
    if not isinstance(g, Mapping) or not g.get("grade"):
        return "<h2>Drive health</h2>"
    reasons = [str(r) for r in g.get("reasons") or []]
    # one line on the page (it stays one A4 page): the capacity check and the first reason;
    # every reason is in erase-record.json
    said = []
    auth = record.get("authenticity")
    if isinstance(auth, Mapping) and auth.get("summary"):
        said.append(f"Capacity check: {auth['summary']}")
    if reasons:
        more = f" (and {len(reasons) - 1} more in erase-record.json)" if len(reasons) > 1 else ""
        said.append(reasons[0] + more)
    return (f"<h2>Drive health — grade: {_h(str(g['grade']))}</h2>"
            + (f"<p class=\"small\">{_h('. '.join(said))}</p>" if said else ""))


def _health_table(health: Mapping[str, Any]) -> str:
    before, after = health.get("before") or {}, health.get("after") or {}
    if not before.get("available") and not after.get("available"):
        why = before.get("reason") or after.get("reason") or "not read"
        return f"<p>Not available: {_h(str(why))}</p>"
    keys = [("passed", "SMART overall"), ("power_on_hours", "power-on hours"),
            ("temperature_c", "temperature °C"), ("percentage_used", "percentage used"),
            ("available_spare", "available spare %"), ("media_errors", "media errors"),
            ("reallocated_sectors", "reallocated sectors")]
    rows = []
    for key, label in keys:
        b, a = before.get(key), after.get(key)
        if b is None and a is None:
            continue
        if key == "passed":
            b, a = ("PASSED" if v is True else "FAILED" if v is False else v for v in (b, a))
        rows.append(f"<tr><td>{_h(label)}</td><td>{_h(_text(b))}</td>"
                    f"<td>{_h(_text(a))}</td></tr>")
    return ('<table class="grid"><tr><th></th><th>before the erase</th>'
            '<th>after the erase</th></tr>' + "".join(rows) + "</table>")


def _before_erase(record: Mapping[str, Any]) -> list[tuple[str, Any]]:
    """What was done before the erase, when anything was: the native max restore and the
    TCG PSID revert (rows of the Sanitization table)."""
    rows: list[tuple[str, Any]] = []
    restore = ((record.get("hidden_areas") or {}).get("ata") or {}).get("native_max_restore")
    if restore:
        what = (f"{restore.get('before_sectors')} → {restore.get('after_sectors')} sectors"
                if restore.get("result") != "failed" else restore.get("reason"))
        rows.append(("Native max restored first", f"{restore['result']}: {what}"))
    revert = record.get("tcg_revert")
    if revert:
        rows.append(("TCG PSID revert first", f"{revert['result']}: {revert.get('detail')}"
                     + (f" ({revert['started']})" if revert.get("started") else "")))
    return rows


def _host_section(host: Any) -> str:
    """The machine the drive was erased in and the controller it hung off (record
    ``host``, devices/host.py); nothing for a record made before ssdbench recorded it."""
    if not isinstance(host, Mapping):
        return ""
    said = describe_host(host)
    return "<h2>Host</h2>" + _rows([
        ("Machine", said["machine"]), ("Machine serial / UUID", said["serial"]),
        ("BIOS (version, date)", said["bios"]), ("Drive controller", said["controller"])])


def certificate_html(record: Mapping[str, Any], *, record_sha256: str) -> str:
    """The printable certificate; ``record_sha256``: the digest of erase-record.json's bytes
    as written, which the certificate prints so a printout ties to its record."""
    drive = record["drive"]
    san = record["sanitization"]
    ver = record["verification"]
    res = record["result"]
    people = record["people"]
    sig = record.get("signature") or {"unsigned": True, "reason": "not signed"}
    tools = record.get("tools") or {}
    status = res["status"]
    warnings = record.get("warnings") or []
    notes = (record.get("hidden_areas", {}).get("nvme") or {}).get("notes") or []
    parts = [
        "<!DOCTYPE html><html lang=\"en\"><head><meta charset=\"utf-8\">",
        f"<meta http-equiv=\"Content-Security-Policy\" content=\"{CSP}\">",
        f"<title>Certificate of sanitization — {_h(drive['model'])} "
        f"{_h(drive['serial'])}</title><style>{_CSS}</style></head><body>",
        "<header><div><h1>Certificate of Sanitization</h1>",
        f"<div class=\"sub\">{_h(san['reference'])}<br>record "
        f"<span class=\"record-id\">{_h(record['record_id'])}</span></div></div>",
        f"<div class=\"badge {_h(status)}\">{_h(status)}</div></header>",
        f"<p class=\"reason\">{_h(res['reason'])}</p>",
    ]
    if warnings:
        parts.append("<div class=\"warn\"><b>Warnings</b><ul>" + "".join(
            f"<li>{_h(w)}</li>" for w in warnings) + "</ul></div>")
    parts += [
        "<h2>Organisation</h2>",
        _pairs([("Organisation", people.get("organisation")),
                ("Customer", people.get("customer")),
                ("Asset tag / property number", people.get("asset_tag")),
                ("Operator", people.get("operator")), *lab_rows(people)]),
        "<h2>Media</h2>",
        _rows([("Manufacturer", drive["manufacturer"]), ("Model", drive["model"]),
               ("Serial number", drive["serial"]), ("Firmware", drive["firmware"]),
               ("Device at the time", drive.get("device")),
               ("Interface", drive["interface"]), ("Media type", drive["media_type"]),
               ("Capacity (host view)", _size(drive["capacity_bytes"])),
               ("Native max capacity", f"{_size(drive['native_max_bytes'])} — "
                                       f"{drive['native_max_source']}")]),
        _host_section(record.get("host")),
        "<h2>Sanitization</h2>",
        _rows([("NIST SP 800-88 category", san["category"]),
               ("Technique", san["technique"]), ("ssdbench method", san["method"]),
               ("Note", san["note"]), ("Tool detail", san["detail"])]),
    ]
    if isinstance(over := san.get("overwrite"), dict):  # Clear by overwrite: the pass
        parts.append(_rows([
            ("Passes", over.get("passes")), ("Pattern", over.get("pattern_detail")),
            ("Pattern seed", over.get("seed") or "none (a fixed value)"),
            ("Bytes written", f"{over.get('bytes_written')} of {over.get('bytes')}"),
            ("Write speed", f"{over.get('mb_s')} MB/s in {over.get('seconds')} s"),
            ("Bad blocks (skipped)", over.get("bad_blocks"))], mono=("Pattern seed",)))
    if isinstance(refmt := san.get("scsi_reformat"), dict):  # SAS 520/528 -> 512 first
        parts.append(_rows([("Reformatted before the erase", _reformat_text(refmt))]))
    if notes:
        parts.append("<ul>" + "".join(f"<li>{_h(n)}</li>" for n in notes) + "</ul>")
    before = _before_erase(record)
    if before:
        parts.append(_rows(before))
    where = ver.get("where") or ver.get("reason") or ""
    parts += [
        "<h2>Verification</h2>",
        _rows([("Method", ver["method"]), ("Result", ver["result"]),
               ("Sampled blocks", f"{ver['sampled']}"
                + (f" × {ver['block_bytes']} bytes" if ver.get("block_bytes") else "")),
               ("Where", where)]),
    ]
    if ver.get("offsets"):
        parts.append("<p class=\"mono\">byte offsets: "
                     + _h(", ".join(str(o) for o in ver["offsets"])) + "</p>")
    parts += [
        "<h2>Time and tools</h2>",
        _rows([("Started (UTC)", record["started"]), ("Finished (UTC)", record["finished"]),
               ("Duration", f"{record['duration_s']} s")]
              + [(f"{k}", v) for k, v in sorted(tools.items())]),
        _grade_heading(record), _health_table(record.get("health") or {}),
        "<div class=\"keep\"><h2>Tamper evidence</h2>",
    ]
    if sig.get("unsigned"):
        parts.append(f"<p class=\"unsigned\">UNSIGNED RECORD — {_h(str(sig.get('reason')))}."
                     " Nothing shows that this record was not changed.</p>")
    else:
        chain = record.get("chain") if isinstance(record.get("chain"), dict) else {}
        links = [] if not chain else [
            ("Record chain", f"no. {chain.get('seq')} of {str(chain.get('id'))[:8]}, after "
                             + ("none (the first)" if chain.get("previous_sha256") is None
                                else str(chain.get("previous_sha256"))[:16] + "…"))]
        parts.append(_rows([("Signature", f"{sig['algorithm']} over the record "
                                          "(erase-record.json)"),
                            ("Lab key fingerprint", sig["fingerprint"]),
                            ("Record file SHA-256", record_sha256), *links],
                           mono=("Lab key fingerprint", "Record file SHA-256",
                                 "Record chain")))
        parts.append("<p>Check it with the lab's public key, obtained from the lab, not from "
                     "this page: <span class=\"mono\">ssdbench verify-record --key "
                     "lab-key.pub.pem erase-record.json</span> (or <span class=\"mono\">"
                     "--trusted</span> with the lab's published fingerprints), and <span "
                     "class=\"mono\">sha256sum erase-record.json</span> against the digest "
                     "above. A record signed by any other key proves nothing about who "
                     "made it.</p>")
    parts += [
        "<div class=\"sign\"><div>Sanitized by (name, title, signature, date)</div>"
        "<div>Verified by (name, title, signature, date)</div></div></div>",
        f"<footer>ssdbench {_h(str(tools.get('ssdbench', '')))} · the "
        + ("record (UNSIGNED)" if sig.get("unsigned") else "signed record")
        + " is erase-record.json next to this file; this page is a rendering of it.</footer>",
        "</body></html>",
    ]
    return "\n".join(parts)


class FetchRefused(ValueError):
    """WeasyPrint asked for a URL while making the certificate: ssdbench fetches nothing."""


class NoFetch:
    """WeasyPrint's URL fetcher for the certificate: the certificate needs nothing from
    outside the page (its one style sheet is inline, it has no image or font of its own),
    so every URL is refused, whatever its scheme (``http``, ``https``, ``file``, ``data``,
    a relative one), and kept in ``asked``: a page that asks for one holds something
    ssdbench did not write."""

    def __init__(self) -> None:
        self.asked: list[str] = []

    def __call__(self, url: str) -> Any:
        self.asked.append(url)
        raise FetchRefused(f"the certificate fetches nothing: {shown(url, 120)}")


def write_pdf(html: str, path: Path) -> str | None:
    """Render the certificate to PDF; returns None, or why no PDF was made. Nothing is
    fetched (:class:`NoFetch`); a page that asked for a URL gets no PDF and says which."""
    try:
        from weasyprint import HTML  # type: ignore[import-untyped,import-not-found,unused-ignore]
    except Exception as exc:  # ImportError, or missing pango/cairo libraries
        return f"no PDF: WeasyPrint is not usable ({type(exc).__name__}: {exc})"
    fetcher = NoFetch()
    try:
        pdf = HTML(string=html, url_fetcher=fetcher).write_pdf()
    except Exception as exc:
        return f"no PDF: WeasyPrint failed ({type(exc).__name__}: {exc})"
    if fetcher.asked:
        return (f"no PDF: the certificate asked for {shown(fetcher.asked[0], 120)}"
                + (f" and {len(fetcher.asked) - 1} more URL(s)" if len(fetcher.asked) > 1
                   else "") + "; ssdbench fetches nothing")
    atomic.write_bytes(path, pdf)
    return None


def csv_row(record: Mapping[str, Any]) -> dict[str, Any]:
    d, s, v, p = record["drive"], record["sanitization"], record["verification"], record["people"]
    sig = record.get("signature") or {}
    return {
        "record_id": record["record_id"], "result": record["result"]["status"],
        "reason": record["result"]["reason"], "category": s["category"],
        "technique": s["technique"], "manufacturer": d["manufacturer"], "model": d["model"],
        "serial": d["serial"], "firmware": d["firmware"], "interface": d["interface"],
        "media_type": d["media_type"], "capacity_bytes": d["capacity_bytes"],
        "native_max_bytes": d["native_max_bytes"], "verification": v["result"],
        "sampled_blocks": v["sampled"], "started": record["started"],
        "finished": record["finished"], "duration_s": record["duration_s"],
        "operator": p["operator"], "organisation": p["organisation"],
        "customer": p["customer"], "asset_tag": p["asset_tag"],
        "warnings": " | ".join(record.get("warnings") or []),
        "signed_by": "UNSIGNED" if sig.get("unsigned") else sig.get("fingerprint", ""),
        "grade": (record.get("grade") or {}).get("grade", ""),
    }


def csv_text(records: Iterable[Mapping[str, Any]]) -> str:
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=CSV_COLUMNS, lineterminator="\n")
    writer.writeheader()
    for record in records:
        writer.writerow(neutral(csv_row(record)))
    return buf.getvalue()
