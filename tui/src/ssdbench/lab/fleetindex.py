"""The fleet index (docs/lab.md "The fleet at a million runs"): the fleet build keeps, in the
store itself, one file per bench, ``_fleet/<bench>.csv.gz``, of its finished runs' rows (the
fields the page needs) and, for each, the run.json key and the version it was read at (its
size and mtime in a folder, its ETag in S3): a build lists the store, reads only the run.json
files that are new or changed since, drops the rows of runs gone, writes back the index of
every bench that changed, and streams the rows bench by bench into the page's summaries,
fleet.csv and the search pages (never a million rows in memory).

The index is untrusted input like every file of the store (docs/security.md): one that is
not exactly what this module writes (its first line and header, every row of the right
width, for a run.json of its own bench, no control character, at most INDEX_LIMIT bytes
unpacked) is refused with a note on the page and rebuilt from the store.
"""

from __future__ import annotations

import csv
import gzip
import heapq
import html
import io
import json
import os
import re
import stat
import time
import zlib
from collections import Counter
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ssdbench.grade.capacity import FAKE_VERDICTS
from ssdbench.lab import fleet
from ssdbench.untrusted import csv_cell, visible

INDEX_DIR = "_fleet"
FIRST_LINE = "# ssdbench fleet index 1"
PAGE_COLUMNS = ("host_machine", "host_controller", "lot", "asset_tag")
ROW_COLUMNS = fleet.CSV_COLUMNS + PAGE_COLUMNS
INDEX_COLUMNS = ("key", "tag", *ROW_COLUMNS)
# a run in one of these states is finished: its row is kept; any other is read again
FINAL_STATES = frozenset({"done", "failed", "cancelled", "interrupted"})
INDEX_LIMIT = 512 << 20  # bytes of one bench's index, unpacked
NEWEST = 500  # runs in fleet.html's table
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069"
                      "\ufeff]")
_FORMULA_AT_CELL = re.compile(r'(?:^|,)"?[=+\-@]', re.M)
# in a folder listing's text: an empty name, a "." or ".." name or path component
_DOTS = re.compile(r'""|"\.{1,2}["/]|/\.{1,2}["/]')
_BENCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
_CSV_SLICE = slice(2, 2 + len(fleet.CSV_COLUMNS))


class Source(Protocol):
    """Where the runs are (a folder or a store) and where the index is kept."""

    name: str

    def benches(self) -> Iterator[tuple[str, dict[str, str]]]:
        """Each bench's wanted files (fleet.WANTED), key (``<bench>/...``) -> version."""
        ...

    def loader(self, key: str) -> fleet.Loader: ...

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]: ...

    def read_index(self, bench: str) -> bytes | None: ...

    def write_index(self, bench: str, data: bytes) -> None: ...


DIRS_FIRST = "ssdbench fleet folders 1"
RACY_NS = 2_000_000_000  # a folder changed this close to the walk is listed again next time


class FolderSource:
    """A copy of the store's prefix; its index under ``<folder>/_fleet/``. Its listing is
    kept there too (``<bench>.dirs.json.gz``: each folder's mtime, sub-folders and wanted
    files): a folder whose mtime is the one listed is not read again, so a build stats the
    folders instead of reading them (sync tools write a file by renaming a temporary one
    into place, which changes its folder's mtime; a file rewritten in place is not seen:
    ``--no-index`` reads everything)."""

    def __init__(self, root: Path, *, index: Path | None = None, use_dirs: bool = True
                 ) -> None:
        self.root = root
        # where the index goes: the command keeps it in its output folder (-o), so a copy
        # of the store is only read (it may be read-only, or synced again with --delete)
        self.index = index if index is not None else root / INDEX_DIR
        self.name = str(root)
        self.use_dirs = use_dirs
        self.notes: list[str] = []

    def benches(self) -> Iterator[tuple[str, dict[str, str]]]:
        with os.scandir(self.root) as top:
            names = sorted(e.name for e in top if e.is_dir(follow_symlinks=False)
                           and e.name != INDEX_DIR)
        for bench in names:  # links to folders are not followed
            cache = self._read_dirs(bench) if self.use_dirs and _BENCH.match(bench) else {}
            found: dict[str, str] = {}
            dirs: dict[str, list[Any]] = {}
            todo = [bench]
            root = str(self.root) + "/"
            now_ns = time.time_ns()
            while todo:
                rel = todo.pop()
                path = root + rel
                try:
                    st = os.stat(path, follow_symlinks=False)
                except OSError:
                    continue
                if not stat.S_ISDIR(st.st_mode):
                    continue
                old = cache.get(rel)
                if old is not None and old[0] == st.st_mtime_ns:
                    subdirs, files = old[1], old[2]
                else:
                    subdirs, files = [], {}
                    try:
                        with os.scandir(path) as it:
                            for e in it:
                                if e.is_dir(follow_symlinks=False):
                                    subdirs.append(e.name)
                                elif e.name in fleet.WANTED:
                                    try:
                                        fst = e.stat(follow_symlinks=False)
                                    except OSError:
                                        continue
                                    files[e.name] = f"{fst.st_size}-{fst.st_mtime_ns}"
                    except OSError:
                        continue
                racy = now_ns - st.st_mtime_ns < RACY_NS
                dirs[rel] = [0 if racy else st.st_mtime_ns, subdirs, files]
                for name, tag in files.items():
                    found[f"{rel}/{name}"] = tag
                todo.extend(f"{rel}/{d}" for d in subdirs)
            if found and self.use_dirs and _BENCH.match(bench) and dirs != cache:
                self._write_dirs(bench, dirs)
            yield bench, found

    def _dirs_path(self, bench: str) -> Path:
        return self.index / f"{bench}.dirs.json.gz"

    def _read_dirs(self, bench: str) -> dict[str, list[Any]]:
        """The folders listed last time; {} (and a note) when the file is not what
        :meth:`_write_dirs` writes."""
        from ssdbench import jsonfile

        try:
            blob = jsonfile.read_bytes(self._dirs_path(bench), limit=INDEX_LIMIT, follow=False)
        except FileNotFoundError:
            return {}
        except OSError as exc:
            self.notes.append(f"{INDEX_DIR}/{bench}.dirs.json.gz: cannot be read, the folder "
                              f"listed again: {visible(exc)}")
            return {}
        try:
            unz = zlib.decompressobj(wbits=31)
            raw = unz.decompress(blob, INDEX_LIMIT)
            if unz.unconsumed_tail:
                raise ValueError("too large")
            # checked as text first (no escape: names are written plain), then the shape
            text = raw.decode("utf-8")
            if "\\" in text or _CONTROL.search(text) or _DOTS.search(text):
                raise ValueError("an escape, a control character, an empty name, or a . or "
                                 ".. folder in it")
            doc = json.loads(text, parse_constant=fleet._no_constant)
            if not isinstance(doc, dict) or doc.get("format") != DIRS_FIRST:
                raise ValueError("not a folder listing")
            dirs = doc.get("dirs")
            if not isinstance(dirs, dict):
                raise ValueError("no folders")
            prefix = bench + "/"
            for rel, entry in dirs.items():
                if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not int
                        or type(entry[1]) is not list or type(entry[2]) is not dict
                        or not (rel == bench or rel.startswith(prefix))):
                    raise ValueError(f"a folder entry that is not one: {visible(rel)[:80]}")
            return dirs
        except (zlib.error, EOFError, ValueError, TypeError, RecursionError) as exc:
            self.notes.append(f"{INDEX_DIR}/{bench}.dirs.json.gz: refused, the folder listed "
                              f"again: {visible(exc)[:200]}")
            return {}

    def _write_dirs(self, bench: str, dirs: dict[str, list[Any]]) -> None:
        from ssdbench.results import atomic

        data = gzip.compress(json.dumps({"format": DIRS_FIRST, "dirs": dirs},
                                        separators=(",", ":")).encode(), 3, mtime=0)
        try:
            atomic.write_bytes(self._dirs_path(bench), data, root=self.index.parent)
        except OSError as exc:
            self.notes.append(f"{INDEX_DIR}/{bench}.dirs.json.gz: not saved ({visible(exc)})")

    def loader(self, key: str) -> fleet.Loader:
        return fleet._file(self.root / key)

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]:
        return {k: self.loader(k) for k in keys}

    def _index(self, bench: str) -> Path:
        return self.index / f"{bench}.csv.gz"

    def read_index(self, bench: str) -> bytes | None:
        from ssdbench import jsonfile

        try:
            return jsonfile.read_bytes(self._index(bench), limit=INDEX_LIMIT, follow=False)
        except FileNotFoundError:
            return None

    def write_index(self, bench: str, data: bytes) -> None:
        from ssdbench.results import atomic

        atomic.write_bytes(self._index(bench), data, root=self.index.parent)


class StoreSource:
    """The store itself (S3 or WebDAV): listed once, new run.json fetched in parallel; the
    index under ``<prefix>/_fleet/``. A version is the S3 ETag; a WebDAV listing gives
    none (a finished run's run.json is not sent again: it is read once)."""

    def __init__(self, store: Any, prefix: str, workers: int = 8) -> None:
        self.store = store
        self.base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.name = "the store"
        self.workers = workers

    def benches(self) -> Iterator[tuple[str, dict[str, str]]]:
        tagged = getattr(self.store, "tagged_keys", None)
        listed = tagged(self.base) if tagged else dict.fromkeys(self.store.keys(self.base), "")
        by_bench: dict[str, dict[str, str]] = {}
        for key, tag in listed.items():
            rel = key[len(self.base):]
            bench, _, rest = rel.partition("/")
            if rest and bench != INDEX_DIR and rel.rpartition("/")[2] in fleet.WANTED:
                by_bench.setdefault(bench, {})[rel] = tag
        del listed
        for bench in sorted(by_bench):
            yield bench, by_bench.pop(bench)

    def loader(self, key: str) -> fleet.Loader:
        return self.fetch([key])[key]

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]:
        def one(key: str) -> fleet.Loader:
            try:
                return fleet._const(self.store.get(self.base + key))
            except Exception as exc:  # StoreError, or a client library's own
                return fleet._failing(f"the store: {exc}")

        with ThreadPoolExecutor(self.workers) as pool:
            return dict(zip(keys, pool.map(one, keys), strict=True))

    def read_index(self, bench: str) -> bytes | None:
        from ssdbench.lab.store import StoreError

        key = f"{self.base}{INDEX_DIR}/{bench}.csv.gz"
        try:
            return bytes(self.store.get(key))
        except StoreError as exc:
            if "404" in str(exc) or "NoSuchKey" in str(exc):
                return None
            raise

    def write_index(self, bench: str, data: bytes) -> None:
        self.store.put(f"{self.base}{INDEX_DIR}/{bench}.csv.gz", data,
                       "application/gzip")


# ---- the index file ----

class IndexFileError(ValueError):
    """An index file that is not what this module writes."""


def pack(bench: str, rows: list[tuple[str, ...]]) -> bytes:
    buf = io.StringIO()
    buf.write(FIRST_LINE + "\n")
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(INDEX_COLUMNS)
    writer.writerows(rows)
    return gzip.compress(buf.getvalue().encode("utf-8"), compresslevel=3, mtime=0)


def unpack(bench: str, blob: bytes) -> list[tuple[str, ...]]:
    """The rows of ``bench``'s index file; IndexFileError naming what is wrong."""
    try:
        unz = zlib.decompressobj(wbits=31)
        raw = unz.decompress(blob, INDEX_LIMIT)
        if unz.unconsumed_tail:
            raise IndexFileError(f"larger than {INDEX_LIMIT >> 20} MiB unpacked")
        text = raw.decode("utf-8")
    except (zlib.error, UnicodeDecodeError, EOFError) as exc:
        raise IndexFileError(f"not a gzip of UTF-8 text ({type(exc).__name__})") from None
    head, _, body = text.partition("\n")
    if head != FIRST_LINE:
        raise IndexFileError("its first line is not " + FIRST_LINE)
    if _CONTROL.search(body) or "\r" in body:
        raise IndexFileError("a control character in it")
    reader = csv.reader(io.StringIO(body), strict=True)
    try:
        if tuple(next(reader, ())) != INDEX_COLUMNS:
            raise IndexFileError("its header is not the index's columns")
        rows = [tuple(r) for r in reader]
    except csv.Error as exc:
        raise IndexFileError(f"not CSV ({exc})") from None
    width, prefix = len(INDEX_COLUMNS), bench + "/"
    b = INDEX_COLUMNS.index("bench")
    st = INDEX_COLUMNS.index("state")
    for r in rows:
        if (len(r) != width or not r[0].startswith(prefix) or not r[0].endswith("/run.json")
                or "/../" in r[0] or "/./" in r[0] or r[b] != bench
                or r[st] not in FINAL_STATES):
            raise IndexFileError(f"a row that is not one of {bench}'s finished runs: "
                              f"{visible(r[:1])[:120]}")
    return rows


# ---- the build ----

def _session_of(key: str) -> str:
    """``<bench>/<serial>/<run id>`` of a run.json key (a run in its own folder or not)."""
    parts = key.split("/")[:-1]
    return "/".join(parts[:3])


def _row_tuple(key: str, tag: str, row: dict[str, str]) -> tuple[str, ...]:
    return (key, tag, *(visible(row.get(c, "")) for c in ROW_COLUMNS))


def _run_row(key: str, doc: dict[str, Any], drives: dict[str, dict[str, Any]]
             ) -> dict[str, str]:
    row = fleet._row(key, doc, drives)
    op = fleet._obj(doc.get("operator"))
    for name in ("lot", "asset_tag"):
        value = doc.get(name, op.get(name))
        row[name] = value if isinstance(value, str) else ""
    return row


@dataclass
class Result:
    fleet: fleet.Fleet  # benches, the newest runs, the summary, files left out
    runs: int = 0
    read: int = 0  # run.json files read (not from the index)
    index_notes: list[str] = field(default_factory=list)


def build(source: Source, out: Path, *, now: datetime | None = None,
          silent_after_s: float = fleet.SILENT_AFTER_S, use_index: bool = True,
          newest: int = NEWEST) -> Result:
    """Read ``source`` (through its index when ``use_index``), write ``out``/fleet.csv and the
    search pages, and return what fleet.html shows (:func:`fleet.fleet_html`)."""
    from ssdbench.results import atomic

    now = now or datetime.now(UTC)
    summary = fleet.Summary()
    heap: list[tuple[tuple[str, str, str, str], int, tuple[str, ...]]] = []
    benches: dict[str, fleet.Bench] = {}
    skipped: list[str] = []
    notes: list[str] = []
    atomic.inside(out, out / "fleet.csv")  # never through a link there (OutsideRoot)
    search = SearchPages(out)
    csv_tmp = out / ".fleet.csv.part"
    csv_tmp.unlink(missing_ok=True)  # left by a crash (or planted): a link goes
    fd = os.open(csv_tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666)
    total = read = 0
    counter = 0
    with open(fd, "w", encoding="utf-8", newline="") as csv_file:
        writer = csv.writer(csv_file, lineterminator="\n")
        writer.writerow(fleet.CSV_COLUMNS)
        for bench, listed in source.benches():
            rows, n_read = _bench_rows(source, bench, listed, now=now,
                                       silent_after_s=silent_after_s, use_index=use_index,
                                       benches=benches, skipped=skipped, notes=notes)
            read += n_read
            total += len(rows)
            rows.sort(key=lambda r: (r[14], r[5], r[7]), reverse=True)  # started, serial, run
            _write_csv(writer, rows)
            for r in rows:
                d = dict(zip(ROW_COLUMNS, r[2:], strict=True))
                summary.add(d)
                search.add(d)
                counter += 1
                item = ((d["started"], d["bench"], d["serial"], d["run"]), counter, r)
                if len(heap) < newest:
                    heapq.heappush(heap, item)
                elif item > heap[0]:
                    heapq.heapreplace(heap, item)
    newest_rows = [dict(zip(ROW_COLUMNS, r[2:], strict=True))
                   for _k, _c, r in sorted(heap, reverse=True)]
    if not benches:  # nothing to show: nothing written (the command says so)
        csv_tmp.unlink(missing_ok=True)
        search.discard()
        return Result(fleet.Fleet({}, [], now.strftime("%Y-%m-%dT%H:%M:%SZ"), skipped), 0, 0)
    summary.search = search.finish()
    os.replace(csv_tmp, out / "fleet.csv")
    atomic.fsync_dir(out)
    notes.extend(getattr(source, "notes", ()))
    result = fleet.Fleet(benches, newest_rows, now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         skipped + notes, summary=summary, total_runs=total)
    return Result(result, total, read, notes)


def _write_csv(writer: Any, rows: list[tuple[str, ...]]) -> None:
    """fleet.csv's rows of one bench: the cells were made visible when indexed; a cell that
    starts like a formula gets its ``'`` (untrusted.csv_cell), checked per cell only when
    one of them might."""
    sample = "\n".join(",".join(r[_CSV_SLICE]) for r in rows)
    if _FORMULA_AT_CELL.search(sample):
        writer.writerows(tuple(csv_cell(c) for c in r[_CSV_SLICE]) for r in rows)
    else:
        writer.writerows(r[_CSV_SLICE] for r in rows)


def _bench_rows(source: Source, bench: str, listed: dict[str, str], *, now: datetime,
                silent_after_s: float, use_index: bool, benches: dict[str, fleet.Bench],
                skipped: list[str], notes: list[str]) -> tuple[list[tuple[str, ...]], int]:
    """One bench: its status, its erase records checked, and its runs' rows (from its index
    where the run.json is the one indexed); its index written back when it changed."""
    # status.json and the erase records with their chain, read every time (a chain is
    # checked whole); drive.json only with a run.json read
    entries = source.fetch([k for k in listed if k.rpartition("/")[2] in (
        "status.json", "erase-record.json", "record-chain.json")])
    head = fleet.build(entries, now=now, silent_after_s=silent_after_s)  # status, records
    skipped.extend(head.skipped)
    benches.update(head.benches)
    indexed: dict[str, tuple[str, ...]] = {}
    if use_index and _BENCH.match(bench):
        try:
            blob = source.read_index(bench)
            if blob is not None:
                indexed = {r[0]: r for r in unpack(bench, blob)}
        except IndexFileError as exc:
            notes.append(f"{INDEX_DIR}/{bench}.csv.gz: refused, rebuilt from the store: {exc}")
        except Exception as exc:  # StoreError, OSError: read it all again
            notes.append(f"{INDEX_DIR}/{bench}.csv.gz: cannot be read, rebuilt from the "
                         f"store: {visible(exc)}")
    runs = sorted(k for k in listed if k.endswith("/run.json") and len(k.split("/")) >= 4)
    drive_tags = {k.rpartition("/")[0]: t for k, t in listed.items()
                  if k.endswith("/drive.json")}
    rows: list[tuple[str, ...]] = []
    todo: list[tuple[str, str]] = []
    for key in runs:
        tag = f"{listed[key]}|{drive_tags.get(_session_of(key), '')}"
        old = indexed.get(key)
        if old is not None and old[1] == tag:
            rows.append(old)
        else:
            todo.append((key, tag))
    changed = bool(todo) or len(rows) != len(indexed)  # new, changed or deleted runs
    if todo:
        sessions = {_session_of(k) for k, _ in todo}
        drive_keys = [f"{s}/drive.json" for s in sorted(sessions) if s in drive_tags]
        loaders = source.fetch([k for k, _ in todo] + drive_keys)
        drives: dict[str, dict[str, Any]] = {}
        for dk in drive_keys:
            doc, why = fleet._json(loaders[dk])
            if why:
                skipped.append(f"{dk}: {why}")
                continue
            drive = fleet._obj(doc.get("drive", doc))
            drives[dk.rpartition("/")[0]] = {k: drive.get(k) for k in
                                             ("model", "firmware", "serial")}
        for key, tag in todo:
            doc, why = fleet._json(loaders[key])
            if why:
                skipped.append(f"{key}: {why}")
            rows.append(_row_tuple(key, tag, _run_row(key, doc, drives)))
    if rows and bench not in benches:
        benches[bench] = fleet.Bench(bench)
    if use_index and changed and _BENCH.match(bench):
        keep = [r for r in rows if r[INDEX_COLUMNS.index("state")] in FINAL_STATES]
        try:
            source.write_index(bench, pack(bench, keep))
        except Exception as exc:  # a read-only store or folder: the next build reads again
            notes.append(f"{INDEX_DIR}/{bench}.csv.gz: not saved ({visible(exc)}): the next "
                         "build reads this bench's runs again")
    return rows, len(todo)


# ---- search pages: every run, by serial, asset tag and lot ----

SEARCH_KEYS = (("serial", "serials"), ("asset_tag", "asset-tags"), ("lot", "lots"))
PAGE_ROWS = 10_000  # a prefix page with more is split by one more character
PREFIX_MAX = 16  # characters: a page of values the same so far is not split further
PAGE_MAX = 20000  # rows on one page (the rest: fleet.csv)
MEMORY_ROWS = 200_000  # a part file of more rows is split on disk first
_SAFE = re.compile(r"[^A-Z0-9]")


def prefix_name(value: str, n: int) -> str:
    """The file name of the search page of ``value``'s first ``n`` characters: upper case,
    anything but A-Z and 0-9 as ``_`` (a case-blind file system, a hostile serial)."""
    return _SAFE.sub("_", value[:n].upper()).ljust(1, "_")


class SearchPages:
    """``fleet-<what>/<prefix>.html`` for the serial, the asset tag and the lot of every
    run: rows are spilled to a part file per prefix as each bench streams past, then each
    part becomes a page (split by one more character while it has over PAGE_ROWS rows)."""

    def __init__(self, out: Path) -> None:
        self.out = out
        self.pending: dict[tuple[str, str], list[str]] = {}
        self.parts: dict[tuple[str, str], int] = {}
        self.spill = out / ".fleet-search.part"
        import shutil

        shutil.rmtree(self.spill, ignore_errors=True)
        self.spill.mkdir(parents=True)
        self.count = 0
        self.names: dict[str, str] = {}

    def add(self, d: dict[str, str]) -> None:
        # the cells as the page shows them, tab-separated: no tab or line break is in a
        # cell (made visible when indexed); escaped for HTML a page at a time
        line = "\t".join((d["started"], d["bench"], d["serial"], d["model"], d["firmware"],
                          d["run"], d["state"], _iops_cell(d), d["grade"],
                          _capacity_text(d), d["lot"], d["asset_tag"]))
        for col, folder in SEARCH_KEYS:
            value = d[col]
            if value:
                name = self.names.get(value[:2])
                if name is None:
                    name = self.names[value[:2]] = prefix_name(value, 2)
                key = (folder, name)
                lines = self.pending.get(key)
                if lines is None:
                    lines = self.pending[key] = []
                lines.append(value + "\t" + line)
        self.count += 1
        if self.count % 20000 == 0:
            self.flush()

    def flush(self) -> None:
        for (folder, name), lines in self.pending.items():
            with open(self.spill / f"{folder}-{name}", "a", encoding="utf-8") as f:
                f.write("\n".join(lines) + "\n")
            key = (folder, name)
            self.parts[key] = self.parts.get(key, 0) + len(lines)
        self.pending.clear()

    def discard(self) -> None:
        import shutil

        shutil.rmtree(self.spill, ignore_errors=True)

    def finish(self) -> dict[str, dict[str, int]]:
        """Write the pages; (folder -> {page name: runs}) for fleet.html's links."""
        import shutil

        self.flush()
        made: dict[str, dict[str, int]] = {}
        for folder in {f for f, _ in self.parts}:
            final = self.out / f"fleet-{folder}"
            shutil.rmtree(final, ignore_errors=True)
            final.mkdir()
        for (folder, name), count in sorted(self.parts.items()):
            self._pages(folder, self.spill / f"{folder}-{name}", count, 2,
                        made.setdefault(folder, {}))
        shutil.rmtree(self.spill, ignore_errors=True)
        for folder, pages in made.items():
            _write_listing(self.out / f"fleet-{folder}", folder, pages)
        return made

    def _pages(self, folder: str, part: Path, count: int, n: int,
               made: dict[str, int]) -> None:
        """The page(s) of one part file of ``count`` rows whose values share their first
        ``n`` characters: read and split in memory up to MEMORY_ROWS rows; a larger file
        is split first (streamed, never read whole) by the first character where its values
        differ."""
        while count > MEMORY_ROWS and n < PREFIX_MAX:
            # every value here has the same first n characters (as named): the groups are
            # by the next one (a tab: the value ended)
            with open(part, encoding="utf-8") as f:
                chars = Counter(line[n] if len(line) > n else "\t" for line in f)
            named = {c: _char_name(c) for c in chars}
            n += 1
            if len(set(named.values())) == 1:
                if "" in named.values():
                    break  # every value ends here: the same value, one page
                continue  # every value the same there: one more character
            base = part.name
            counts: dict[str, int] = {}
            with ExitStack() as stack:
                handles: dict[str, Any] = {}
                for c, k in named.items():
                    if k not in handles:
                        handles[k] = stack.enter_context(open(
                            part.with_name(f"{base}.{k or 'end'}"), "w", encoding="utf-8"))
                    counts[k] = counts.get(k, 0) + chars[c]
                by_char = {c: handles[k] for c, k in named.items()}
                with open(part, encoding="utf-8") as f:
                    for line in f:
                        by_char[line[n - 1] if len(line) >= n else "\t"].write(line)
            part.unlink()
            for k in sorted(handles):
                # the values that end here are one value: not split further
                self._pages(folder, part.with_name(f"{base}.{k or 'end'}"), counts[k],
                            n if k else PREFIX_MAX, made)
            return
        lines: list[str] = []
        with open(part, encoding="utf-8") as f:
            for line in f:
                if len(lines) == MEMORY_ROWS:
                    break  # one value in more runs than that: the first of them
                lines.append(line.rstrip("\n"))
        lines.sort()
        self._split(folder, lines, count, n, made)

    def _split(self, folder: str, lines: list[str], count: int, n: int,
               made: dict[str, int]) -> None:
        """Pages of at most PAGE_ROWS rows from sorted ``lines`` sharing ``n`` characters."""
        while len(lines) > PAGE_ROWS and n < PREFIX_MAX:
            groups: dict[str, list[str]] = {}
            names: dict[str, str] = {}
            for line in lines:
                c = line[n] if len(line) > n else "\t"
                k = names.get(c)
                if k is None:
                    k = names[c] = _char_name(c)
                g = groups.get(k)
                if g is None:
                    g = groups[k] = []
                g.append(line)
            n += 1
            if len(groups) == 1:
                if "" in groups:
                    break
                continue
            for k in sorted(groups):
                self._split(folder, groups[k], len(groups[k]), n if k else PREFIX_MAX, made)
            return
        name = prefix_name(lines[0].partition("\t")[0], n) if lines else "_"
        made[name] = max(count, len(lines))
        _write_search_page(self.out / f"fleet-{folder}" / f"{name}.html", folder, name,
                           lines[:PAGE_MAX], made[name])


def _char_name(c: str) -> str:
    """A value's next character as a page name's (a tab: the value ended, "")."""
    return "" if c == "\t" else _SAFE.sub("_", c.upper())


_HEAD = ("<!doctype html><html><head><meta charset='utf-8'><meta http-equiv="
         "'Content-Security-Policy' content=\"default-src 'none'; style-src "
         "'unsafe-inline'\"><title>{title}</title><style>" + fleet.CSS + "</style></head>"
         "<body><h1>{title}</h1>")
_SEARCH_HEAD = ("when", "bench", "serial", "model", "firmware", "run", "state", "steady IOPS",
                "grade", "capacity check", "lot", "asset tag")


def _iops_cell(d: dict[str, str]) -> str:
    if not d["steady_iops"]:
        return ""
    return fleet._iops_text(d["steady_iops"], d["steady_iops_stddev"])


def _capacity_text(d: dict[str, str]) -> str:
    verdict = d["authenticity"]
    if not verdict or verdict == "genuine":
        return verdict
    real = d["real_capacity_bytes"]
    holds = f", holds {int(real) / 1e6:,.1f} MB" if real.isdigit() else ""
    return ("FAKE: " if verdict in FAKE_VERDICTS else "") + verdict + holds


def _write_search_page(path: Path, folder: str, name: str, lines: list[str],
                       count: int) -> None:
    """One search page: the rows' cells escaped for HTML all at once (they hold no control
    character: a tab ends a cell, a line a row)."""
    e = fleet._e
    title = f"ssdbench fleet: {folder} starting {name.replace('_', '?')}"
    body = "\n".join(line.partition("\t")[2] for line in lines)
    body = html.escape(body, quote=False).replace("\t", "</td><td>").replace(
        "\n", "</td></tr><tr><td>")
    path.write_text("".join((
        _HEAD.replace("{title}", e(title)),
        f"<p class='small'>{count:,} run(s), by {e(folder)}"
        + (f" (the first {len(lines):,} here, every one in fleet.csv)" if count > len(lines)
           else "") + "; "
        "<a href='index.html'>every page</a>, <a href='../fleet.html'>the fleet</a>.</p>",
        "<table><tr>", *(f"<th>{h}</th>" for h in _SEARCH_HEAD), "</tr><tr><td>", body,
        "</td></tr></table></body></html>\n")), encoding="utf-8")


def _write_listing(folder_path: Path, folder: str, pages: dict[str, int]) -> None:
    e = fleet._e
    title = f"ssdbench fleet: every run by {folder}"
    links = "".join(f"<li><a href='{e(name)}.html'>{e(name.replace('_', '?'))}</a> "
                    f"({n})</li>" for name, n in sorted(pages.items()))
    (folder_path / "index.html").write_text(
        _HEAD.replace("{title}", e(title)) + "<p class='small'>By the first characters (upper "
        "case; any other character than A-Z and 0-9 is ?); <a href='../fleet.html'>the "
        f"fleet</a>.</p><ul>{links}</ul></body></html>\n", encoding="utf-8")
