"""The fleet index (docs/lab.md "A year of a large lab"): the fleet build keeps, in the
store itself, one file per bench and day of its run ids, ``_fleet/<bench>/<YYYYMMDD>.csv.gz``,
of its finished runs' rows (the fields the page needs) and, for each, the run.json key and
the version it was read at (its size and mtime in a folder, its ETag in S3): a build lists
the store, reads only the run.json files that are new or changed since, drops the rows of
runs gone, and writes back the index of every bench and day that changed. What each bench
and day gave the page (its fleet.csv rows, summaries, newest runs, search rows) is kept in
the output folder's ``_fleet/.cache/`` with the digest of its listing: a bench and day
listed as before is copied, not read, and only the search pages whose rows changed are
written again (never a million rows in memory).

An S3 store is not listed whole: each bench's uploader writes what it sent,
``_fleet/sent/<bench>/<YYYYMMDD>.txt``, and :class:`StoreSource` takes each bench's listing
from those files and the one it kept in ``_fleet/.cache/sent/`` (docs/lab.md "S3 at a
million runs").

The index is untrusted input like every file of the store (docs/security.md): one that is
not exactly what this module writes (its first line and header, every row of the right
width, for a run.json of its own bench, no control character, at most INDEX_LIMIT bytes
unpacked) is refused with a note on the page and rebuilt from the store.
"""

from __future__ import annotations

import csv
import gzip
import hashlib
import heapq
import html
import io
import json
import operator
import os
import re
import stat
import time
import zlib
from array import array
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, suppress
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any, Protocol

from ssdbench.grade.capacity import FAKE_VERDICTS
from ssdbench.lab import fleet, sentfile
from ssdbench.lab.sentfile import SENT_DIR
from ssdbench.lab.store import HttpStore
from ssdbench.lab.storekeys import KEYS_DIR
from ssdbench.untrusted import csv_cell, visible

INDEX_DIR = "_fleet"
# the folders beside the benches that are none: the index, and the keys by field
# (lab/storekeys.py: a small object per run, never a run)
NOT_BENCHES = frozenset({INDEX_DIR, KEYS_DIR})
FIRST_LINE = "# ssdbench fleet index 2"
PAGE_COLUMNS = ("host_machine", "host_controller", "lot", "asset_tag")
# lot and asset_tag are fleet.csv's too: the index keeps its columns (and their order)
ROW_COLUMNS = tuple(c for c in fleet.CSV_COLUMNS if c not in PAGE_COLUMNS) + PAGE_COLUMNS
INDEX_COLUMNS = ("key", "tag", *ROW_COLUMNS)
# a run in one of these states is finished: its row is kept; any other is read again
FINAL_STATES = frozenset({"done", "failed", "cancelled", "interrupted"})
INDEX_LIMIT = 512 << 20  # bytes of one bench's index, unpacked
NEWEST = 500  # runs in fleet.html's table
_CONTROL = re.compile("[\x00-\x09\x0b-\x1f\x7f-\x9f\u200b-\u200f\u2028-\u202e\u2060-\u2069"
                      "\ufeff]")
_FORMULA_AT_CELL = re.compile(r'(?:^|,)"?[=+\-@]', re.M)
# in a folder listing's text: an empty name, a "." or ".." name or path component
_BENCH = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,127}$")
# fleet.csv's cells of an index row, in fleet.csv's order (its lot and asset_tag are at the
# index row's end)
_CSV_CELLS = operator.itemgetter(*(2 + ROW_COLUMNS.index(c) for c in fleet.CSV_COLUMNS))


class Source(Protocol):
    """Where the runs are (a folder or a store) and where the index is kept."""

    name: str

    def benches(self) -> Iterator[tuple[str, dict[str, str]]]:
        """Each bench's wanted files (fleet.WANTED), key (``<bench>/...``) -> version."""
        ...

    def loader(self, key: str) -> fleet.Loader: ...

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]: ...

    def read_index(self, segment: str) -> bytes | None:
        """The index file of ``<bench>/<day>`` (segment_name), None when there is none."""
        ...

    def write_index(self, segment: str, data: bytes) -> None: ...


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
                           and e.name not in NOT_BENCHES)
        for bench in names:  # links to folders are not followed
            cache, since = (self._read_dirs(bench) if self.use_dirs and _BENCH.match(bench)
                            else ({}, set()))
            again: list[str] = []  # folders listed again (or first)
            found: dict[str, str] = {}
            dirs: dict[str, list[Any]] = {}
            # (folder, in a session folder listed as it was: a run's folder, taken as listed)
            todo: list[tuple[str, bool]] = [(bench, False)]
            root = str(self.root) + "/"
            now_ns = time.time_ns()
            while todo:
                rel, trusted = todo.pop()
                old = cache.get(rel)
                if trusted and old is not None and old[0]:
                    # not stat'ed again: a finished run's run.json is read once (a run
                    # folder replaced, or a file added, changes its session folder)
                    mtime, subdirs, files = old
                    same = True
                else:
                    try:
                        st = os.stat(path := root + rel, follow_symlinks=False)
                    except OSError:
                        continue
                    if not stat.S_ISDIR(st.st_mode):
                        continue
                    mtime = st.st_mtime_ns
                    same = False
                    if old is not None and old[0] == mtime:
                        subdirs, files, same = old[1], old[2], True
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
                    if now_ns - mtime < RACY_NS:
                        mtime = 0  # listed again next time
                    if not same or mtime == 0:
                        again.append(rel)
                dirs[rel] = [mtime, subdirs, files]
                for name, tag in files.items():
                    found[f"{rel}/{name}"] = tag
                if subdirs:
                    inside = same and rel.count("/") >= 2  # a session folder or deeper
                    todo.extend((f"{rel}/{d}", inside) for d in subdirs)
            if found and self.use_dirs and _BENCH.match(bench):
                new = sum(1 for rel in again if rel not in cache)
                since.update(again)
                if not cache or len(cache) != len(dirs) - new or 4 * len(since) > len(dirs):
                    self._write_dirs(bench, dirs)  # folders gone, or many listed again
                elif again:  # only what was listed again: the listing stays
                    self._write_dirs(bench, {rel: dirs[rel] for rel in since if rel in dirs},
                                     "dirs.new")
            yield bench, found

    def _dirs_path(self, bench: str, part: str = "dirs") -> Path:
        return self.index / f"{bench}.{part}.json.gz"

    def _read_dirs(self, bench: str) -> tuple[dict[str, list[Any]], set[str]]:
        """The folders listed last time (the listing, then the folders listed again since,
        ``<bench>.dirs.new.json.gz``), and those of the latter; {} (and a note) when a file
        is not what :meth:`_write_dirs` writes."""
        from ssdbench import jsonfile

        dirs: dict[str, list[Any]] = {}
        for part in ("dirs", "dirs.new"):
            name = f"{INDEX_DIR}/{bench}.{part}.json.gz"
            try:
                blob = jsonfile.read_bytes(self._dirs_path(bench, part), limit=INDEX_LIMIT,
                                           follow=False)
            except FileNotFoundError:
                if part == "dirs":
                    return {}, set()
                return dirs, set()
            except OSError as exc:
                self.notes.append(f"{name}: cannot be read, the folder listed again: "
                                  f"{visible(exc)}")
                return {}, set()
            try:
                found = self._unpack_dirs(bench, blob)
            except (zlib.error, EOFError, ValueError, TypeError, RecursionError) as exc:
                self.notes.append(f"{name}: refused, the folder listed again: "
                                  f"{visible(exc)[:200]}")
                return {}, set()
            dirs.update(found)
        return dirs, set(found)

    @staticmethod
    def _unpack_dirs(bench: str, blob: bytes) -> dict[str, list[Any]]:
        unz = zlib.decompressobj(wbits=31)
        raw = unz.decompress(blob, INDEX_LIMIT)
        if unz.unconsumed_tail:
            raise ValueError("too large")
        # checked as text first (no escape: names are written plain), then the shape
        text = raw.decode("utf-8")
        if "\\" in text or (not text.isprintable() and _CONTROL.search(text)):
            raise ValueError("an escape or a control character in it")
        doc = json.loads(text, parse_constant=fleet._no_constant)
        if not isinstance(doc, dict) or doc.get("format") != DIRS_FIRST:
            raise ValueError("not a folder listing")
        dirs = doc.get("dirs")
        if not isinstance(dirs, dict):
            raise ValueError("no folders")
        prefix = bench + "/"
        wanted = frozenset(fleet.WANTED)
        for rel, entry in dirs.items():
            if (type(entry) is not list or len(entry) != 3 or type(entry[0]) is not int
                    or type(entry[1]) is not list or type(entry[2]) is not dict
                    or not (rel == bench or rel.startswith(prefix))
                    or "/../" in rel or "/./" in rel or "//" in rel
                    or rel.endswith(("/..", "/."))
                    or not entry[2].keys() <= wanted):
                raise ValueError(f"a folder entry that is not one: {visible(rel)[:80]}")
            sub = entry[1]
            # a sub-folder is a name: not empty, not . or .., no /
            if sub and ("" in sub or "." in sub or ".." in sub or "/" in "\0".join(sub)):
                raise ValueError(f"a sub-folder that is not a name in {visible(rel)[:80]}")
        return dirs

    def _write_dirs(self, bench: str, dirs: dict[str, list[Any]], part: str = "dirs"
                    ) -> None:
        from ssdbench.results import atomic

        data = gzip.compress(json.dumps({"format": DIRS_FIRST, "dirs": dirs},
                                        separators=(",", ":")).encode(), 1, mtime=0)
        try:  # not fsync'ed: a listing cut short is refused, and the folder listed again
            atomic.inside(self.index.parent, path := self._dirs_path(bench, part))
            path.parent.mkdir(parents=True, exist_ok=True)
            tmp = path.with_name(path.name + ".part")
            _put(tmp, data)
            os.replace(tmp, path)
            if part == "dirs":  # the whole listing: nothing listed again since
                self._dirs_path(bench, "dirs.new").unlink(missing_ok=True)
        except OSError as exc:
            self.notes.append(f"{INDEX_DIR}/{bench}.{part}.json.gz: not saved "
                              f"({visible(exc)})")

    def loader(self, key: str) -> fleet.Loader:
        return fleet._file(self.root / key)

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]:
        return {k: self.loader(k) for k in keys}

    def _index(self, segment: str) -> Path:
        return self.index / f"{segment}.csv.gz"

    def read_index(self, segment: str) -> bytes | None:
        from ssdbench import jsonfile

        try:
            return jsonfile.read_bytes(self._index(segment), limit=INDEX_LIMIT, follow=False)
        except FileNotFoundError:
            return None

    def write_index(self, segment: str, data: bytes) -> None:
        from ssdbench.results import atomic

        atomic.write_bytes(self._index(segment), data, root=self.index.parent)


SENT_LIMIT = 64 << 20  # bytes of one sent file
SENT_FORMAT = "ssdbench fleet sent 1"
_SENT_DAY = re.compile(r"^([0-9]{8})\.txt$")


class SentFileError(ValueError):
    """A sent file (``_fleet/sent/<bench>/<day>.txt``) that is not what the uploader
    writes."""


def parse_sent(blob: bytes, limit: int | None = None) -> dict[str, str]:
    """A sent file's ``{rel: tag}`` (a later line for the same key wins); SentFileError
    naming what is wrong: the whole file is refused. ``limit``: SENT_LIMIT bytes, unless
    given (a bench's listing kept in the cache: INDEX_LIMIT)."""
    limit = SENT_LIMIT if limit is None else limit
    if len(blob) > limit:
        raise SentFileError(f"larger than {limit:,} bytes")
    try:
        text = blob.decode("utf-8")
    except UnicodeDecodeError:
        raise SentFileError("not UTF-8 text") from None
    bad = sentfile.BAD.search(text)
    if bad:
        raise SentFileError(f"a control or invisible character or a backslash at "
                            f"{bad.start()}")
    if sentfile.LINES.fullmatch(text) is None:
        at = sentfile.LINES.match(text)
        line = text[at.end() if at else 0:].partition("\n")[0]
        raise SentFileError("a line that is not <file below the bench>\\t<ETag> of a "
                            f"file the build reads: {visible(line)[:120]!r}")
    return dict(line.split("\t") for line in text.splitlines())


class StoreSource:
    """The store itself (S3 or WebDAV): listed once, new run.json fetched in parallel; the
    index under ``<prefix>/_fleet/``. A version is the S3 ETag; a WebDAV listing gives
    none (a finished run's run.json is not sent again: it is read once).

    An S3 store is not listed whole (docs/lab.md "S3 at a million runs"): each bench's
    uploader writes what it sent, ``_fleet/sent/<bench>/<YYYYMMDD>.txt``; the build lists
    the benches (one folder listing), the sent files from the newest one it read on, reads
    those whose ETag changed and applies their lines to the bench's listing kept in the
    output folder (``_fleet/.cache/sent/``). A bench seen for the first time, one with no
    sent file (an older uploader), one whose sent file is refused (untrusted input:
    :func:`parse_sent`), and every bench with ``--no-index``, is listed whole."""

    def __init__(self, store: Any, prefix: str, workers: int = 8) -> None:
        self.store = store
        self.base = prefix.strip("/") + "/" if prefix.strip("/") else ""
        self.name = "the store"
        self.workers = workers
        self.notes: list[str] = []
        self.cache: Path | None = None  # begin(): where each bench's listing is kept
        self.use_index = True
        self.listed_whole: list[str] = []  # benches listed whole by the last benches()
        self._pool: ThreadPoolExecutor | None = None  # fetch()'s, until close()

    def close(self) -> None:
        if self._pool is not None:
            self._pool.shutdown(wait=True)
            self._pool = None

    def begin(self, cache: Path, *, use_index: bool) -> None:
        """Called by :func:`build`: the output folder's cache, and whether to use it."""
        self.cache = cache
        self.use_index = use_index

    def _can_skip_listing(self) -> bool:
        return (self.cache is not None and hasattr(self.store, "folders")
                and hasattr(self.store, "tagged_keys"))

    def benches(self) -> Iterator[tuple[str, dict[str, str]]]:
        self.listed_whole = []
        if not self._can_skip_listing():
            yield from self._listed_all({})
            return
        assert self.cache is not None
        _folder(self.cache)
        sent_top = self.base + SENT_DIR + "/"
        if not self.use_index:  # everything listed (deletions seen); the sent files first
            days: dict[str, dict[str, str]] = {}
            for key, tag in self.store.tagged_keys(sent_top).items():
                bench, _, name = key[len(sent_top):].partition("/")
                m = _SENT_DAY.match(name)
                if _BENCH.match(bench) and m:
                    days.setdefault(bench, {})[m.group(1)] = tag
            yield from self._listed_all(days)
            return
        names = [f[len(self.base):-1] for f in self.store.folders(self.base)]
        sent = {f[len(sent_top):-1] for f in self.store.folders(sent_top)}
        kept: set[str] = set()
        for bench in sorted(n for n in names if n and n not in NOT_BENCHES):
            if bench in sent and _BENCH.match(bench):
                kept.add(self._cache_name(bench))
                yield bench, self._from_sent(bench, sent_top + bench + "/")
            else:  # an older uploader: the bench listed whole
                yield bench, self._listed_bench(bench)
        self._prune(kept)

    def _listed_all(self, days: dict[str, dict[str, str]]
                    ) -> Iterator[tuple[str, dict[str, str]]]:
        """Every key of the prefix listed (today's way); the listing of each bench with
        sent files kept with their ETags (``days``, listed before)."""
        tagged = getattr(self.store, "tagged_keys", None)
        if tagged:
            listed = tagged(self.base)
        elif isinstance(self.store, HttpStore):  # not the index's folders, nor _keys'
            listed = dict.fromkeys(self.store.keys(self.base, skip=NOT_BENCHES), "")
        else:
            listed = dict.fromkeys(self.store.keys(self.base), "")
        by_bench: dict[str, dict[str, str]] = {}
        for key, tag in listed.items():
            rel = key[len(self.base):]
            bench, _, rest = rel.partition("/")
            if rest and bench not in NOT_BENCHES and rel.rpartition("/")[2] in fleet.WANTED:
                by_bench.setdefault(bench, {})[rel] = tag
        del listed
        kept: set[str] = set()
        for bench in sorted(by_bench):
            found = by_bench.pop(bench)
            if bench in days:
                kept.add(self._cache_name(bench))
                self._save(bench, found, days[bench])
            yield bench, found
        if self.cache is not None:
            self._prune(kept)

    def _listed_bench(self, bench: str) -> dict[str, str]:
        self.listed_whole.append(bench)
        found: dict[str, str] = {}
        start = len(self.base)
        for key, tag in self.store.tagged_keys(f"{self.base}{bench}/").items():
            if key.rpartition("/")[2] in fleet.WANTED:
                found[key[start:]] = tag
        return found

    def _from_sent(self, bench: str, folder: str) -> dict[str, str]:
        """A bench's listing: the one kept, with the lines of its sent files changed since
        applied; listed whole (and kept) when there is none, or a sent file is refused."""
        old = self._load(bench)
        start_after = f"{folder}{max(old[1])}" if old and old[1] else None
        # only the newest day read and later can change: the uploader appends to today's
        listed = self.store.tagged_keys(folder, start_after)
        days: dict[str, str] = {}
        for key, tag in listed.items():
            name = key[len(folder):]
            m = _SENT_DAY.match(name)
            if m is None:
                self.notes.append(f"{SENT_DIR}/{bench}/{visible(name)[:80]}: refused, "
                                  f"listed instead: not a <YYYYMMDD>.txt")
                return self._relisted(bench, old)
            days[m.group(1)] = tag
        if old is None:  # first seen: its listing now covers every line sent so far
            found = self._listed_bench(bench)
            self._save(bench, found, days)
            return found
        found, seen = old
        changed = sorted(d for d, t in days.items() if seen.get(d) != t)
        prefix = bench + "/"
        for day in changed:
            name = f"{SENT_DIR}/{bench}/{day}.txt"
            try:
                # at most SENT_LIMIT + 1 bytes read (a Range): larger is refused
                lines = parse_sent(bytes(self.store.get(folder + f"{day}.txt",
                                                        limit=SENT_LIMIT)))
            except SentFileError as exc:
                self.notes.append(f"{name}: refused, listed instead: {exc}")
                return self._relisted(bench, old)
            except Exception as exc:  # StoreError: gone since listed, unreachable
                self.notes.append(f"{name}: cannot be read, listed instead: {visible(exc)}")
                return self._relisted(bench, old)
            for rel, tag in lines.items():
                found[prefix + rel] = tag
            seen[day] = days[day]
        if changed:
            self._save(bench, found, seen)
        return found

    def _relisted(self, bench: str, old: tuple[dict[str, str], dict[str, str]] | None
                  ) -> dict[str, str]:
        """The bench listed whole; the days seen stay as read (the lines of the one refused
        are not taken: its next version is read again)."""
        seen = dict(old[1]) if old else {}
        folder = f"{self.base}{SENT_DIR}/{bench}/"
        try:  # every day file's ETag now, listed before the bench
            for key, tag in self.store.tagged_keys(folder).items():
                m = _SENT_DAY.match(key[len(folder):])
                if m:
                    seen[m.group(1)] = tag
        except Exception as exc:  # the listing below fails the same way, or not
            self.notes.append(f"{SENT_DIR}/{bench}/: cannot be listed: {visible(exc)}")
        found = self._listed_bench(bench)
        self._save(bench, found, seen)
        return found

    # ---- each bench's listing, kept in the output folder ----

    @staticmethod
    def _cache_name(bench: str) -> str:
        h = hashlib.sha1(bench.encode("utf-8", "surrogateescape"), usedforsecurity=False)
        return h.hexdigest()[:16]

    def _load(self, bench: str) -> tuple[dict[str, str], dict[str, str]] | None:
        """The listing kept for ``bench`` ({key: tag}, {day: sent file's ETag}); None when
        there is none, or it is not what :meth:`_save` writes."""
        assert self.cache is not None
        name = self._cache_name(bench)
        try:
            head = json.loads((self.cache / f"{name}.json").read_bytes())
        except FileNotFoundError:
            return None  # first seen (or its listing not saved)
        except (OSError, ValueError):
            head = None
        try:
            blob = (self.cache / f"{name}.tsv").read_bytes()
            if (not isinstance(head, dict) or head.get("v") != SENT_FORMAT
                    or head.get("bench") != bench or head.get("size") != len(blob)
                    or not isinstance(head.get("days"), dict)
                    or not all(_DAY.fullmatch(d) and type(t) is str
                               for d, t in head["days"].items())):
                raise ValueError("not what the build writes")
            rels = parse_sent(blob, INDEX_LIMIT)
        except (OSError, ValueError) as exc:
            self.notes.append(f"{CACHE_DIR}/sent: the listing kept for {visible(bench)[:80]} "
                              f"is refused ({visible(exc)[:120]}): the bench listed whole")
            return None
        prefix = bench + "/"
        return ({prefix + rel: "" if tag == "-" else tag for rel, tag in rels.items()},
                dict(head["days"]))

    def _save(self, bench: str, found: dict[str, str], days: dict[str, str]) -> None:
        assert self.cache is not None
        name = self._cache_name(bench)
        cut = len(bench) + 1
        # a key listed without an ETag (a file put into s3proxy's folder by hand) as "-"
        blob = "".join(f"{k[cut:]}\t{t or '-'}\n" for k, t in found.items()).encode()
        try:
            (self.cache / f"{name}.json").unlink(missing_ok=True)  # written last
            _put(self.cache / f"{name}.tsv", blob)
            _put(self.cache / f"{name}.json", json.dumps(
                {"v": SENT_FORMAT, "bench": bench, "size": len(blob), "days": days}))
        except OSError as exc:
            self.notes.append(f"{CACHE_DIR}/sent: not saved ({visible(exc)}): the bench is "
                              "listed whole next time")

    def _prune(self, kept: set[str]) -> None:
        """The listings of benches no longer there (or not using sent files) go."""
        assert self.cache is not None
        with suppress(OSError):
            for p in self.cache.iterdir():
                if p.name.split(".", 1)[0] not in kept:
                    p.unlink(missing_ok=True)

    def loader(self, key: str) -> fleet.Loader:
        return self.fetch([key])[key]

    def fetch(self, keys: list[str]) -> dict[str, fleet.Loader]:
        def one(key: str) -> fleet.Loader:
            try:
                return fleet._const(self.store.get(self.base + key))
            except Exception as exc:  # StoreError, or a client library's own
                return fleet._failing(f"the store: {exc}")

        if len(keys) == 1:
            return {keys[0]: one(keys[0])}
        if self._pool is None:  # one pool for the build: its threads and connections stay
            self._pool = ThreadPoolExecutor(self.workers, thread_name_prefix="fleet-get")
        return dict(zip(keys, self._pool.map(one, keys), strict=True))

    def read_index(self, segment: str) -> bytes | None:
        from ssdbench.lab.store import StoreError

        key = f"{self.base}{INDEX_DIR}/{segment}.csv.gz"
        try:
            return bytes(self.store.get(key))
        except StoreError as exc:
            if "404" in str(exc) or "NoSuchKey" in str(exc):
                return None
            raise

    def write_index(self, segment: str, data: bytes) -> None:
        self.store.put(f"{self.base}{INDEX_DIR}/{segment}.csv.gz", data,
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


def unpack(bench: str, blob: bytes, day: str | None = None) -> list[tuple[str, ...]]:
    """The rows of ``bench``'s index file (of its runs of ``day``, segment_day, when
    given); IndexFileError naming what is wrong."""
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
                or r[st] not in FINAL_STATES
                or (day is not None and segment_day(r[0]) != day)):
            raise IndexFileError(f"a row that is not one of {bench}'s finished runs: "
                              f"{visible(r[:1])[:120]}")
    return rows


# ---- the build: by segment, one bench's runs of one day ----
#
# A segment is ``<bench>/<day>`` (the day its run ids start with, "other" for a run id
# that does not start with one): its index file is ``_fleet/<bench>/<day>.csv.gz``, and
# what it gave the page (its fleet.csv rows, its part of the summaries, its newest runs,
# its search rows) is kept in the output folder (``_fleet/.cache/``) with the digest of its
# listing (each run.json key and version). A segment listed as it was, and all finished,
# is taken from there whole: a day's new runs are new segments, the others are copied.

CACHE_DIR = "_fleet/.cache"  # beside a folder's index in -o (".cache" is no bench's name)
CACHE_FORMAT = "ssdbench fleet cache 1"
_DAY = re.compile(r"[0-9]{8}")
_STARTED, _SERIAL, _RUN = (2 + ROW_COLUMNS.index(c) for c in ("started", "serial", "run"))
_TOP_AT = tuple(ROW_COLUMNS.index(c) for c in ("started", "bench", "serial", "run"))


def segment_day(key: str) -> str:
    """The day a run key's run id starts with (``<bench>/<serial>/<YYYYMMDD>T…/…``), or
    "other"."""
    parts = key.split("/", 3)
    run_id = parts[2] if len(parts) > 2 else ""
    return run_id[:8] if _DAY.match(run_id) else "other"


def _segment_id(bench: str, day: str) -> str:
    """A file name for the segment (a bench name may be anything a folder is named)."""
    h = hashlib.sha1(bench.encode("utf-8", "surrogateescape"), usedforsecurity=False)
    return f"{h.hexdigest()[:16]}-{day}"


def _put(path: Path, data: bytes | str) -> None:
    """A new file at ``path`` (what was there, a link too, goes first: never written
    through a link planted in the output folder)."""
    path.unlink(missing_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666)
    with open(fd, "wb") as f:
        f.write(data.encode("utf-8") if isinstance(data, str) else data)


def _folder(path: Path) -> None:
    """``path`` a folder of its own (a link there goes)."""
    if path.is_symlink():
        path.unlink()
    path.mkdir(parents=True, exist_ok=True)


def _digest(items: list[tuple[str, str]]) -> str:
    h = hashlib.sha1(CACHE_FORMAT.encode(), usedforsecurity=False)
    h.update("\n".join(f"{k}\t{t}" for k, t in items).encode("utf-8", "surrogateescape"))
    return h.hexdigest()


def _session_of(key: str) -> str:
    """``<bench>/<serial>/<run id>`` of a run.json key (a run in its own folder or not)."""
    parts = key.split("/")[:-1]
    return "/".join(parts[:3])


def _row_tuple(key: str, tag: str, row: dict[str, str]) -> tuple[str, ...]:
    return (key, tag, *(visible(row.get(c, "")) for c in ROW_COLUMNS))


def _run_row(key: str, doc: dict[str, Any], drives: dict[str, dict[str, Any]]
             ) -> dict[str, str]:
    return fleet._row(key, doc, drives)  # its lot and asset_tag included


@dataclass
class Result:
    fleet: fleet.Fleet  # benches, the newest runs, the summary, files left out
    runs: int = 0
    read: int = 0  # run.json files read (not from the index)
    index_notes: list[str] = field(default_factory=list)


def build(source: Source, out: Path, *, now: datetime | None = None,
          silent_after_s: float = fleet.SILENT_AFTER_S, use_index: bool = True,
          newest: int = NEWEST) -> Result:
    """Read ``source`` (through its index and the output folder's cache when
    ``use_index``), write ``out``/fleet.csv and the search pages, and return what
    fleet.html shows (:func:`fleet.fleet_html`)."""
    try:
        return _build(source, out, now=now, silent_after_s=silent_after_s,
                      use_index=use_index, newest=newest)
    finally:
        close = getattr(source, "close", None)
        if close is not None:  # a store's fetch threads end with the build
            close()


def _build(source: Source, out: Path, *, now: datetime | None, silent_after_s: float,
           use_index: bool, newest: int) -> Result:
    from ssdbench.results import atomic

    now = now or datetime.now(UTC)
    summary = fleet.Summary()
    benches: dict[str, fleet.Bench] = {}
    skipped: list[str] = []
    notes: list[str] = []
    atomic.inside(out, out / "fleet.csv")  # never through a link there (OutsideRoot)
    cache = _Cache(out / CACHE_DIR, fresh=not use_index)
    begin = getattr(source, "begin", None)
    if begin is not None:  # a store: each bench's listing is kept in the cache too
        begin(cache.root / "sent", use_index=use_index)
    search = SearchPages(out, cache.root, fresh=not use_index)
    csv_tmp = out / ".fleet.csv.part"
    csv_tmp.unlink(missing_ok=True)  # left by a crash (or planted): a link goes
    fd = os.open(csv_tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                 0o666)
    total = read = 0
    tops: list[tuple[tuple[str, ...], str]] = []  # each segment's newest run, its id
    with open(fd, "wb") as csv_file:
        head = io.StringIO()
        csv.writer(head, lineterminator="\n").writerow(fleet.CSV_COLUMNS)
        csv_file.write(head.getvalue().encode())
        for bench, listed in source.benches():
            _bench_head(source, listed, now=now, silent_after_s=silent_after_s,
                        benches=benches, skipped=skipped)
            drive_tags = {k.rpartition("/")[0]: t for k, t in listed.items()
                          if k.endswith("/drive.json")}
            by_day: dict[str, list[tuple[str, str]]] = {}
            for key, tag in listed.items():
                if key.endswith("/run.json"):
                    parts = key.split("/", 3)
                    if len(parts) == 4:  # <bench>/<serial>/<run id>/[<run>/]run.json
                        run_id = parts[2]
                        day = run_id[:8] if _DAY.match(run_id) else "other"
                        group = by_day.get(day)
                        if group is None:
                            group = by_day[day] = []
                        session = f"{parts[0]}/{parts[1]}/{run_id}"
                        group.append((key, f"{tag}|{drive_tags.get(session, '')}"))
            if by_day and bench not in benches:
                benches[bench] = fleet.Bench(bench)
            for day in sorted(by_day, reverse=True):
                items = sorted(by_day.pop(day))
                segid, digest = _segment_id(bench, day), _digest(items)
                meta = cache.meta(segid, digest) if search.current(segid, digest) else None
                if meta is None:
                    rows, n_read = _segment_rows(source, bench, day, items, drive_tags,
                                                 use_index=use_index, skipped=skipped,
                                                 notes=notes)
                    read += n_read
                    meta, dicts = cache.make(segid, digest, rows, newest)
                    search.add(segid, digest, dicts)
                    del rows, dicts
                else:
                    search.keep(segid, digest)
                _merge_summary(summary, meta["summary"])
                total += meta["runs"]
                cache.copy_csv(segid, csv_file)
                if meta["top"]:
                    tops.append((tuple(meta["top"]), segid))
    newest_rows = [dict(zip(ROW_COLUMNS, r, strict=True))
                   for r in _newest(cache, tops, newest, notes)]
    if not benches:  # nothing to show: nothing written (the command says so)
        csv_tmp.unlink(missing_ok=True)
        search.discard()
        cache.discard()
        return Result(fleet.Fleet({}, [], now.strftime("%Y-%m-%dT%H:%M:%SZ"), skipped), 0, 0)
    summary.search = search.finish()
    cache.prune()
    os.replace(csv_tmp, out / "fleet.csv")
    atomic.fsync_dir(out)
    notes.extend(getattr(source, "notes", ()))
    notes.extend(cache.notes)
    result = fleet.Fleet(benches, newest_rows, now.strftime("%Y-%m-%dT%H:%M:%SZ"),
                         skipped + notes, summary=summary, total_runs=total)
    return Result(result, total, read, notes)


def _newest(cache: _Cache, tops: list[tuple[tuple[str, ...], str]], newest: int,
            notes: list[str]) -> list[tuple[str, ...]]:
    """The ``newest`` runs of the fleet, newest first: the segments' own newest runs,
    read from the segments whose newest run is newer than the oldest kept so far."""
    heap: list[tuple[tuple[str, ...], tuple[str, ...]]] = []
    if newest <= 0:
        return []
    for first, segid in sorted(tops, reverse=True):
        if len(heap) == newest and first < heap[0][0]:
            break  # this segment's newest run, and so every other run of the rest, older
        for r in cache.top(segid):
            item = (tuple(r[i] for i in _TOP_AT), r)
            if len(heap) < newest:
                heapq.heappush(heap, item)
            elif item > heap[0]:
                heapq.heapreplace(heap, item)
    return [r for _k, r in sorted(heap, reverse=True)]


def _bench_head(source: Source, listed: dict[str, str], *, now: datetime,
                silent_after_s: float, benches: dict[str, fleet.Bench],
                skipped: list[str]) -> None:
    """A bench's status.json and its erase records with their chain: read every time (a
    chain is checked whole)."""
    entries = source.fetch([k for k in listed if k.rpartition("/")[2] in (
        "status.json", "erase-record.json", "record-chain.json")])
    head = fleet.build(entries, now=now, silent_after_s=silent_after_s)
    skipped.extend(head.skipped)
    benches.update(head.benches)


def _segment_rows(source: Source, bench: str, day: str, items: list[tuple[str, str]],
                  drive_tags: dict[str, str], *, use_index: bool, skipped: list[str],
                  notes: list[str]) -> tuple[list[tuple[str, ...]], int]:
    """One segment's rows: from its index where the run.json is the one indexed, the others
    read (with their drive.json); its index written back when it changed."""
    name = f"{bench}/{day}"
    indexed: dict[str, tuple[str, ...]] = {}
    use_index = use_index and bool(_BENCH.match(bench))
    if use_index:
        try:
            blob = source.read_index(name)
            if blob is not None:
                indexed = {r[0]: r for r in unpack(bench, blob, day)}
        except IndexFileError as exc:
            notes.append(f"{INDEX_DIR}/{name}.csv.gz: refused, rebuilt from the store: {exc}")
        except Exception as exc:  # StoreError, OSError: read it all again
            notes.append(f"{INDEX_DIR}/{name}.csv.gz: cannot be read, rebuilt from the "
                         f"store: {visible(exc)}")
    rows: list[tuple[str, ...]] = []
    todo: list[tuple[str, str]] = []
    for key, tag in items:
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
    if use_index and changed:
        st = INDEX_COLUMNS.index("state")
        keep = sorted(r for r in rows if r[st] in FINAL_STATES)
        try:
            source.write_index(name, pack(bench, keep))
        except Exception as exc:  # a read-only store or folder: the next build reads again
            notes.append(f"{INDEX_DIR}/{name}.csv.gz: not saved ({visible(exc)}): the next "
                         "build reads these runs again")
    return rows, len(todo)


def _write_csv(writer: Any, rows: list[tuple[str, ...]]) -> None:
    """fleet.csv's rows of one segment: the cells were made visible when indexed; a cell
    that starts like a formula gets its ``'`` (untrusted.csv_cell), checked per cell only
    when one of them might."""
    sample = "\n".join(",".join(_CSV_CELLS(r)) for r in rows)
    if _FORMULA_AT_CELL.search(sample):
        writer.writerows(tuple(csv_cell(c) for c in _CSV_CELLS(r)) for r in rows)
    else:
        writer.writerows(_CSV_CELLS(r) for r in rows)


def _summary_doc(s: fleet.Summary) -> dict[str, Any]:
    return {"benches": s.benches, "models": s.models, "lots": s.lots,
            "iops": [[n, r, v.tolist()] for (n, r), v in s.iops.items()],
            "lot_iops": [[n, r, v.tolist()] for (n, r), v in s.lot_iops.items()]}


def _summary_ok(doc: object) -> bool:
    """A segment's summary as :func:`_summary_doc` writes it (the cache is checked before
    any of it is added)."""
    if not isinstance(doc, dict):
        return False
    for name in ("benches", "models", "lots"):
        table = doc.get(name)
        if not isinstance(table, dict) or not all(
                type(c) is list and len(c) == 4 and all(type(x) is int for x in c)
                for c in table.values()):
            return False
    for name in ("iops", "lot_iops"):
        table = doc.get(name)
        if not isinstance(table, list) or not all(
                type(e) is list and len(e) == 3 and type(e[0]) is str and type(e[1]) is str
                and type(e[2]) is list and all(type(x) is float for x in e[2])
                for e in table):
            return False
    return True


def _merge_summary(into: fleet.Summary, doc: dict[str, Any]) -> None:
    for name in ("benches", "models", "lots"):
        table: dict[str, list[int]] = getattr(into, name)
        for k, c in doc[name].items():
            t = table.get(k)
            if t is None:
                table[k] = list(c)
            else:
                t[0] += c[0]
                t[1] += c[1]
                t[2] += c[2]
                t[3] += c[3]
    for name in ("iops", "lot_iops"):
        values: dict[tuple[str, str], array[float]] = getattr(into, name)
        for n, r, vals in doc[name]:
            a = values.get((n, r))
            if a is None:
                a = values[(n, r)] = array("d")
            a.extend(vals)


class _Cache:
    """``<out>/_fleet/.cache/seg/<segment id>.{json,csv,top.json}``: what each segment gave
    the page, with the digest of the listing it was made from. It is this command's own
    output (in -o, like fleet.csv): a file that is not what it writes is made again."""

    def __init__(self, root: Path, *, fresh: bool) -> None:
        import shutil

        self.root = root
        self.created = not root.exists()
        self.parent_created = not root.parent.exists()
        if root.is_symlink() or (fresh and root.exists()):
            if root.is_symlink():
                root.unlink()
            else:
                shutil.rmtree(root)
        self.seg = root / "seg"
        _folder(root)
        _folder(self.seg)
        self.used: set[str] = set()
        self.notes: list[str] = []

    def meta(self, segid: str, digest: str) -> dict[str, Any] | None:
        """The segment's cached part when made from this listing and every run in it
        finished; None otherwise."""
        try:
            doc = json.loads((self.seg / f"{segid}.json").read_bytes())
        except (OSError, ValueError):
            return None
        if (not isinstance(doc, dict) or doc.get("v") != CACHE_FORMAT
                or doc.get("digest") != digest or doc.get("final") is not True
                or type(doc.get("runs")) is not int or not _summary_ok(doc.get("summary"))
                or not (doc.get("top") is None or (
                    type(doc["top"]) is list and len(doc["top"]) == len(_TOP_AT)
                    and all(type(x) is str for x in doc["top"])))
                or not (self.seg / f"{segid}.csv").is_file()):
            return None
        self.used.add(segid)
        return doc

    def make(self, segid: str, digest: str, rows: list[tuple[str, ...]], newest: int
             ) -> tuple[dict[str, Any], list[dict[str, str]]]:
        """The segment's part made from its rows, and kept; with its rows as dicts."""
        (self.seg / f"{segid}.json").unlink(missing_ok=True)  # written last, when all is
        rows.sort(key=lambda r: (r[_STARTED], r[_SERIAL], r[_RUN], r[0]), reverse=True)
        buf = io.StringIO()
        _write_csv(csv.writer(buf, lineterminator="\n"), rows)
        _put(self.seg / f"{segid}.csv", buf.getvalue())
        del buf
        part = fleet.Summary()
        dicts = [dict(zip(ROW_COLUMNS, r[2:], strict=True)) for r in rows]
        for d in dicts:
            part.add(d)
        top = heapq.nlargest(max(newest, 0), (
            (tuple(r[2 + i] for i in _TOP_AT), r[2:]) for r in rows))
        st = INDEX_COLUMNS.index("state")
        meta = {"v": CACHE_FORMAT, "digest": digest,
                "final": all(r[st] in FINAL_STATES for r in rows), "runs": len(rows),
                "top": list(top[0][0]) if top else None, "summary": _summary_doc(part)}
        _put(self.seg / f"{segid}.top.json", json.dumps([list(r) for _k, r in top]))
        _put(self.seg / f"{segid}.json", json.dumps(meta))
        self.used.add(segid)
        return meta, dicts

    def copy_csv(self, segid: str, into: Any) -> None:
        import shutil

        with open(self.seg / f"{segid}.csv", "rb") as f:
            shutil.copyfileobj(f, into, 1 << 20)

    def top(self, segid: str) -> list[tuple[str, ...]]:
        width = len(ROW_COLUMNS)
        try:
            doc = json.loads((self.seg / f"{segid}.top.json").read_bytes())
            if not isinstance(doc, list) or not all(
                    type(r) is list and len(r) == width and all(type(c) is str for c in r)
                    for r in doc):
                raise ValueError("not a list of rows")
        except (OSError, ValueError) as exc:
            (self.seg / f"{segid}.json").unlink(missing_ok=True)  # made again next time
            self.notes.append(f"{CACHE_DIR}: the newest runs of a segment cannot be read "
                              f"({visible(exc)[:120]}): left out of the newest runs, made "
                              "again by the next build")
            return []
        return [tuple(r) for r in doc]

    def discard(self) -> None:
        """Nothing built: the cache goes when this build made it."""
        import shutil

        if self.created:
            shutil.rmtree(self.root, ignore_errors=True)
        if self.parent_created:
            with suppress(OSError):
                self.root.parent.rmdir()

    def prune(self) -> None:
        """The files of segments no longer listed go."""
        for p in self.seg.iterdir():
            if p.name.split(".", 1)[0] not in self.used:
                p.unlink(missing_ok=True)


# ---- search pages: every run, by serial, asset tag and lot ----

SEARCH_KEYS = (("serial", "serials"), ("asset_tag", "asset-tags"), ("lot", "lots"))
PAGE_ROWS = 10_000  # a prefix page with more is split by one more character
PREFIX_MAX = 16  # characters: a page of values the same so far is not split further
PAGE_MAX = 20000  # rows on one page (the rest: fleet.csv)
SEARCH_FORMAT = "ssdbench fleet search 1"
_SAFE = re.compile(r"[^A-Z0-9]")


def _char_name(c: str) -> str:
    u = c.upper()
    return u if len(u) == 1 and ("A" <= u <= "Z" or "0" <= u <= "9") else "_"


def page_key(value: str) -> str:
    """``value`` as page names spell it, one character for one: upper case, anything but
    A-Z and 0-9 as ``_`` (a case-blind file system, a hostile serial)."""
    if value.isascii() and value.isalnum():
        return value.upper()
    return "".join(_char_name(c) for c in value)


def prefix_name(value: str, n: int) -> str:
    """The file name of the search page of ``value``'s first ``n`` characters."""
    return page_key(value[:n]) or "_"


def layout(counts: dict[str, int]) -> list[tuple[str, int, str]]:
    """The search pages of one folder from its values' counts (by page_key): each page's
    name, runs and first page key, in order. Values are grouped by their first two
    characters, a group of more than PAGE_ROWS runs is split by one more character (up to
    PREFIX_MAX; the values that end there are a page of their own). A function of the
    counts alone: an incremental build and a full one make the same pages."""
    keys = sorted(k for k, n in counts.items() if n > 0)
    pages: list[tuple[str, int, str]] = []

    def split(lo: int, hi: int, n: int) -> None:
        total = sum(counts[k] for k in keys[lo:hi])
        while total > PAGE_ROWS and n < PREFIX_MAX:
            groups: list[tuple[int, int, bool]] = []  # lo, hi, the values end at n
            i = lo
            while i < hi:
                ends = len(keys[i]) <= n
                c = "" if ends else keys[i][n]
                j = i + 1
                while j < hi and (len(keys[j]) <= n if ends else
                                  len(keys[j]) > n and keys[j][n] == c):
                    j += 1
                groups.append((i, j, ends))
                i = j
            n += 1
            if len(groups) == 1:
                if groups[0][2]:
                    break  # one value: one page
                continue
            for glo, ghi, ends in groups:
                split(glo, ghi, PREFIX_MAX if ends else n)
            return
        pages.append((keys[lo][:n] or "_", total, keys[lo]))

    i = 0
    while i < len(keys):
        j = i + 1
        while j < len(keys) and keys[j][:2] == keys[i][:2]:
            j += 1
        split(i, j, 2)
        i = j
    return pages


class SearchPages:
    """``fleet-<what>/<prefix>.html`` for the serial, the asset tag and the lot of every
    run. Every run's search row is kept, sorted, in ``_fleet/.cache/search-<what>.tsv``
    (page key, value, segment id, the page's cells; tab-separated) with the segments it
    holds (``search.json``): a build takes out the rows of segments made again or gone,
    merges in the new ones, lays the pages out from the values' counts and writes only the
    pages whose rows changed."""

    def __init__(self, out: Path, cache: Path, *, fresh: bool) -> None:
        import shutil

        self.out = out
        self.cache = cache
        self.spill = cache / "spill"
        if self.spill.is_symlink():
            self.spill.unlink()
        shutil.rmtree(self.spill, ignore_errors=True)
        self.spill.mkdir(parents=True)
        self.segments: dict[str, str] = {}  # segment id -> digest, this build
        self.redone: set[str] = set()
        self.old = None if fresh else self._manifest()

    def _manifest(self) -> dict[str, Any] | None:
        try:
            doc = json.loads((self.cache / "search.json").read_bytes())
            if not isinstance(doc, dict) or doc.get("v") != SEARCH_FORMAT:
                return None
            for _col, folder in SEARCH_KEYS:
                size = doc["stores"][folder]
                if (self.cache / f"search-{folder}.tsv").stat().st_size != size:
                    return None  # not the store the manifest was written with
                if not all(type(n) is int for n in doc["counts"][folder].values()) or not all(
                        type(n) is int for n in doc["pages"][folder].values()):
                    return None
            if not all(type(d) is str for d in doc["segments"].values()):
                return None
            return doc
        except (OSError, ValueError, KeyError, TypeError, AttributeError):
            return None

    def current(self, segid: str, digest: str) -> bool:
        """The search rows of this segment (made from this listing) are in the store."""
        return self.old is not None and self.old["segments"].get(segid) == digest

    def keep(self, segid: str, digest: str) -> None:
        self.segments[segid] = digest

    def add(self, segid: str, digest: str, dicts: list[dict[str, str]]) -> None:
        self.segments[segid] = digest
        self.redone.add(segid)
        lines: dict[str, list[str]] = {folder: [] for _c, folder in SEARCH_KEYS}
        for d in dicts:
            # the cells as the page shows them, tab-separated: no tab or line break is in
            # a cell (made visible when indexed); escaped for HTML a page at a time
            line = "\t".join((d["started"], d["bench"], d["serial"], d["model"],
                              d["firmware"], d["run"], d["state"], _iops_cell(d), d["grade"],
                              _capacity_text(d), d["lot"], d["asset_tag"]))
            for col, folder in SEARCH_KEYS:
                value = d[col]
                if value:
                    lines[folder].append(f"{page_key(value)}\t{value}\t{segid}\t{line}\n")
        for folder, found in lines.items():
            if found:
                found.sort()
                (self.spill / folder).mkdir(exist_ok=True)
                _put(self.spill / folder / segid, "".join(found))

    def discard(self) -> None:
        import shutil

        shutil.rmtree(self.spill, ignore_errors=True)

    def finish(self) -> dict[str, dict[str, int]]:
        """Write the pages that changed; (folder -> {page name: runs}) for fleet.html."""
        import shutil

        old = self.old
        # the rows to take out of the store: of segments made again or gone
        dropped = set(old["segments"]) - (set(self.segments) - self.redone) if old else set()
        made: dict[str, dict[str, int]] = {}
        stores: dict[str, int] = {}
        counts_all: dict[str, dict[str, int]] = {}
        for _col, folder in SEARCH_KEYS:
            store = self.cache / f"search-{folder}.tsv"
            final = self.out / f"fleet-{folder}"
            if (old is not None and not dropped and not (self.spill / folder).exists()
                    and old["pages"][folder] and final.is_dir() and not final.is_symlink()):
                made[folder] = dict(old["pages"][folder])  # no run added or taken out
                stores[folder] = old["stores"][folder]
                counts_all[folder] = old["counts"][folder]
                continue
            counts: dict[str, int] = dict(old["counts"][folder]) if old else {}
            touched: set[str] = set()
            self._merge(store if old else None, folder, dropped, counts, touched)
            counts = {k: n for k, n in counts.items() if n > 0}
            pages = layout(counts)
            old_pages: dict[str, int] | None = old["pages"][folder] if old else None
            if old_pages is None or not final.is_dir() or final.is_symlink():
                if final.is_symlink():
                    final.unlink()
                shutil.rmtree(final, ignore_errors=True)
                old_pages = None
            if pages:
                final.mkdir(exist_ok=True)
                self._write(store, final, folder, pages=pages, old_pages=old_pages, touched=touched)
                made[folder] = {name: n for name, n, _f in pages}
                _write_listing(final, folder, made[folder])
            elif final.is_dir():
                shutil.rmtree(final, ignore_errors=True)
            for name in (old_pages or {}):
                if name not in made.get(folder, {}):
                    (final / f"{name}.html").unlink(missing_ok=True)
            stores[folder] = store.stat().st_size
            counts_all[folder] = counts
        shutil.rmtree(self.spill, ignore_errors=True)
        doc = {"v": SEARCH_FORMAT, "segments": self.segments, "stores": stores,
               "counts": counts_all, "pages": {f: made.get(f, {}) for _c, f in SEARCH_KEYS}}
        tmp = self.cache / "search.json.part"
        _put(tmp, json.dumps(doc, separators=(",", ":")))
        os.replace(tmp, self.cache / "search.json")
        return made

    def _merge(self, store: Path | None, folder: str, dropped: set[str],
               counts: dict[str, int], touched: set[str]) -> None:
        """The store of ``folder`` without the rows of ``dropped`` segments, with the new
        rows merged in (the kept rows are copied a block at a time)."""
        spills = sorted((self.spill / folder).glob("*")) if (self.spill / folder).is_dir() \
            else []
        tmp = store.with_name(store.name + ".part") if store else \
            self.cache / f"search-{folder}.tsv.part"
        with ExitStack() as stack:
            new = heapq.merge(*(stack.enter_context(open(p, encoding="utf-8"))
                                for p in spills))
            pending = next(new, None)
            tmp.unlink(missing_ok=True)
            fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
                         | os.O_CLOEXEC, 0o666)
            dst = stack.enter_context(open(fd, "w", encoding="utf-8"))
            marks = [f"\t{s}\t" for s in dropped]
            if store is not None and store.exists():
                src = stack.enter_context(open(store, encoding="utf-8"))
                while chunk := src.readlines(1 << 20):
                    if marks:
                        block = "".join(chunk)
                        if any(m in block for m in marks):
                            keep = []
                            for line in chunk:
                                key, _v, seg, _rest = line.split("\t", 3)
                                if seg in dropped:
                                    counts[key] -= 1
                                    touched.add(key)
                                else:
                                    keep.append(line)
                            chunk = keep
                    if not chunk:
                        continue
                    last = chunk[-1]
                    took: list[str] = []
                    while pending is not None and pending <= last:
                        took.append(pending)
                        pending = next(new, None)
                    if took:
                        for line in took:
                            key = line[:line.index("\t")]
                            counts[key] = counts.get(key, 0) + 1
                            touched.add(key)
                        chunk = sorted(chunk + took)
                    dst.writelines(chunk)
            while pending is not None:
                key = pending[:pending.index("\t")]
                counts[key] = counts.get(key, 0) + 1
                touched.add(key)
                dst.write(pending)
                pending = next(new, None)
        os.replace(tmp, self.cache / f"search-{folder}.tsv")

    def _write(self, store: Path, final: Path, folder: str, *,
               pages: list[tuple[str, int, str]], old_pages: dict[str, int] | None,
               touched: set[str]) -> None:
        """The pages whose rows changed (all when there were none before), the store read
        through once."""
        import bisect
        from collections import deque
        from itertools import islice

        firsts = [f for _n, _c, f in pages]
        dirty = set(range(len(pages))) if old_pages is None else {
            i for i, (name, n, _f) in enumerate(pages) if old_pages.get(name) != n}
        for key in touched:
            i = bisect.bisect_right(firsts, key) - 1
            if i >= 0:
                dirty.add(i)
        with open(store, encoding="utf-8") as f:
            for i, (name, count, _first) in enumerate(pages):
                lines = list(islice(f, min(count, PAGE_MAX)))
                if count > PAGE_MAX:
                    deque(islice(f, count - PAGE_MAX), maxlen=0)
                if i in dirty:
                    _write_search_page(final / f"{name}.html", folder, name, lines, count)


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
    """One search page from its store lines (page key, value, segment, the cells): the
    cells escaped for HTML all at once (they hold no control character: a tab ends a cell,
    a line a row)."""
    e = fleet._e
    title = f"ssdbench fleet: {folder} starting {name.replace('_', '?')}"
    body = "".join(line.split("\t", 3)[3] for line in lines).rstrip("\n")
    body = html.escape(body, quote=False).replace("\t", "</td><td>").replace(
        "\n", "</td></tr><tr><td>")
    _put(path, "".join((
        _HEAD.replace("{title}", e(title)),
        f"<p class='small'>{count:,} run(s), by {e(folder)}"
        + (f" (the first {len(lines):,} here, every one in fleet.csv)" if count > len(lines)
           else "") + "; "
        "<a href='index.html'>every page</a>, <a href='../fleet.html'>the fleet</a>.</p>",
        "<table><tr>", *(f"<th>{h}</th>" for h in _SEARCH_HEAD), "</tr><tr><td>", body,
        "</td></tr></table></body></html>\n")))


def _write_listing(folder_path: Path, folder: str, pages: dict[str, int]) -> None:
    e = fleet._e
    title = f"ssdbench fleet: every run by {folder}"
    links = "".join(f"<li><a href='{e(name)}.html'>{e(name.replace('_', '?'))}</a> "
                    f"({n})</li>" for name, n in sorted(pages.items()))
    _put(folder_path / "index.html",
         _HEAD.replace("{title}", e(title)) + "<p class='small'>By the first characters "
         "(upper case; any other character than A-Z and 0-9 is ?); <a href='../fleet.html'>"
         f"the fleet</a>.</p><ul>{links}</ul></body></html>\n")
