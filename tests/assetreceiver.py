"""The reference receiver of ``[post]`` (docs/lab.md "Results out: POST to an asset system"):
what an asset system must do with the records a bench posts, as a real HTTP server on
127.0.0.1. The tests run it; a lab can read it as the contract's example, or run it::

    python -m tests.assetreceiver --folder received --token s3cret [--port 8088]

For each ``POST`` it

1. checks ``Authorization: Bearer <token>`` (401 without it, 403 with another token);
2. takes ``Content-Type: application/json`` only (415), a body of at most 16 MiB with a
   Content-Length (411, 413);
3. picks the schema the ``Ssdbench-Schema`` header names (the ``$id`` of
   ``erase-record.json`` or ``run.json`` in tui/src/ssdbench/schemas, version included; 422
   for another), checks ``Ssdbench-Sha256`` against the body (400), parses the body (400)
   and validates it with ``jsonschema`` (422, with each problem);
4. checks ``Idempotency-Key``: a record's ``record_id``, or ``sha256:<hex>`` of a run.json
   (400 when it does not match);
5. files a valid body, its exact bytes, as ``records/<serial>/<record_id>.json`` or
   ``runs/<serial>/<sha256>.json`` under its folder, and answers 201 (``Location`` names
   it), or 200 when that key was filed already (a duplicate, dropped).

Every answer but a 201/200 is JSON ``{"error": "...", "problems": [...]}``: the bench
shows the reason on its console. For the tests it can answer 503 to the first ``fail_first``
requests, hang (read the request, answer nothing) while ``hang`` is set, or redirect every
request (307, or ``redirect_status``) to ``redirect_to``, and serve https (``tls``, a server context). It keeps what it was sent (``requests``: method, path,
headers, status) in memory only: no header, so no token, is ever written to a file.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import re
import ssl
import tempfile
import threading
from dataclasses import dataclass, field
from functools import cache
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from importlib import resources
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator  # type: ignore[import-untyped]
from jsonschema.exceptions import best_match  # type: ignore[import-untyped]

HOST = "127.0.0.1"
PATH = "/api/ssdbench"
MAX_BODY = 16 << 20
KINDS = ("erase-record.json", "run.json")
_SAFE = re.compile(r"[^A-Za-z0-9._-]")


@cache
def schemas() -> dict[str, tuple[str, Draft202012Validator]]:
    """``$id`` -> (file kind, validator) of the schemas a bench posts by."""
    out = {}
    for kind in KINDS:
        doc = json.loads((resources.files("ssdbench") / "schemas" / f"{kind}.schema.json")
                         .read_text("utf-8"))
        out[doc["$id"]] = (kind, Draft202012Validator(doc))
    return out


def safe_name(value: object) -> str:
    """A serial or id as one file name: nothing but A-Za-z0-9._- (never . or ..)."""
    text = _SAFE.sub("_", str(value))[:100].lstrip(".") or "_"
    return text


@dataclass
class Seen:
    method: str
    path: str
    headers: dict[str, str]
    status: int = 0


@dataclass
class AssetReceiver:
    """A receiver on 127.0.0.1 (a free port) filing into ``folder``."""

    folder: Path
    token: str | None = "receiver-token"
    fail_first: int = 0  # answer 503 to this many requests first
    redirect_to: str | None = None  # answer every POST with a redirect to this URL
    redirect_status: int = 307
    hang: threading.Event = field(default_factory=threading.Event)  # set: never answer
    requests: list[Seen] = field(default_factory=list)
    stop: threading.Event = field(default_factory=threading.Event)
    bind_port: int = 0  # 0: a free port (``port`` says which)
    tls: ssl.SSLContext | None = None  # a server context: https
    arrived: threading.Event = field(default_factory=threading.Event)  # set at each request

    def __post_init__(self) -> None:
        self.folder = Path(self.folder)
        self._lock = threading.Lock()
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:
                pass  # quiet: the tests read ``requests``

            def do_POST(self) -> None:
                receiver._handle(self)

            def do_GET(self) -> None:
                receiver._answer(self, Seen("GET", self.path, dict(self.headers)), 405,
                                 {"error": "only POST"})

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            allow_reuse_address = True

        self.server = Server((HOST, self.bind_port), Handler)
        self.port = self.server.server_address[1]
        if self.tls is not None:
            self.server.socket = self.tls.wrap_socket(self.server.socket, server_side=True)
        self._thread = threading.Thread(target=self.server.serve_forever, args=(0.05,),
                                        daemon=True)
        self._thread.start()

    @property
    def url(self) -> str:
        scheme = "https" if self.tls is not None else "http"
        return f"{scheme}://{HOST}:{self.port}{PATH}"

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()

    def filed(self) -> list[Path]:
        """Every body filed, as files under ``folder``."""
        return sorted(p for p in self.folder.rglob("*.json") if p.is_file())

    # ---- one request ----

    def _answer(self, h: BaseHTTPRequestHandler, seen: Seen, status: int,
                doc: dict[str, Any], extra: dict[str, str] | None = None) -> None:
        seen.status = status
        body = (json.dumps(doc) + "\n").encode()
        h.send_response(status)
        h.send_header("Content-Type", "application/json")
        h.send_header("Content-Length", str(len(body)))
        for k, v in (extra or {}).items():
            h.send_header(k, v)
        h.end_headers()
        h.wfile.write(body)

    def _handle(self, h: BaseHTTPRequestHandler) -> None:
        seen = Seen("POST", h.path, dict(h.headers))
        with self._lock:
            self.requests.append(seen)
            self.arrived.set()
            failing = self.fail_first > 0
            if failing:
                self.fail_first -= 1
        if self.hang.is_set():
            self.stop.wait()  # the client's deadline ends it, or close()
            return
        if failing:
            self._answer(h, seen, 503, {"error": "unavailable (told to fail)"},
                         {"Retry-After": "1"})
            return
        if self.redirect_to is not None:
            self._answer(h, seen, self.redirect_status, {"error": "moved"},
                         {"Location": self.redirect_to})
            return
        status, doc, extra = self._check_and_file(h)
        self._answer(h, seen, status, doc, extra)

    def _check_and_file(self, h: BaseHTTPRequestHandler
                        ) -> tuple[int, dict[str, Any], dict[str, str] | None]:
        if h.path.partition("?")[0] != PATH:
            return 404, {"error": f"POST to {PATH}"}, None
        if self.token is not None:
            auth = h.headers.get("Authorization", "")
            if not auth.startswith("Bearer "):
                return 401, {"error": "a bearer token is needed"}, {
                    "WWW-Authenticate": 'Bearer realm="ssdbench"'}
            if auth.removeprefix("Bearer ") != self.token:
                return 403, {"error": "this token may not post"}, None
        ctype = h.headers.get("Content-Type", "").partition(";")[0].strip().lower()
        if ctype != "application/json":
            return 415, {"error": "expected Content-Type: application/json"}, None
        length = h.headers.get("Content-Length")
        if length is None or not length.strip().isdigit():
            return 411, {"error": "a Content-Length is needed"}, None
        if int(length) > MAX_BODY:
            return 413, {"error": f"a body of at most {MAX_BODY} bytes"}, None
        body = h.rfile.read(int(length))
        digest = hashlib.sha256(body).hexdigest()
        if h.headers.get("Ssdbench-Sha256", "").strip().lower() != digest:
            return 400, {"error": "Ssdbench-Sha256 is not the body's SHA-256"}, None
        named = h.headers.get("Ssdbench-Schema", "").strip()
        if named not in schemas():
            return 422, {"error": "Ssdbench-Schema names no schema this receiver knows",
                         "problems": [f"known: {', '.join(sorted(schemas()))}"]}, None
        kind, validator = schemas()[named]
        try:
            doc = json.loads(body)
        except ValueError as exc:
            return 400, {"error": f"the body is not JSON: {exc}"}, None
        errors = list(validator.iter_errors(doc))
        if errors:
            first = best_match(errors)
            problems = [f"${''.join(f'.{p}' for p in e.absolute_path)}: {e.message}"
                        for e in (first, *[e for e in errors if e is not first])]
            return 422, {"error": f"the body does not follow {named}",
                         "problems": problems[:20]}, None
        key = h.headers.get("Idempotency-Key", "").strip()
        want = doc["record_id"] if kind == "erase-record.json" else f"sha256:{digest}"
        if key != want:
            return 400, {"error": f"Idempotency-Key should be {want!r}"}, None
        serial = safe_name(doc["drive"]["serial"] or "no-serial")
        rel = Path("records" if kind == "erase-record.json" else "runs", serial,
                   safe_name(key.removeprefix("sha256:")) + ".json")
        with self._lock:
            path = self.folder / rel
            if path.exists():
                return 200, {"status": "duplicate", "filed": rel.as_posix()}, None
            path.parent.mkdir(parents=True, exist_ok=True)
            fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".in-")
            with os.fdopen(fd, "wb") as fh:
                fh.write(body)
            os.replace(tmp, path)
        return 201, {"status": "filed", "filed": rel.as_posix()}, {
            "Location": f"{PATH}/{rel.as_posix()}"}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="ssdbench's reference asset receiver "
                                 "(127.0.0.1 only)")
    ap.add_argument("--folder", type=Path, required=True, help="where valid bodies are filed")
    ap.add_argument("--token", help="the bearer token a bench must send (none: no check)")
    ap.add_argument("--port", type=int, default=0, help="0: a free port")
    ap.add_argument("--fail-first", type=int, default=0, help="answer 503 to this many first")
    args = ap.parse_args(argv)
    receiver = AssetReceiver(args.folder, token=args.token, fail_first=args.fail_first,
                             bind_port=args.port)
    print(f"receiving at {receiver.url}, filing into {args.folder}", flush=True)
    try:
        threading.Event().wait()
    except KeyboardInterrupt:
        pass
    receiver.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
