"""One sanitiser for strings ssdbench did not write: what a drive reports (model, serial,
firmware: a USB bridge or a counterfeit drive reports anything), what a results file or a
network answer holds, what an operator typed (docs/security.md "Untrusted strings").

* :func:`shown`: for a console, a log line, a terminal screen: control characters (C0, DEL,
  C1), bidirectional overrides and zero-width characters become ``?``; long values are cut.
  Textual and Rich get it as a ``Text``, never as markup (the UI wraps it).
* :func:`path_part`: a file name or store-key component: only ``A-Za-z0-9._-``, never empty,
  never ``.`` or ``..``, at most ``limit`` characters (the raw value stays in run.json).
* :func:`csv_cell`: a CSV cell a spreadsheet will not run: a value starting with ``=``, ``+``,
  ``-``, ``@``, a tab or a carriage return gets a leading apostrophe (OWASP), unless it is a
  plain number.
* :func:`without_url_secrets`: text that leaves the bench (a support bundle): every URL's
  user and password, query and fragment (where tokens live) replaced by ``REMOVED``.

Pure functions, no imports from the rest of ssdbench: the engine, the UI, the report and
the lab view all use them.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

SHOWN_LIMIT = 200
PATH_LIMIT = 64
# C0 and DEL, C1, zero-width and bidirectional controls, BOM, line/paragraph separators
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069\ufeff]")
_UNSAFE_PATH = re.compile(r"[^A-Za-z0-9._-]")
_FORMULA_START = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?")


def shown(value: object, limit: int = SHOWN_LIMIT) -> str:
    """``value`` as text safe to print: control and invisible characters as ``?``, at most
    ``limit`` characters (``…`` marks a cut)."""
    text = _CONTROL.sub("?", str(value))
    return text if len(text) <= limit else text[: max(0, limit - 1)] + "…"


def path_part(value: object, limit: int = PATH_LIMIT) -> str:
    """``value`` as one path or key component: every character outside ``A-Za-z0-9._-``
    as ``_``, at most ``limit`` characters, a leading dot as ``_`` (so never ``.``, ``..``
    or a hidden file), never empty."""
    text = _UNSAFE_PATH.sub("_", str(value).strip())[:limit]
    if text.startswith("."):
        text = "_" + text[1:]
    return text or "_"


def csv_row(row: Mapping[str, object]) -> dict[str, object]:
    """Every text cell of ``row`` through :func:`csv_cell` (every CSV ssdbench writes)."""
    return {k: csv_cell(v) if isinstance(v, str) else v for k, v in row.items()}


def csv_cell(value: str) -> str:
    """``value`` for a CSV cell: a formula-looking text gets a leading ``'``; numbers (a
    negative temperature, ``-3.5``) and everything else stay as they are; control characters
    but the ones CSV quotes are left to the CSV writer."""
    if value.startswith(_FORMULA_START) and not _NUMBER.fullmatch(value):
        return "'" + value
    return value


_URL_USERINFO = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://)[^/\s?#]*@")
_URL_TAIL = re.compile(r"(\b[A-Za-z][A-Za-z0-9+.-]*://[^\s?#]*)[?#]\S*")


def without_url_secrets(text: str) -> str:
    """``text`` with each URL's ``user:password@`` and its ``?query`` / ``#fragment``
    replaced by ``REMOVED`` (the kernel command line's ``ssdbench.config=https://lab:PW@...``
    in a support bundle); the scheme, host and path stay, so the bundle still says where."""
    text = _URL_USERINFO.sub(r"\1REMOVED@", text)
    return _URL_TAIL.sub(r"\1?REMOVED", text)
