"""Sign a record with the lab key (or mark it unsigned) and write its files:
``erase-record.json`` (the signed record), ``erase-certificate.html``,
``erase-certificate.pdf``, and one row in the session's CSV at the results root."""

from __future__ import annotations

import csv
import hashlib
import threading
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssdbench.record.render import CSV_COLUMNS, certificate_html, csv_row, write_pdf
from ssdbench.record.sign import SigningError, dump_record, load_private_key, sign_record, unsigned
from ssdbench.results import atomic
from ssdbench.untrusted import csv_row as neutral

RECORD_JSON = "erase-record.json"
CERT_HTML = "erase-certificate.html"
CERT_PDF = "erase-certificate.pdf"

_lock = threading.Lock()
_session: list[str] = []  # the UTC stamp of this process's first record: one CSV per session


def session_csv_name() -> str:
    with _lock:
        if not _session:
            _session.append(datetime.now(UTC).strftime("%Y%m%dT%H%M%SZ"))
        return f"erase-session-{_session[0]}.csv"


def seal(record: dict[str, Any], key_path: str) -> dict[str, Any]:
    """Sign with the Ed25519 key at ``key_path``; without one, or when it cannot be used,
    the record says it is unsigned and why."""
    if not key_path:
        return unsigned(record, "no lab key configured (plan parameter record_key)")
    try:
        return sign_record(record, load_private_key(key_path))
    except SigningError as exc:
        return unsigned(record, str(exc))


def write_record_files(run_dir: Path, record: Mapping[str, Any], *,
                       pdf: bool = True) -> dict[str, Any]:
    """The record's three files in ``run_dir`` (``pdf`` False: no PDF, plan parameter
    record_pdf); returns their names (pdf None + why when no PDF was made)."""
    data = dump_record(dict(record))
    atomic.write_bytes(run_dir / RECORD_JSON, data)
    html = certificate_html(record, record_sha256=hashlib.sha256(data).hexdigest())
    atomic.write_text(run_dir / CERT_HTML, html)
    problem = (write_pdf(html, run_dir / CERT_PDF) if pdf
               else "no PDF: plan parameter record_pdf is false")
    return {"json": RECORD_JSON, "html": CERT_HTML,
            "pdf": None if problem else CERT_PDF, "pdf_problem": problem}


def append_session_csv(root: Path, record: Mapping[str, Any]) -> Path:
    """Add the record's row to this session's CSV at the results root (every drive of the
    session, one row each; drives erased at once append under a lock)."""
    path = root / session_csv_name()
    with _lock:
        new = not path.exists()
        with path.open("a", encoding="utf-8", newline="") as fh:
            writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS, lineterminator="\n")
            if new:
                writer.writeheader()
            writer.writerow(neutral(csv_row(record)))
            fh.flush()
    return path
