"""One sanitiser for strings ssdbench did not write: what a drive reports (model, serial,
firmware: a USB bridge or a counterfeit drive reports anything), what a results file or a
network answer holds, what an operator typed (docs/security.md "Untrusted strings").

* :func:`shown`: for a console, a log line, a terminal screen: control characters (C0, DEL,
  C1), bidirectional overrides and zero-width characters become ``?``; long values are cut.
  Textual and Rich get it as a ``Text``, never as markup (the UI wraps it).
* :func:`visible`: the same characters as ``?``, nothing cut: the one display rule for
  every place a person reads a drive string (the certificate, every CSV, a screen,
  ``verify-record``), so a serial reads the same in each.
* :func:`path_part`: a file name or store-key component: only ``A-Za-z0-9._-``, never empty,
  never ``.`` or ``..``, at most ``limit`` characters (the raw value stays in run.json);
  ``distinct=True`` (serials) keeps two raw values apart that would read the same.
* :func:`csv_cell`: a CSV cell a spreadsheet will not run: a value starting with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading apostrophe (OWASP), unless it is a
  plain number.
* :func:`without_url_secrets`: a URL or a text holding URLs, as it is written anywhere (run.json,
  state.json, the erase record, messages, a support bundle): every URL's user and password,
  query and fragment (where tokens live) replaced by ``REMOVED``.

Pure functions, no imports from the rest of ssdbench: the engine, the UI, the report and
the lab view all use them.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping

SHOWN_LIMIT = 200
PATH_LIMIT = 64
# C0 and DEL, C1, zero-width and bidirectional controls, BOM, line/paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_UNSAFE_PATH = re.compile(r"[^A-Za-z0-9._-]")
_DISTINCT_SUFFIX = re.compile(r"-h[0-9a-f]{12}$")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def shown(value: object, limit: int = SHOWN_LIMIT) -> str:
    """``value`` as text safe to print: control and invisible characters as ``?``, at most
    ``limit`` characters (``…`` marks a cut)."""
    text = _CONTROL.sub("?", str(value))
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def visible(value: object) -> str:
    """``value`` with control and invisible characters as ``?`` (the rule of :func:`shown`,
    nothing cut): a U+202E cannot turn the rest of a serial around, a U+200B cannot hide
    in it."""
    return _CONTROL.sub("?", str(value))


def path_part(value: object, limit: int = PATH_LIMIT, *, distinct: bool = False) -> str:
    """``value`` as one path or key component: every character outside ``A-Za-z0-9._-``
    as ``_``, at most ``limit`` characters, a leading dot as ``_`` (so never ``.``, ``..``
    or a hidden file), never empty.

    ``distinct`` (serials: ``SN 0001``, ``SN/0001`` and ``SN_0001`` are three drives): a
    value this changed (or cut), or one that already ends like such a suffix, ends in
    ``-h`` and 12 hex digits of its SHA-256, so two raw values never share a name; a value
    already clean stays as it is (the folders of earlier results keep their names)."""
    raw = str(value).strip()  # the padding ATA serials carry is no part of them
    text = _UNSAFE_PATH.sub("_", raw)[:limit]
    if text.startswith("."):
        text = "_" + text[1:]
    text = text or "_"
    if distinct and (text != raw or _DISTINCT_SUFFIX.search(raw)):
        digest = hashlib.sha256(raw.encode("utf-8", "surrogatepass")).hexdigest()[:12]
        text = text[: max(1, limit - 14)] + "-h" + digest
    return text


def csv_row(row: Mapping[str, object]) -> dict[str, object]:
    """Every text cell of ``row`` through :func:`visible` and :func:`csv_cell` (every CSV
    ssdbench writes)."""
    return {k: csv_cell(visible(v)) if isinstance(v, str) else v for k, v in row.items()}


def csv_cell(value: str) -> str:
    """``value`` for a CSV cell: a formula-looking text gets a leading ``'``; numbers (a
    negative temperature, ``-3.5``) and everything else stay as they are; control characters
    but the ones CSV quotes are left to the CSV writer."""
    if value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


# a URL's start, for a value that is one URL: "scheme://", or http(s): in any case
_ONE_URL = re.compile(r"^(?:[A-Za-z][A-Za-z0-9+.-]*://|https?:/*)", re.IGNORECASE)
# in a line of text: the user part ends at the last "@" before white space, or (a password
# with spaces) at the last "@" before the line's next "/"
_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)\S*@")
_URL_USERINFO_SPACES = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\r\n]*@")
_URL_TAIL = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)[?#]\S*")


def without_url_secrets(text: str) -> str:
    """``text`` with each URL's ``user:password@`` and its ``?query`` / ``#fragment``
    replaced by ``REMOVED``; the scheme, host and path stay, so the text still says where.
    The one redaction for every place a URL is written (run.json, state.json, the erase
    record, messages, a support bundle's kernel command line).

    A value that is one URL (white space around it, any case of the scheme) loses
    everything up to the last ``@`` after its scheme, so a password with spaces, ``@``,
    ``/``, ``?``, ``#`` or ``%``-escapes goes whole, and so does one in a URL that does
    not parse. In a line of text a URL's user part ends at the last ``@`` before white
    space or, failing that, before the next ``/``: it may take more than the password (a
    password holding both a space and a raw ``/`` is not found there; lab/fetch.py refuses
    such a URL, and ssdbench's messages never quote one as written)."""
    one = text.strip()
    m = _ONE_URL.match(one)
    if m is not None and "\n" not in one:
        rest = one[m.end():]
        if "@" in rest:
            rest = "REMOVED@" + rest.rpartition("@")[2]
        cut = min((i for i in (rest.find("?"), rest.find("#")) if i >= 0), default=-1)
        if cut >= 0:
            rest = rest[:cut] + "?REMOVED"
        return one[:m.end()] + rest
    text = _URL_USERINFO.sub(r"\1REMOVED@", text)
    text = _URL_USERINFO_SPACES.sub(r"\1REMOVED@", text)
    return _URL_TAIL.sub(r"\1?REMOVED", text)
