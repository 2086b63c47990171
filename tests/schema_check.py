"""Hold the files ssdbench writes against their published schemas (tui/src/ssdbench/schemas/,
docs/results-format.md "The contract"): tests call :func:`check_json`, :func:`check_csv` or
:func:`check_tree` on the files they made. A file that does not match raises
:class:`SchemaMismatch` naming the file, the field and what was wrong."""

from __future__ import annotations

import csv
import io
import json
import re
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

SCHEMAS = resources.files("ssdbench") / "schemas"


class SchemaMismatch(AssertionError):
    """A file that does not follow its schema (an AssertionError: pytest shows it as a
    failed check)."""


@cache
def schema(name: str) -> dict[str, Any]:
    """A schema by file name (``run.json.schema.json``) or by the file it describes
    (``run.json``, ``summary.csv``)."""
    if not name.endswith(".schema.json"):
        name = f"{name}.schema.json"
    data: dict[str, Any] = json.loads((SCHEMAS / name).read_text(encoding="utf-8"))
    return data


@cache
def index() -> list[tuple[re.Pattern[str], str | None]]:
    """(pattern, schema file or None) of schemas/index.json, in order."""
    doc = json.loads((SCHEMAS / "index.json").read_text(encoding="utf-8"))
    return [(re.compile(e["pattern"]), e["schema"]) for e in doc["files"]]


def schema_for(rel: str) -> tuple[bool, str | None]:
    """(known, schema file) for a path relative to a results folder: known False when no
    entry of schemas/index.json matches it."""
    for pattern, name in index():
        if pattern.search(rel):
            return True, name
    return False, None


def _where(path: Iterable[Any]) -> str:
    parts = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
    return f"${parts}" if parts else "$ (the whole document)"


@cache
def _validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schema(name))


def problems(data: Any, name: str) -> list[str]:
    """Every way ``data`` fails schema ``name``, each as ``$.field.sub: message``; the most
    telling first (jsonschema's best_match)."""
    errors = list(_validator(name).iter_errors(data))
    if not errors:
        return []
    first = best_match(errors)
    rest = [e for e in errors if e is not first]
    return [f"{_where(e.absolute_path)}: {e.message}" for e in (first, *rest)]


def check_data(data: Any, name: str, label: str) -> None:
    found = problems(data, name)
    if found:
        raise SchemaMismatch(f"{label} does not follow {schema(name)['$id']}:\n  "
                             + "\n  ".join(found[:10]))


def check_json(path: Path, name: str | None = None) -> Any:
    """``path`` parsed and held against schema ``name`` (default: by its file name through
    schemas/index.json); returns the data."""
    path = Path(path)
    name = name or _by_index(path.name, path)
    data = json.loads(path.read_text(encoding="utf-8"))
    check_data(data, name, str(path))
    return data


def columns(name: str) -> tuple[list[str], list[str]]:
    """(every column in order, the optional ones) of a CSV schema."""
    s = schema(name)
    return list(s["x-csv-columns"]), list(s.get("x-csv-optional-columns", []))


def pattern_columns(name: str) -> list[re.Pattern[str]]:
    """A CSV schema's ``x-csv-pattern-columns``: the columns that may follow its last one
    (summary.csv's ``field_<name>``, one per lab field)."""
    return [re.compile(p) for p in schema(name).get("x-csv-pattern-columns", [])]


def check_csv_text(text: str, name: str, label: str) -> list[dict[str, str]]:
    """CSV text held against CSV schema ``name``: the header is the schema's columns in
    order (an optional column may be left out, with every column after it), then, after
    all of them, any columns matching ``x-csv-pattern-columns`` (each once), then each row
    as a mapping of strings. Returns the rows."""
    want, optional = columns(name)
    reader = csv.reader(io.StringIO(text, newline=""))  # a cell may hold a line break
    header = next(reader, None)
    if header is None:
        raise SchemaMismatch(f"{label}: empty, no header line (want {','.join(want)})")
    allowed = [want[:n] for n in range(len(want) + 1)
               if n == len(want) or (want[n] in optional and not set(want[n:]) - set(optional))]
    tail = header[len(want):] if header[:len(want)] == want else []
    patterns = pattern_columns(name)
    if tail and len(set(tail)) == len(tail) and all(
            any(p.fullmatch(c) for p in patterns) for c in tail):
        allowed.append(header)
    if header not in allowed:
        extra = [c for c in header if c not in want]
        missing = [c for c in want if c not in header and c not in optional]
        raise SchemaMismatch(
            f"{label}: header is not {schema(name)['$id']}'s columns in order"
            + (f"; unknown {extra}" if extra else "") + (f"; missing {missing}" if missing else "")
            + f"\n  got  {','.join(header)}\n  want {','.join(want)}")
    rows = []
    for n, cells in enumerate(reader, start=2):
        if len(cells) != len(header):
            raise SchemaMismatch(f"{label}: row {n} has {len(cells)} cells, the header "
                                 f"{len(header)}")
        row = dict(zip(header, cells, strict=True))
        found = problems(row, name)
        if found:
            raise SchemaMismatch(f"{label}: row {n} does not follow {schema(name)['$id']}:\n  "
                                 + "\n  ".join(found[:10]))
        rows.append(row)
    return rows


def check_csv(path: Path, name: str | None = None) -> list[dict[str, str]]:
    path = Path(path)
    name = name or _by_index(path.name, path)
    with path.open(encoding="utf-8", newline="") as f:
        return check_csv_text(f.read(), name, str(path))


def _by_index(rel: str, path: Path) -> str:
    known, name = schema_for(rel)
    if name is None:
        raise SchemaMismatch(f"{path}: no schema for this file"
                             + ("" if known else " (not in ssdbench/schemas/index.json)"))
    return name


def check_tree(root: Path, *, expect: Mapping[str, int] | None = None) -> dict[str, int]:
    """Every ``*.json`` and ``*.csv`` under ``root`` held against its schema (through
    schemas/index.json); one with no entry there fails, one whose entry has no schema must
    still parse. Returns how many files each schema checked; ``expect`` (schema file ->
    at least this many) makes a tree that lacks them fail, so the check cannot pass on an
    empty folder."""
    counts: dict[str, int] = {}
    files = sorted(p for p in Path(root).rglob("*")
                   if p.suffix in (".json", ".csv") and p.is_file() and not p.is_symlink())
    for path in files:
        rel = path.relative_to(root).as_posix()
        known, name = schema_for(rel)
        if not known:
            raise SchemaMismatch(f"{path}: a {path.suffix} file the format does not know: "
                                 "add it to ssdbench/schemas/index.json (with a schema)")
        if name is None:
            text = path.read_text(encoding="utf-8")
            if path.suffix == ".json":
                json.loads(text)
            counts["(no contract)"] = counts.get("(no contract)", 0) + 1
            continue
        if path.suffix == ".json":
            check_json(path, name)
        else:
            check_csv(path, name)
        counts[name] = counts.get(name, 0) + 1
    lacking = {k: n for k, n in (expect or {}).items() if counts.get(k, 0) < n}
    if lacking:
        raise SchemaMismatch(f"{root}: fewer files than expected {lacking}; checked {counts}")
    return counts
