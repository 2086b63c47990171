"""Results out: each finished record POSTed to a lab's asset system (``[post]``, docs/lab.md
"Results out: POST to an asset system").

* **What**: every ``<drive folder>/<run>/erase-record.json`` of the results folder, and with
  ``what = "runs"`` every ``run.json`` whose state is final (done, failed, cancelled), the
  file's exact bytes, oldest drive folder first.
* **How**: ``POST <url>``, ``Content-Type: application/json``, with ``Idempotency-Key`` (the
  record's ``record_id``; for a run.json ``sha256:<hex of its bytes>``), ``Ssdbench-Schema``
  (the ``$id`` of the schema the file follows, its version included) and ``Ssdbench-Sha256``
  (of the body), so a receiver can check what it got and drop a duplicate. One transfer is
  lab/fetch.py's: a deadline for the whole of it, the token or password only to the URL's own
  origin, a 307/308 redirect followed with the same body, https never followed to http.
* **Answers**: a 2xx is the receiver's acknowledgement (201 filed, 200 a duplicate). A
  connection error, a deadline passed, 408, 425, 429 or a 5xx is tried again with a backoff
  (1 s doubling to 60 s); the bench never waits for it (a thread of its own). 401 or 403 (the
  credentials), 301, 302, 303, 404, 405, 410 or 415 (the URL) and a transfer that cannot
  work (a certificate that does not verify, a redirect to plain HTTP) stop the posting for
  this session, with one line; any other 4xx (the receiver says the record is wrong) gives
  that record up, with a line naming it, the status and the receiver's reason.
* **Queue**: ``post-journal.json`` in the results folder (so also on the stick, which seeds
  RAM at the next boot) lists what was acknowledged or refused, with the SHA-256 of the bytes:
  the queue is every file found that it does not list, so a record not yet acknowledged when
  the power went is posted at the next boot. It holds no secret.
"""

from __future__ import annotations

import hashlib
import json
import re
import ssl
import threading
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from functools import cache
from importlib import resources
from pathlib import Path

from ssdbench import jsonfile
from ssdbench.lab.config import PostConfig, scrub
from ssdbench.lab.fetch import (
    Answer,
    FetchError,
    Url,
    follow,
    parse_url,
)
from ssdbench.lab.uploader import POST_JOURNAL, Backoff
from ssdbench.results import atomic
from ssdbench.untrusted import shown

JOURNAL = POST_JOURNAL  # "post-journal.json": never sent to the store (lab/uploader.py)
RECORD = "erase-record.json"
RUN = "run.json"
FINAL_RUN_STATES = ("done", "failed", "cancelled")
# one POST's whole transfer: this, plus the body's time at MIN_RATE bytes a second
TIMEOUT_S = 20.0
MIN_RATE = 256 * 1024
ANSWER_LIMIT = 1 << 20  # a receiver's answer is a status and a reason, never megabytes
RETRY_STATUSES = (408, 425, 429)  # and every 5xx
CREDENTIALS = (401, 403)
# answers about the URL, not the record: nothing more goes this session, nothing is given up
WRONG_URL = (301, 302, 303, 404, 405, 410, 415)
POLL_S = 5.0  # the results folder is looked at this often even when nobody asks
CLOSE_GRACE_S = 1.0
REASON_LIMIT = 300
_RECORD_ID = re.compile(r"^[0-9A-Za-z][0-9A-Za-z._:-]{0,127}$")


@cache
def schema_id(file: str) -> str:
    """The ``$id`` of the schema ``file`` follows (``erase-record.json``), version included."""
    text = (resources.files("ssdbench") / "schemas" / f"{file}.schema.json").read_text("utf-8")
    return str(json.loads(text)["$id"])


def utc_now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


@dataclass(frozen=True)
class Item:
    """One file to post: ``rel`` its path in the results folder."""

    rel: str
    key: str  # Idempotency-Key
    schema: str  # Ssdbench-Schema
    data: bytes
    sha256: str

    @property
    def kind(self) -> str:
        return "record" if self.rel.endswith(RECORD) else "run"


def post(url: Url, body: bytes, headers: Mapping[str, str], *, auth: Mapping[str, str],
         timeout_s: float, until: float | None = None,
         context: ssl.SSLContext | None = None) -> Answer:
    """POST ``body`` to ``url`` through the one fetch (lab/fetch.py), following up to
    MAX_REDIRECTS 307/308 redirects (the same method and body) within the one deadline.
    ``auth`` (the Authorization header) goes to ``url``'s own origin only, and so does
    ``context`` (a lab CA); https is never followed to http (a final FetchError)."""
    return follow(url, "POST", body=body, headers=headers, home_headers=auth,
                  statuses=(307, 308), timeout_s=timeout_s, until=until,
                  limit=ANSWER_LIMIT, context=context, what="record")


def reason_of(answer: Answer) -> str:
    """The receiver's reason, as a console line may show it: a JSON answer's ``error`` and
    first ``problems``, else the first line of its text; untrusted, so cut and made
    visible."""
    text = answer.body[:4096].decode("utf-8", "replace").strip()
    try:
        doc = json.loads(text)
    except ValueError:
        doc = None
    if isinstance(doc, dict) and doc.get("error"):
        problems = doc.get("problems")
        text = str(doc["error"])
        if isinstance(problems, list) and problems:
            text += ": " + "; ".join(str(p) for p in problems[:3])
    else:
        text = text.splitlines()[0] if text else answer.reason
    return shown(text or "no reason given", limit=REASON_LIMIT)


@dataclass
class Entry:
    key: str
    sha256: str
    status: int
    at: str
    reason: str = ""


@dataclass
class Outcome:
    """Where each file found stands (paths relative to the results folder)."""

    found: list[str] = field(default_factory=list)
    posted: list[str] = field(default_factory=list)
    refused: dict[str, str] = field(default_factory=dict)  # file: status and reason
    queued: list[str] = field(default_factory=list)
    why_queued: str | None = None  # the last failure, when any is queued
    skipped: dict[str, str] = field(default_factory=dict)  # files that are no record: why

    def lines(self, url: str, what: str) -> list[str]:
        """The console's account: ``posted 3 of 3 records to <url>``, then each refused
        file and what is still queued."""
        noun = "records" if what == "records" else "records and runs"
        out = [f"posted {len(self.posted)} of {len(self.found)} {noun} to {url}"]
        out += [f"  refused by the receiver: {rel} ({why})" for rel, why in self.refused.items()]
        out += [f"  not posted: {rel} {why}" for rel, why in self.skipped.items()]
        if self.queued:
            out.append(f"  still queued ({self.why_queued or 'not tried yet'}), posted at the "
                       f"next boot: {', '.join(self.queued)}")
        return out


class Poster:
    """The results folder's finished records kept posted to ``cfg.url``, in a thread of its
    own (:meth:`start`, :meth:`request`, :meth:`close`); :meth:`send` is one pass."""

    def __init__(self, cfg: PostConfig, results_dir: Path, say: Callable[[str], None], *,
                 timeout_s: float = TIMEOUT_S, backoff_s: float = 1.0,
                 backoff_max_s: float = 60.0, poll_s: float = POLL_S,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.cfg = cfg
        self.url = parse_url(cfg.url)  # parse_post checked it
        self.results_dir = Path(results_dir)
        self._say = say
        self.timeout_s = timeout_s
        self.backoff_s = backoff_s
        self.backoff_max_s = backoff_max_s
        self.poll_s = poll_s
        self.clock = clock
        self._ctx = (ssl.create_default_context(cafile=str(cfg.ca_file) if cfg.ca_file else None)
                     if self.url.scheme == "https" else None)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._closing = threading.Event()
        self._cancel = threading.Event()
        self._finished = threading.Event()
        self._thread: threading.Thread | None = None
        self._close_by: float | None = None
        self._backoff = Backoff(backoff_s, backoff_max_s)
        self._dirty = True
        self._poll_at = 0.0
        self._skipped: dict[str, str] = {}  # files that are no record, and why
        self._said_skip: dict[str, str] = {}  # ... said once each
        self.last_error: str | None = None
        self.blocked: str | None = None  # posting stopped for this session, and why
        self.outcome = Outcome()
        self.posted, self.refused = self._load_journal()

    # ---- the journal ----

    def _load_journal(self) -> tuple[dict[str, Entry], dict[str, Entry]]:
        try:
            doc = jsonfile.read(self.results_dir / JOURNAL)
        except (OSError, ValueError):
            return {}, {}
        if not isinstance(doc, dict) or doc.get("url") != self.cfg.describe():
            return {}, {}  # another receiver: everything goes there too

        def entries(name: str) -> dict[str, Entry]:
            out = {}
            table = doc.get(name)
            for rel, e in (table.items() if isinstance(table, dict) else ()):
                try:
                    out[str(rel)] = Entry(str(e["key"]), str(e["sha256"]), int(e["status"]),
                                          str(e["at"]), str(e.get("reason", "")))
                except (KeyError, TypeError, ValueError, AttributeError):
                    continue
            return out

        return entries("posted"), entries("refused")

    def _save_journal(self) -> None:
        doc = {"schema": 1, "url": self.cfg.describe(),
               "posted": {rel: vars(e) for rel, e in sorted(self.posted.items())},
               "refused": {rel: vars(e) for rel, e in sorted(self.refused.items())}}
        try:
            atomic.write_text(self.results_dir / JOURNAL, json.dumps(doc, indent=1) + "\n")
        except OSError as exc:  # RAM full, the folder gone: the posts are done all the same
            self.say(f"post: {JOURNAL} not written ({type(exc).__name__}): a reboot posts "
                     "these records again (the receiver drops the duplicates)")

    # ---- what to post ----

    def say(self, line: str) -> None:
        self._say(scrub(line, self.cfg.secrets()))

    def _item(self, path: Path) -> Item | None:
        rel = path.relative_to(self.results_dir).as_posix()
        try:
            data = path.read_bytes()
            doc = json.loads(data)
        except (OSError, ValueError) as exc:
            self._skip(rel, f"cannot be read as JSON ({type(exc).__name__})")
            return None
        if not isinstance(doc, dict):
            self._skip(rel, "is not a JSON object")
            return None
        digest = hashlib.sha256(data).hexdigest()
        if path.name == RECORD:
            record_id = doc.get("record_id")
            if not isinstance(record_id, str) or not _RECORD_ID.match(record_id):
                self._skip(rel, "has no record_id")
                return None
            return Item(rel, record_id, schema_id(RECORD), data, digest)
        if doc.get("state") not in FINAL_RUN_STATES:
            return None  # still running (or interrupted: resumed later)
        return Item(rel, f"sha256:{digest}", schema_id(RUN), data, digest)

    def _skip(self, rel: str, why: str) -> None:
        if self._said_skip.get(rel) != why:
            self.say(shown(f"post: {rel} not posted: it {why}", limit=600))
        self._said_skip[rel] = why
        self._skipped[rel] = f"(it {why})"

    def items(self) -> list[Item]:
        """Every file to post as it is now, the oldest drive folder first."""
        self._skipped = {}
        if not self.results_dir.is_dir():
            return []
        names = [RECORD] + ([RUN] if self.cfg.what == "runs" else [])
        paths = sorted(p for name in names for p in self.results_dir.glob(f"*/*/{name}")
                       if p.is_file())
        return [i for i in (self._item(p) for p in paths) if i is not None]

    # ---- one pass ----

    def _headers(self, item: Item) -> dict[str, str]:
        return {"Content-Type": "application/json", "Idempotency-Key": item.key,
                "Ssdbench-Schema": item.schema, "Ssdbench-Sha256": item.sha256}

    def _auth(self) -> dict[str, str]:
        if self.cfg.token:
            return {"Authorization": f"Bearer {self.cfg.token.reveal()}"}
        if self.cfg.password:
            return Url("http", "x", None, "/", self.cfg.username,
                       self.cfg.password.reveal()).auth_header()
        return {}

    def send(self) -> Outcome:
        """Post what is not acknowledged or refused yet; never raises. Stops at the first
        answer worth trying again (``last_error``, backoff) or that stops the session
        (``blocked``)."""
        with self._lock:
            try:
                self._send()
            except Exception as exc:  # the bench goes on whatever happens here
                self._retry(f"{type(exc).__name__}: {exc}")
            return self.outcome

    def _done(self, item: Item) -> bool:
        for table in (self.posted, self.refused):
            e = table.get(item.rel)
            if e is not None and e.sha256 == item.sha256:
                return True
        return False

    def _send(self) -> None:
        items = self.items()
        todo = [i for i in items if not self._done(i)]
        changed = False
        try:
            for item in todo:
                if self.blocked is not None or self._cancel.is_set():
                    break
                verdict = self._post(item)
                if verdict == "retry":
                    break
                changed = changed or verdict in ("posted", "refused")
        finally:
            if changed:
                self._save_journal()
            self._tally(items)

    def _post(self, item: Item) -> str:
        until = None if self._close_by is None else self._close_by + CLOSE_GRACE_S
        try:
            answer = post(self.url, item.data, self._headers(item), auth=self._auth(),
                          timeout_s=self.timeout_s + len(item.data) / MIN_RATE, until=until,
                          context=self._ctx)
        except FetchError as exc:
            why = scrub(str(exc), self.cfg.secrets())
            if exc.final:
                self._block(f"{why}; nothing more is posted until the next boot")
                return "blocked"
            self._retry(why)
            return "retry"
        status = answer.status
        if 200 <= status < 300:
            self.posted[item.rel] = Entry(item.key, item.sha256, status, utc_now())
            self.refused.pop(item.rel, None)
            self._recovered()
            return "posted"
        reason = scrub(reason_of(answer), self.cfg.secrets())
        if status >= 500 or status in RETRY_STATUSES:
            self._retry(f"the receiver answered {status} ({reason})")
            return "retry"
        if status in CREDENTIALS:
            self._block(f"the receiver answered {status} ({reason}): check [post] token or "
                        "username/password; nothing more is posted until the next boot")
            return "blocked"
        if status in WRONG_URL or status < 200:
            self._block(f"the receiver answered {status} ({reason}): check [post] url (a "
                        "redirect other than 307/308 is not followed); nothing more is posted "
                        "until the next boot")
            return "blocked"
        self.refused[item.rel] = Entry(item.key, item.sha256, status, utc_now(), reason)
        self.say(f"post: {item.rel} refused by {self.cfg.describe()}: {status} ({reason}); "
                 "given up (the receiver says this record is wrong)")
        return "refused"

    def _tally(self, items: list[Item]) -> None:
        out = Outcome(found=[i.rel for i in items], skipped=dict(self._skipped))
        for i in items:
            if i.rel in self.posted and self.posted[i.rel].sha256 == i.sha256:
                out.posted.append(i.rel)
            elif i.rel in self.refused and self.refused[i.rel].sha256 == i.sha256:
                e = self.refused[i.rel]
                out.refused[i.rel] = f"{e.status}: {e.reason}"
            else:
                out.queued.append(i.rel)
        out.why_queued = self.blocked or self.last_error if out.queued else None
        self.outcome = out

    def _block(self, why: str) -> None:
        if self.blocked is None:
            self.say(f"post to {self.cfg.describe()}: {why}")
        self.blocked = why

    def _retry(self, why: str) -> None:
        why = scrub(why, self.cfg.secrets())
        if self.last_error is None:  # one line per outage
            self.say(f"post to {self.cfg.describe()}: {why}; the records stay queued, "
                     "retrying")
        self.last_error = why
        self._backoff.failed(self.clock())
        self._dirty = True

    def _recovered(self) -> None:
        if self.last_error is not None:
            self.say(f"post to {self.cfg.describe()}: the receiver answers again")
        self.last_error = None
        self._backoff.reset()

    # ---- the background thread ----

    def start(self) -> None:
        warning = self.cfg.warning
        if warning:
            self.say(warning)
        self._thread = threading.Thread(target=self._loop, name="post", daemon=True)
        self._thread.start()

    def request(self) -> None:
        """Look for finished records soon (a stage ended); never blocks."""
        self._dirty = True
        self._wake.set()

    def _settled(self) -> bool:
        """Nothing left that this session can still post."""
        return self.blocked is not None or not self.outcome.queued

    def _loop(self) -> None:
        try:
            while True:
                now = self.clock()
                closing = self._closing.is_set()
                if closing and (self._cancel.is_set() or (self._close_by or 0) <= now):
                    break
                if self._backoff.retry_at is not None and now < self._backoff.retry_at:
                    wait = self._backoff.retry_at - now
                elif self._dirty or closing or now >= self._poll_at:
                    wait = 0.0
                else:
                    wait = self._poll_at - now
                if closing:
                    wait = min(wait, max(0.0, (self._close_by or now) - now))
                if wait > 0:
                    # closing: a backoff is cut short by cancel only; else by request()
                    (self._cancel if closing else self._wake).wait(wait)
                    self._wake.clear()
                    continue
                self._dirty = False
                self._poll_at = self.clock() + self.poll_s
                self.send()
                if closing and self._settled():
                    break
        finally:
            self._finished.set()

    def close(self, cancel: threading.Event | None = None, *, wait_s: float = 120.0) -> Outcome:
        """The last pass: keep posting what is queued, with backoff, for up to ``wait_s``
        seconds (or until ``cancel``); returns within ``wait_s`` plus one POST's deadline.
        What is not acknowledged by then stays queued (the journal: the next boot)."""
        if self._thread is None:  # never started: one pass here
            self._close_by = self.clock() + wait_s
            self.send()
            return self.outcome
        self._close_by = self.clock() + wait_s
        if cancel is not None:
            self._cancel = cancel
        self._closing.set()
        self._wake.set()
        self._finished.wait(wait_s + CLOSE_GRACE_S + self.timeout_s)
        if not self._finished.is_set():
            self.say(f"post to {self.cfg.describe()}: still answering after {wait_s:g} s; "
                     "stopped waiting, the records not acknowledged stay queued")
        return self.outcome

    def summary(self) -> list[str]:
        """The console's lines at the end (:meth:`Outcome.lines`), no secret in them."""
        return [scrub(line, self.cfg.secrets())
                for line in self.outcome.lines(self.cfg.describe(), self.cfg.what)]


def start_post(cfg: PostConfig, results_dir: Path, say: Callable[[str], None]) -> Poster:
    """The poster of a kiosk run, its thread started (after the stick seeded RAM: the
    journal of an earlier boot says what was acknowledged)."""
    poster = Poster(cfg, results_dir, say)
    poster.start()
    poster.request()
    return poster


def finish_post(poster: Poster, cancel: threading.Event, say: Callable[[str], None], *,
                wait_s: float = 120.0) -> Outcome:
    """The end of a kiosk run: the last tries (up to ``wait_s``), then the outcome on the
    console (``posted 3 of 3 records to <url>``, what was refused, what is still queued)."""
    outcome = poster.close(cancel, wait_s=wait_s)
    for line in poster.summary():
        say(line)
    return outcome

