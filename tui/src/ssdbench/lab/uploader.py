"""Results to a store, the way the stick mirror copies them to a stick (docs/lab.md).

* **When**: at every stage start and end (:meth:`StoreUploader.request`, which never blocks:
  requests coalesce into one pending pass, a queue of one) and at the end (:meth:`close`);
  ``status.json`` every ``status_seconds`` (a slot of one: the newest status wins).
* **What**: every file of the RAM results folder whose size or mtime changed since it was
  sent, unless its SHA-256 is the one the journal says was sent to the same key (a reboot
  seeds RAM from the stick: nothing is sent twice). Keys:
  ``<prefix>/<bench>/<serial>/<run id>/<file>`` for a drive folder's files (run id = the
  drive folder's UTC start, file = the path inside it; the serial from its drive.json),
  ``<prefix>/<bench>/_bench/<file>`` for the results folder's own files (index.html,
  summary.csv, state.json), ``<prefix>/<bench>/status.json``.
* **Keys by field** (``[fields] keys``, ``cfg.keys``; lab/storekeys.py): for each run.json
  seen, one small object per keyed field, ``<prefix>/_keys/<field>=<value>/<bench>/<serial>/
  <run id>.json`` naming the run's folder, put once after the pass's files (the journal's
  ``keys_written``); the run's own keys stay as they are.
* **Journal**: ``store-journal.json`` in the results folder (so also on the stick): per file
  its key, size, SHA-256 and when it was sent; it is never sent itself, nor is the poster's
  ``post-journal.json`` (lab/post.py).
* **What was sent, for the fleet build** (S3 stores only): after a pass that sent files the
  fleet build reads (``fleet.WANTED``; ``status.json`` once per upload day per process), one
  line per key, ``<key below the bench's base>\t<ETag>``, is appended to
  ``<prefix>/_fleet/sent/<bench>/<YYYYMMDD>.txt`` (the UTC upload day; read, appended, put:
  the bench is its one writer), so the build need not list the whole store (docs/lab.md).
  Lines not yet written (the put failed, the bench rebooted) wait in the journal
  (``fleet_pending``) and go at the next pass.
* **Failures**: the store unreachable or refusing → one line (the reason, no secret), the
  pass stops, the next try comes after a backoff (1 s doubling to 60 s); the files stay in
  RAM (and on the stick). The thread is its own: a measurement never waits for the network.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench import jsonfile
from ssdbench.lab.config import StoreConfig, scrub
from ssdbench.lab.sentfile import FLEET_FILES, SENT_DIR, line_ok
from ssdbench.lab.store import Store, StoreError, content_type
from ssdbench.lab.storekeys import pointers
from ssdbench.results import atomic
from ssdbench.untrusted import path_part

JOURNAL = "store-journal.json"
SENT_KEEP = 1 << 20  # bytes of today's sent file kept in the journal
# status.json as last sent or tried, beside the results (RAM, the stick): what a store that
# refuses the bench (wrong keys) never sees, an operator reads there
STATUS_COPY = "store-status.json"
# the poster's journal (lab/post.py): the bench's own, like JOURNAL; the stick keeps it
POST_JOURNAL = "post-journal.json"
BENCH_FOLDER = "_bench"
DRIVE_DIR_RE = re.compile(r"^(\d{8}T\d{6}Z)_")
StatusFn = Callable[[], dict[str, Any]]


RUN_DIR = Path("/run/ssdbench")  # the image's DHCP script records dhcp-hostname and mac here


def _first_line(path: Path) -> str:
    try:
        return path.read_text().strip().splitlines()[0].strip()
    except (OSError, IndexError):
        return ""


def bench_name(cfg: StoreConfig, cmdline_bench: str | None = None,
               hostname: str | None = None, *, run_dir: Path = RUN_DIR) -> str:
    """``[store] bench``, else ``ssdbench.bench=`` from the kernel command line, else the
    host name DHCP gave (``run_dir/dhcp-hostname``), else the MAC of the first wired NIC
    (``run_dir/mac``, as 52-54-00-12-34-56), else ``hostname`` or the system's host name."""
    name = (cfg.bench or cmdline_bench or _first_line(run_dir / "dhcp-hostname")
            or _first_line(run_dir / "mac").replace(":", "-")
            or hostname or socket.gethostname())
    return path_part(name)


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass
class Sent:
    key: str
    size: int
    sha256: str
    sent: str


# close(): how long past its wait_s the last pass may take: every request of the store ends
# by then (HttpStore.stop_by: a deadline for the whole transfer, lab/fetch.py)
CLOSE_GRACE_S = 1.0
# ... and how much longer close() waits for a store that cannot keep that deadline (boto3's
# timeouts are per socket read) before it leaves the last pass behind in its thread
CLOSE_STALL_S = 2.0



@dataclass
class Backoff:
    """When the next try after a failure is due: ``first_s``, doubling to ``max_s``, back to
    ``first_s`` once a try worked (the store uploader's and the asset poster's)."""

    first_s: float
    max_s: float
    retry_at: float | None = None
    delay: float = 0.0

    def __post_init__(self) -> None:
        self.delay = self.first_s

    def failed(self, now: float) -> None:
        self.retry_at = now + self.delay
        self.delay = min(self.delay * 2, self.max_s)

    def reset(self) -> None:
        self.retry_at = None
        self.delay = self.first_s


class StoreUploader:
    """The RAM results folder kept sent to a store, in a thread of its own."""

    def __init__(self, store: Store, cfg: StoreConfig, results_dir: Path, bench: str,
                 say: Callable[[str], None], *, status: StatusFn | None = None,
                 backoff_s: float = 1.0, backoff_max_s: float = 60.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.store = store
        self.cfg = cfg
        self.results_dir = Path(results_dir)
        self.bench = bench
        self._say = say
        self._status = status
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.clock = clock
        self._memo: dict[str, tuple[int, int]] = {}
        self._serials: dict[str, str] = {}
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._dirty = True
        self._backoff = Backoff(backoff_s, backoff_max_s)
        self._status_due = 0.0
        self.last_error: str | None = None
        self.outages = 0  # times the store went from working to failing
        self.last_failure: str | None = None
        self.last_failure_at: str | None = None
        self.sent_total = 0
        self.pending = 0
        self._given_up = False
        # S3 only: the lines of _fleet/sent/<bench>/<day>.txt not yet written there
        self.fleet = cfg.kind == "s3"
        self.fleet_pending: list[str] = []
        # the day file as this bench last wrote it (day, text): what is appended to when
        # the store refuses to give it back (a bench key without s3:GetObject there)
        self.fleet_written: tuple[str, str] = ("", "")
        self._said_no_read = False
        self._status_day: str | None = None  # the day status.json was last put in the file
        # keys by field (cfg.keys): the objects to put (key -> body), and those put
        self.keys_pending: dict[str, bytes] = {}
        self.keys_written: set[str] = set()
        self.journal = self._load_journal()

    # ---- names ----

    @property
    def base(self) -> str:
        return "/".join(p for p in (self.cfg.prefix, self.bench) if p)

    @property
    def status_key(self) -> str:
        return f"{self.base}/status.json"

    def key_for(self, rel: str) -> str | None:
        """The store key of a file (path relative to the results folder); None while its
        drive folder has no readable drive.json yet (it is sent at a later pass)."""
        parts = rel.split("/")
        if len(parts) == 1:
            return f"{self.base}/{BENCH_FOLDER}/{rel}"
        m = DRIVE_DIR_RE.match(parts[0])
        if m is None:
            return f"{self.base}/{BENCH_FOLDER}/{rel}"
        serial = self._serial(parts[0])
        if serial is None:
            return None
        return f"{self.base}/{serial}/{m.group(1)}/{'/'.join(parts[1:])}"

    def _serial(self, drive_dir: str) -> str | None:
        if drive_dir in self._serials:
            return self._serials[drive_dir]
        try:
            doc = jsonfile.read(self.results_dir / drive_dir / "drive.json")
            drive = doc.get("drive", doc)
            serial = str(drive.get("serial") or drive.get("consent_id") or drive.get("name"))
        except (OSError, ValueError, AttributeError):
            return None
        self._serials[drive_dir] = path_part(serial, distinct=True)
        return self._serials[drive_dir]

    # ---- the journal ----

    def _load_journal(self) -> dict[str, Sent]:
        try:
            doc = jsonfile.read(self.results_dir / JOURNAL)
        except (OSError, ValueError):
            return {}
        if not isinstance(doc, dict) or doc.get("store") != self.cfg.describe():
            return {}  # another store: everything goes there too
        pending = doc.get("fleet_pending")
        if self.fleet and isinstance(pending, list):
            self.fleet_pending = [line for line in pending if isinstance(line, str)
                                  and line_ok(line)]
        written = doc.get("fleet_written")
        if (self.fleet and isinstance(written, list) and len(written) == 2
                and all(isinstance(x, str) for x in written)):
            self.fleet_written = (written[0], written[1])
        keyed = doc.get("keys_written")
        if isinstance(keyed, list):
            self.keys_written = {k for k in keyed if isinstance(k, str)}
        out = {}
        for rel, e in (doc.get("sent") or {}).items():
            try:
                out[rel] = Sent(str(e["key"]), int(e["size"]), str(e["sha256"]), str(e["sent"]))
            except (KeyError, TypeError, ValueError):
                continue
        return out

    def _save_journal(self) -> None:
        doc: dict[str, Any] = {
            "schema": 1, "store": self.cfg.describe(), "bench": self.bench,
            "sent": {rel: vars(s) for rel, s in sorted(self.journal.items())}}
        if self.fleet_pending:
            doc["fleet_pending"] = self.fleet_pending
        if self.fleet_written[0]:
            doc["fleet_written"] = list(self.fleet_written)
        if self.keys_written:
            doc["keys_written"] = sorted(self.keys_written)
        atomic.write_text(self.results_dir / JOURNAL, json.dumps(doc, indent=1) + "\n")

    # ---- one pass ----

    def say(self, line: str) -> None:
        if not self._given_up:  # close() stopped waiting: the thread left behind is quiet
            self._say(scrub(line, self.cfg.secrets()))

    def _files(self) -> list[Path]:
        if not self.results_dir.is_dir():
            return []
        return sorted(p for p in self.results_dir.rglob("*") if p.is_file()
                      and p.name not in (JOURNAL, STATUS_COPY, POST_JOURNAL)
                      and not atomic.is_temp(p.name))

    def sync(self) -> int:
        """Send what changed; never raises. Files sent; a failure sets ``last_error`` and
        stops the pass (the rest waits for the next try)."""
        with self._lock:
            try:
                return self._sync()
            except StoreError as exc:
                self._failed(str(exc))
                return 0
            except Exception as exc:  # the measurement must go on whatever happens here
                self._failed(f"{type(exc).__name__}: {exc}")
                return 0

    def _sync(self) -> int:
        sent = 0
        waiting = 0
        pending = len(self.fleet_pending)
        try:
            for path in self._files():
                rel = path.relative_to(self.results_dir).as_posix()
                st = path.stat()
                stamp = (st.st_size, st.st_mtime_ns)
                if self._memo.get(rel) == stamp:
                    continue
                key = self.key_for(rel)
                if key is None:
                    waiting += 1
                    continue
                data = path.read_bytes()
                if self.cfg.keys and path.name == "run.json":
                    self._note_keys(rel, data)
                digest = hashlib.sha256(data).hexdigest()
                done = self.journal.get(rel)
                if done is None or done.key != key or done.sha256 != digest:
                    tag = self.store.put(key, data, content_type(path.name))
                    self.journal[rel] = Sent(key, len(data), digest, utc_now())
                    self._note_sent(key, tag)
                    sent += 1
                self._memo[rel] = stamp
        finally:
            if sent or len(self.fleet_pending) != pending:
                self.sent_total += sent
                self._save_journal()
                self._memo[JOURNAL] = (0, 0)
        self._write_keys()
        self._write_sent()
        self.pending = waiting
        self._recovered()
        return sent

    # ---- keys by field (cfg.keys, lab/storekeys.py) ----

    def _note_keys(self, rel: str, data: bytes) -> None:
        """The objects of a drive folder's run.json's keyed fields, pending unless put (a
        run.json that is not JSON gives no value: ``<field>=_none``, never no object)."""
        m = DRIVE_DIR_RE.match(rel.partition("/")[0])
        serial = self._serial(rel.partition("/")[0]) if m else None
        if m is None or serial is None:
            return
        try:
            doc = json.loads(data)
        except (ValueError, RecursionError):
            doc = {}
        run = (self.cfg.prefix, self.bench, serial, m.group(1))
        for key, body in pointers(run, doc, self.cfg.keys).items():
            if key not in self.keys_written:
                self.keys_pending[key] = body

    def _write_keys(self) -> None:
        """Each pending object put (a failure is a StoreError like any other; the rest
        stay pending, and a reboot finds them again in the run.json files)."""
        if not self.keys_pending:
            return
        try:
            for key, body in list(self.keys_pending.items()):
                self.store.put(key, body, "application/json")
                del self.keys_pending[key]
                self.keys_written.add(key)
        finally:
            self._save_journal()
            self._memo[JOURNAL] = (0, 0)

    # ---- what was sent, for the fleet build (S3 stores) ----

    def _note_sent(self, key: str, tag: str | None) -> None:
        """A line for _fleet/sent/ when ``key`` is a file the fleet build reads (a store
        that gave no usable ETag: none; the build's ``--no-index`` sees that file)."""
        if not self.fleet or not key.startswith(self.base + "/"):
            return
        rel = key[len(self.base) + 1:]
        if rel.rpartition("/")[2] not in FLEET_FILES or not isinstance(tag, str):
            return
        line = f"{rel}\t{tag}"
        if line_ok(line):
            self.fleet_pending.append(line)

    @property
    def sent_key(self) -> str:
        """Today's (UTC) file of what this bench sent."""
        day = time.strftime("%Y%m%d", time.gmtime())
        return "/".join(p for p in (self.cfg.prefix, SENT_DIR, self.bench, f"{day}.txt") if p)

    def _write_sent(self) -> None:
        """The pending lines appended to today's sent file (read, append, put); a failure
        is a StoreError like any other and the lines stay pending (in the journal)."""
        if not self.fleet_pending:
            return
        key = self.sent_key
        day = key.rpartition("/")[2][:8]
        try:
            old = self.store.get(key)
        except StoreError as exc:
            if exc.refused:  # a key that may only write (S3 answers 403 for no such key)
                old = b""
                if self.fleet_written[0] == day:  # written today: append to what we wrote
                    old = self.fleet_written[1].encode()
                    if not self._said_no_read:
                        self._said_no_read = True
                        self.say(f"store {self.cfg.describe()}: {key} cannot be read back "
                                 "(the bench's key lacks s3:GetObject there): appended to "
                                 "as this bench's journal has it")
            elif "404" in str(exc) or "NoSuchKey" in str(exc):
                old = b""
            else:
                raise
        if old and not old.endswith(b"\n"):
            old += b"\n"  # never glued to a line of ours
        lines = list(self.fleet_pending)
        text = old + "".join(f"{line}\n" for line in lines).encode()
        self.store.put(key, text, "text/plain")
        del self.fleet_pending[:len(lines)]
        # kept (in the journal too) unless someone else's file grew it out of all measure
        self.fleet_written = (day, text.decode("utf-8", "replace")) if len(text) <= SENT_KEEP \
            else ("", "")
        self._save_journal()
        self._memo[JOURNAL] = (0, 0)

    def unsent(self) -> int:
        """Files whose current bytes are not in the store (reads every file), and the
        keys by field not yet put."""
        n = len(self.keys_pending)
        for path in self._files():
            rel = path.relative_to(self.results_dir).as_posix()
            done = self.journal.get(rel)
            if done is None or done.sha256 != hashlib.sha256(path.read_bytes()).hexdigest():
                n += 1
        return n

    def send_status(self) -> bool:
        """status.json now (with the store's own state); False when it failed."""
        doc = dict(self._status()) if self._status is not None else {}
        doc.setdefault("bench", self.bench)
        doc["time"] = utc_now()
        doc["store"] = {"sent_files": self.sent_total, "last_error": self.last_error,
                        "outages": self.outages, "last_failure": self.last_failure,
                        "last_failure_at": self.last_failure_at}
        with self._lock:
            try:
                tag = self.store.put(self.status_key, json.dumps(doc, indent=1).encode(),
                                     "application/json")
            except StoreError as exc:
                self._failed(str(exc))
                doc["store"]["last_error"] = self.last_error
                self._keep_status(doc)
                return False
            day = time.strftime("%Y%m%d", time.gmtime())
            if self.fleet and self._status_day != day:  # once per upload day and process
                self._note_sent(self.status_key, tag)
                self._status_day = day
            if self.fleet_pending:
                try:
                    self._save_journal()
                    self._write_sent()
                except StoreError as exc:
                    self._failed(str(exc))
                except Exception as exc:  # RAM full, the folder gone: tried again later
                    self._failed(f"{type(exc).__name__}: {exc}")
        self._keep_status(doc)
        return True

    def _keep_status(self, doc: dict[str, Any]) -> None:
        try:
            atomic.write_text(self.results_dir / STATUS_COPY, json.dumps(doc, indent=1) + "\n")
        except OSError:
            pass  # RAM full or the folder gone: the store's copy and the console still say it

    def _failed(self, why: str) -> None:
        why = scrub(why, self.cfg.secrets())
        if self.last_error is None:
            self.outages += 1
        self.last_failure, self.last_failure_at = why, utc_now()
        if self.last_error is None:  # one line per outage: each try's reason names its key
            self.say(f"store {self.cfg.describe()}: {why}; results kept in RAM "
                     f"({self.results_dir}), retrying")
        self.last_error = why
        self._backoff.failed(self.clock())
        self._dirty = True

    def _recovered(self) -> None:
        if self.last_error is not None:
            self.say(f"store {self.cfg.describe()} reachable again")
        self.last_error = None
        self._backoff.reset()

    # ---- the background thread ----

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="store-uploader", daemon=True)
        self._thread.start()

    def request(self) -> None:
        """Send soon (a stage started or ended); never blocks."""
        self._dirty = True
        self._wake.set()

    def _next_wait(self) -> float:
        now = self.clock()
        due = [self._status_due] if self._status is not None else []
        if self._backoff.retry_at is not None:
            due.append(self._backoff.retry_at)
        elif self._dirty:
            due.append(now)
        return max(0.0, min(due) - now) if due else 3600.0

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._next_wait())
            self._wake.clear()
            if self._stop.is_set():
                break
            now = self.clock()
            if self._backoff.retry_at is not None and now < self._backoff.retry_at:
                continue  # backing off; a request waits for the retry
            if self._dirty:
                self._dirty = False
                n = self.sync()
                if n:
                    self.say(f"results sent to the store ({n} files)")
            if self._status is not None and self.clock() >= self._status_due:
                self._status_due = self.clock() + self.cfg.status_seconds
                if self._backoff.retry_at is None or self.clock() >= self._backoff.retry_at:
                    self.send_status()

    def close(self, cancel: threading.Event | None = None, *, wait_s: float = 0.0) -> int:
        """Stop the thread; send what is left, retrying with backoff for up to ``wait_s``
        seconds (or until ``cancel``). Files still unsent (0: everything is in the store).
        With an http or webdav store it returns within ``wait_s`` + CLOSE_GRACE_S
        wall-clock seconds whatever the store does: every request, the background thread's
        one in flight too, ends by then (``stop_by``: a deadline for the whole transfer, so
        a store that drips its answers is cut off). A store that cannot keep a deadline (s3)
        gets CLOSE_STALL_S more; then the last requests are left behind in their thread (a
        daemon). The files not sent stay where they are (the stick, or RAM)."""
        cancel = cancel or threading.Event()
        stop_by = getattr(self.store, "stop_by", None)
        if stop_by is not None:
            stop_by(time.monotonic() + wait_s + CLOSE_GRACE_S)
        done = threading.Event()
        result: list[int] = []

        def last_pass() -> None:
            try:
                result.append(self._close(cancel, wait_s))
            finally:
                done.set()

        threading.Thread(target=last_pass, name="store-close", daemon=True).start()
        if done.wait(wait_s + CLOSE_GRACE_S + CLOSE_STALL_S) and result:
            return result[0]
        self.say(f"store {self.cfg.describe()}: still answering after "
                 f"{wait_s + CLOSE_GRACE_S + CLOSE_STALL_S:g} s (a slow or stalled store): "
                 "stopped waiting; the results not sent stay here")
        self._given_up = True
        return max(self._unsent_now(), 1)

    def _unsent_now(self) -> int:
        """unsent(), or 1 when the files cannot be read now (the stick pulled)."""
        try:
            return self.unsent()
        except OSError:
            return 1

    def _close(self, cancel: threading.Event, wait_s: float) -> int:
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        deadline = self.clock() + wait_s
        while True:
            self.sync()
            if self._status is not None:
                self.send_status()
            if self.last_error is None and self.pending == 0:
                return 0
            left = deadline - self.clock()
            if left <= 0 or cancel.is_set():
                return max(self.unsent(), 1)
            cancel.wait(min(left, max(0.0, (self._backoff.retry_at or self.clock()) - self.clock())
                            or self.backoff_s))
