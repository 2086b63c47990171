"""The stores a bench can send results to: S3-compatible (boto3) and HTTP(S) PUT / WebDAV.

Each store has ``put(key, data)`` (the S3 store returns the object's ETag, the fleet
build's version of a file; an HTTP store None), ``get(key)`` and ``keys(prefix)``; every
failure is a
:class:`StoreError` whose message names no secret. A reader never sees half an object: an
S3 PUT is atomic, nginx's PUT writes a temp file and renames it, and ``webdav`` PUTs a temp
name and MOVEs it over the final one.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import http.client
import re
import select
import ssl
import threading
import time
import uuid
import xml.etree.ElementTree as ET
from collections.abc import Collection
from typing import Any, Protocol
from urllib.parse import quote, unquote, urlsplit

from ssdbench.lab.config import StoreConfig, scrub
from ssdbench.lab.fetch import FetchError, Url, parse_url, request

# an HTTP/WebDAV request's whole transfer (lab/fetch.py): this, plus the time its body
# takes at MIN_RATE bytes a second (a large fio log on a slow link)
TIMEOUT_S = 20.0
MIN_RATE = 256 * 1024
# WebDAV listings (HttpStore.keys): <prefix>/<bench>/<serial>/<run id>/<run>/ is 5 deep
LIST_MAX_DEPTH = 8
LIST_MAX_FOLDERS = 100_000


class StoreError(Exception):
    """A send or read that failed. ``refused``: the store answered no (credentials,
    permissions), as opposed to being unreachable."""

    def __init__(self, message: str, *, refused: bool = False) -> None:
        self.refused = refused
        super().__init__(message)


class Store(Protocol):
    def put(self, key: str, data: bytes, content_type: str = ...) -> str | None: ...

    def get(self, key: str) -> bytes: ...

    def keys(self, prefix: str) -> list[str]: ...

    # a store may also have stop_by(until): every request from then on ends by ``until``
    # (a time.monotonic() value) or fails; the uploader's close uses it (HttpStore)


def content_type(name: str) -> str:
    # "UTF-8" in capitals: Jetty (s3proxy) rewrites a lower-case charset before it checks
    # the request's signature, which then never matches (403 SignatureDoesNotMatch)
    for ext, ctype in ((".json", "application/json"), (".csv", "text/csv"),
                       (".html", "text/html; charset=UTF-8"), (".txt", "text/plain"),
                       (".log", "text/plain"), (".png", "image/png"),
                       (".svg", "image/svg+xml"), (".fio", "text/plain")):
        if name.endswith(ext):
            return ctype
    return "application/octet-stream"


def open_store(cfg: StoreConfig) -> Store:
    return S3Store(cfg) if cfg.kind == "s3" else HttpStore(cfg)


_REFUSED_CODES = ("AccessDenied", "InvalidAccessKeyId", "SignatureDoesNotMatch", "NoSuchBucket")


def answered(what: str, status: object, code: str, secrets: list[str]) -> StoreError:
    """The StoreError of an S3 answer that is not 2xx: its status and S3 error code;
    refused (the keys, bucket or permissions) for 401/403 or a code that says so."""
    refused = status in (401, 403) or code in _REFUSED_CODES
    msg = f"{what}: the store answered {status} {code}".rstrip()
    if refused:
        msg += " (check the store's keys, bucket and permissions)"
    return StoreError(scrub(msg, secrets), refused=refused)


class S3Store:
    """An S3-compatible bucket through boto3 (imported only when used); its GETs through
    :class:`S3Get` when it can (``direct_gets``, the endpoint a plain URL and no proxy set
    for it): the fleet build reads 10,000 new run.json a time (docs/lab.md "S3 at a million
    runs")."""

    def __init__(self, cfg: StoreConfig, *, direct_gets: bool = True) -> None:
        self.cfg = cfg
        self._client: Any = None
        self._direct: S3Get | None = S3Get.of(cfg) if direct_gets else None

    def stop_by(self, until: float | None) -> None:
        """boto3's timeouts are per socket read: a deadline cannot be kept here (the
        uploader's close leaves such a request behind in its thread)."""

    def _s3(self) -> Any:
        if self._client is None:
            try:
                import boto3  # type: ignore[import-untyped]
                from botocore.config import Config  # type: ignore[import-untyped]
            except ImportError as exc:
                raise StoreError("boto3 is not installed: the s3 store needs it") from exc
            assert self.cfg.access_key is not None and self.cfg.secret_key is not None
            self._client = boto3.session.Session().client(
                "s3", endpoint_url=self.cfg.endpoint, region_name=self.cfg.region,
                aws_access_key_id=self.cfg.access_key.reveal(),
                aws_secret_access_key=self.cfg.secret_key.reveal(),
                verify=str(self.cfg.ca_file) if self.cfg.ca_file else True,
                config=Config(connect_timeout=TIMEOUT_S, read_timeout=TIMEOUT_S,
                              retries={"max_attempts": 1, "mode": "standard"},
                              s3={"addressing_style": "path"},
                              request_checksum_calculation="when_required",
                              response_checksum_validation="when_required"))
        return self._client

    def _error(self, what: str, exc: Exception) -> StoreError:
        from botocore.exceptions import ClientError  # type: ignore[import-untyped]

        if isinstance(exc, ClientError):
            err = exc.response.get("Error", {})
            code = str(err.get("Code", ""))
            status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode")
            return answered(what, status, code, self.cfg.secrets())
        return StoreError(scrub(f"{what}: {type(exc).__name__}: {exc}", self.cfg.secrets()))

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> str:
        """Send ``data`` to ``key``; the object's ETag as the store answered it (quoted, as
        a listing gives it)."""
        try:
            answer = self._s3().put_object(Bucket=self.cfg.bucket, Key=key, Body=data,
                                           ContentType=content_type)
            return str(answer.get("ETag") or "")
        except StoreError:
            raise
        except Exception as exc:  # botocore raises many kinds; all mean "not sent"
            raise self._error(f"sending {key}", exc) from None

    def get(self, key: str, limit: int | None = None) -> bytes:
        """The object's bytes; with ``limit``, at most its first ``limit + 1`` (a Range
        request: more than ``limit`` means too large, and no more is read)."""
        if self._direct is not None:
            return self._direct.get(key, limit)
        try:
            more = {"Range": f"bytes=0-{limit}"} if limit is not None else {}
            body: bytes = self._s3().get_object(Bucket=self.cfg.bucket, Key=key,
                                                **more)["Body"].read()
            return body
        except StoreError:
            raise
        except Exception as exc:
            raise self._error(f"reading {key}", exc) from None

    def keys(self, prefix: str) -> list[str]:
        try:
            pages = self._s3().get_paginator("list_objects_v2").paginate(
                Bucket=self.cfg.bucket, Prefix=prefix)
            # a key ending in / is a folder marker (s3proxy's filesystem backend lists them)
            return [o["Key"] for page in pages for o in page.get("Contents", [])
                    if not o["Key"].endswith("/")]
        except StoreError:
            raise
        except Exception as exc:
            raise self._error(f"listing {prefix}", exc) from None

    def tagged_keys(self, prefix: str, start_after: str | None = None) -> dict[str, str]:
        """:meth:`keys` with each object's ETag (the fleet index's version of a file); only
        the keys after ``start_after`` when given."""
        try:
            more = {"StartAfter": start_after} if start_after else {}
            pages = self._s3().get_paginator("list_objects_v2").paginate(
                Bucket=self.cfg.bucket, Prefix=prefix, **more)
            return {o["Key"]: str(o.get("ETag", "")) for page in pages
                    for o in page.get("Contents", []) if not o["Key"].endswith("/")}
        except StoreError:
            raise
        except Exception as exc:
            raise self._error(f"listing {prefix}", exc) from None

    def folders(self, prefix: str) -> list[str]:
        """The folders right under ``prefix`` (``prefix`` ends with /), each as
        ``<prefix><name>/``: one listing with a delimiter, not every key below."""
        try:
            pages = self._s3().get_paginator("list_objects_v2").paginate(
                Bucket=self.cfg.bucket, Prefix=prefix, Delimiter="/")
            return sorted({str(p["Prefix"]) for page in pages
                           for p in page.get("CommonPrefixes", [])})
        except StoreError:
            raise
        except Exception as exc:
            raise self._error(f"listing the folders of {prefix}", exc) from None


# ---- S3 GETs without boto3's per-request machinery ----

# SigV4 (AWS's documented signature version 4, as S3 takes it): the hash of an empty body
_EMPTY_SHA256 = hashlib.sha256(b"").hexdigest()
_S3_CODE = re.compile(rb"<Code>([A-Za-z0-9.]{1,64})</Code>")
ERROR_BODY_LIMIT = 64 << 10  # bytes of an error answer read (its <Code>)
POOL_IDLE = 16  # keep-alive connections kept between GETs (the fleet build fetches with 8)


class S3Get:
    """S3 GET requests signed here (SigV4, headers only; the signing key derived once a
    day) and sent over keep-alive connections shared by the threads that call :meth:`get`.
    boto3 spends about 1 ms of CPU on each request (event hooks, serialising, parsing,
    signing), under the GIL: 10,000 new run.json read by the fleet build were ~19 s of it.

    What boto3's GET did, this does: the same TLS trust (``ca_file``, else botocore's CA
    bundle; the host name checked), a timeout of TIMEOUT_S on the connection and on each
    socket read (boto3's connect_timeout and read_timeout), no retry (but a GET sent on a
    kept connection the store had closed is sent once more on a new one: a GET changes
    nothing), no redirect followed, and every failure a :class:`StoreError` naming no
    secret (the error code an answer gives only when it looks like one). With a
    ``limit``, a Range request, and at most ``limit + 1`` bytes read whatever the store
    sends (a store that ignores Range costs no more). A body shorter than its
    Content-Length is an error, never used."""

    def __init__(self, cfg: StoreConfig, url: Url) -> None:
        assert cfg.access_key is not None and cfg.secret_key is not None
        self.cfg = cfg
        self.https = url.scheme == "https"
        self.netloc = url.netloc  # the Host header, as signed
        self.host = url.host.removeprefix("[").removesuffix("]")
        self.port = url.origin[2]
        self.base = f"{url.target.rstrip('/')}/{quote(cfg.bucket, safe='')}/"
        self._context: ssl.SSLContext | None = None  # https: made by the first connection
        self.scope_tail = f"/{cfg.region}/s3/aws4_request"
        self._signing = ("", b"")  # (day, its signing key): one attribute, threads share it
        self._idle: list[http.client.HTTPConnection] = []
        self._lock = threading.Lock()

    @classmethod
    def of(cls, cfg: StoreConfig) -> S3Get | None:
        """The direct GETs of the store ``cfg`` describes; None (boto3 reads) when its
        endpoint has a query, or a proxy is set for its scheme (boto3 honours one)."""
        if cfg.access_key is None or cfg.secret_key is None:
            return None
        from urllib.request import getproxies

        try:
            url = parse_url(cfg.endpoint)
        except ValueError:
            return None
        proxies = getproxies()  # the *_proxy environment variables, as boto3 reads them
        if ("?" in url.target or url.username is not None
                or url.scheme in proxies or "all" in proxies):
            return None
        return cls(cfg, url)

    # ---- signing ----

    def _key(self, day: str) -> bytes:
        known, key = self._signing
        if day != known:  # a new day: a new signing key
            assert self.cfg.secret_key is not None
            key = ("AWS4" + self.cfg.secret_key.reveal()).encode()
            for part in (day, self.cfg.region, "s3", "aws4_request"):
                key = hmac.new(key, part.encode(), hashlib.sha256).digest()
            self._signing = (day, key)
        return key

    def headers(self, path: str, extra: dict[str, str], now: float) -> dict[str, str]:
        """The signed headers of a GET of ``path`` (as the request line sends it) with
        ``extra`` headers (lower-case names, all signed) at ``now`` (seconds since 1970)."""
        assert self.cfg.access_key is not None
        stamp = time.strftime("%Y%m%dT%H%M%SZ", time.gmtime(now))
        day = stamp[:8]
        heads = {"host": self.netloc, **extra, "x-amz-content-sha256": _EMPTY_SHA256,
                 "x-amz-date": stamp}
        names = sorted(heads)
        signed = ";".join(names)
        canonical = "\n".join(("GET", path, "", *(f"{n}:{heads[n]}" for n in names), "",
                               signed, _EMPTY_SHA256))
        scope = day + self.scope_tail
        to_sign = "\n".join(("AWS4-HMAC-SHA256", stamp, scope,
                             hashlib.sha256(canonical.encode()).hexdigest()))
        signature = hmac.new(self._key(day), to_sign.encode(), hashlib.sha256).hexdigest()
        heads["authorization"] = (
            f"AWS4-HMAC-SHA256 Credential={self.cfg.access_key.reveal()}/{scope}, "
            f"SignedHeaders={signed}, Signature={signature}")
        return heads

    # ---- connections ----

    def context(self) -> ssl.SSLContext:
        """The TLS trust boto3 has: the store's ``ca_file`` alone, else botocore's CA bundle
        (certifi's, or botocore's copy of it); the host name checked."""
        if self._context is None:
            if self.cfg.ca_file is not None:
                cafile = str(self.cfg.ca_file)
            else:
                try:
                    from botocore.httpsession import (  # type: ignore[import-untyped]
                        get_cert_path,
                    )
                except ImportError as exc:
                    raise StoreError("boto3 is not installed: the s3 store needs it") from exc
                cafile = str(get_cert_path(True))
            self._context = ssl.create_default_context(cafile=cafile)
        return self._context

    def _connect(self) -> http.client.HTTPConnection:
        if self.https:
            return http.client.HTTPSConnection(self.host, self.port, timeout=TIMEOUT_S,
                                               context=self.context())
        return http.client.HTTPConnection(self.host, self.port, timeout=TIMEOUT_S)

    def _take(self) -> tuple[http.client.HTTPConnection, bool]:
        """A kept connection (True) the store has not closed meanwhile, or a new one."""
        with self._lock:
            while self._idle:
                conn = self._idle.pop()
                sock = conn.sock
                # readable while idle: closed by the store (or junk sent): not used
                if sock is not None and not select.select([sock], [], [], 0)[0]:
                    return conn, True
                conn.close()
        return self._connect(), False

    def _keep(self, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            if len(self._idle) < POOL_IDLE:
                self._idle.append(conn)
                return
        conn.close()

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, []
        for conn in idle:
            conn.close()

    # ---- one GET ----

    def get(self, key: str, limit: int | None = None) -> bytes:
        what = f"reading {key}"
        try:
            return self._get(key, limit)
        except StoreError:
            raise
        except ssl.SSLCertVerificationError as exc:
            raise StoreError(scrub(f"{what}: the store's certificate does not verify: "
                                   f"{exc.verify_message}", self.cfg.secrets())) from None
        except TimeoutError:
            raise StoreError(f"{what}: no answer within {TIMEOUT_S:g} s (a slow or stalled "
                             "store)") from None
        except Exception as exc:  # refused, reset, a malformed answer, a key not UTF-8
            raise StoreError(scrub(f"{what}: {type(exc).__name__}: {exc}",
                                   self.cfg.secrets())) from None

    def _get(self, key: str, limit: int | None) -> bytes:
        path = self.base + quote(key, safe="/~")
        extra = {"range": f"bytes=0-{limit}"} if limit is not None else {}
        conn, kept = self._take()
        try:
            try:
                conn.request("GET", path, headers=self.headers(path, extra, time.time()))
                resp = conn.getresponse()
            except ConnectionError:  # a kept connection the store closed as it was taken
                if not kept:
                    raise
                conn.close()
                conn = self._connect()
                conn.request("GET", path, headers=self.headers(path, extra, time.time()))
                resp = conn.getresponse()
            status = resp.status
            ok = 200 <= status < 300
            want = (limit + 1 if limit is not None else None) if ok else ERROR_BODY_LIMIT
            length = resp.length  # None: chunked, or until the store closes
            if length is not None:
                n = length if want is None else min(length, want)
                body = resp.read(n)
                if len(body) < n:
                    raise StoreError(f"reading {key}: the answer was cut: {len(body)} of its "
                                     f"{length} bytes arrived")
            else:
                body = resp.read() if want is None else resp.read(want)
            if resp.isclosed() and not resp.will_close:  # read whole: the connection stays
                self._keep(conn)
            else:
                conn.close()
        except BaseException:
            conn.close()
            raise
        if not ok:
            raise self._refusal(key, status, body)
        return body

    def _refusal(self, key: str, status: int, body: bytes) -> StoreError:
        """The StoreError of an answer that is not 2xx, as :meth:`S3Store._error` words
        boto3's: the status and the S3 error code (only when it looks like one)."""
        m = _S3_CODE.search(body)
        code = m.group(1).decode() if m else ""
        return answered(f"reading {key}", status, code, self.cfg.secrets())


class HttpStore:
    """Plain HTTP(S) PUT (``http``) or WebDAV PUT + MOVE (``webdav``) under the endpoint."""

    def __init__(self, cfg: StoreConfig) -> None:
        self.cfg = cfg
        self.url = parse_url(cfg.endpoint)  # parse_store checked it
        self.https = self.url.scheme == "https"
        self.host = self.url.host
        self.port = self.url.port
        self.base = self.url.target.partition("?")[0].rstrip("/")
        self._ctx = ssl.create_default_context(
            cafile=str(cfg.ca_file) if cfg.ca_file else None) if self.https else None
        self._until: float | None = None

    def stop_by(self, until: float | None) -> None:
        self._until = until

    def _headers(self) -> dict[str, str]:
        if self.cfg.token:
            return {"Authorization": f"Bearer {self.cfg.token.reveal()}"}
        if self.cfg.password:
            raw = f"{self.cfg.username}:{self.cfg.password.reveal()}".encode()
            return {"Authorization": "Basic " + base64.b64encode(raw).decode()}
        return {}

    def _path(self, key: str) -> str:
        return f"{self.base}/{quote(key)}"

    def _request(self, method: str, path: str, body: bytes | None = None,
                 headers: dict[str, str] | None = None) -> tuple[int, bytes]:
        """One request through the one fetch (lab/fetch.py): its whole transfer within
        TIMEOUT_S (plus the body's time at MIN_RATE), and by the deadline of
        :meth:`stop_by`; no redirect followed."""
        url = Url(self.url.scheme, self.url.host, self.url.port, path)
        try:
            answer = request(url, method, body=body,
                             headers={**self._headers(), **(headers or {})},
                             timeout_s=TIMEOUT_S + len(body or b"") / MIN_RATE,
                             until=self._until, context=self._ctx, auth=False)
        except FetchError as exc:
            raise StoreError(scrub(f"{method} {unquote(path)}: {exc}",
                                   self.cfg.secrets())) from None
        return answer.status, answer.body

    def _check(self, what: str, status: int) -> None:
        if 200 <= status < 300:
            return
        refused = status in (401, 403)
        msg = f"{what}: the store answered {status}"
        if refused:
            msg += " (check the store's username/password or token and permissions)"
        raise StoreError(msg, refused=refused)

    def _mkcols(self, key: str) -> None:
        parts = key.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            self._request("MKCOL", self._path("/".join(parts[:i])) + "/")

    def put(self, key: str, data: bytes, content_type: str = "application/octet-stream") -> None:
        headers = {"Content-Type": content_type}
        if self.cfg.kind == "http":
            status, _ = self._request("PUT", self._path(key), data, headers)
            self._check(f"sending {key}", status)
            return None
        folder, _, name = key.rpartition("/")
        temp = f"{folder}/.{name}.tmp-{uuid.uuid4().hex[:12]}" if folder else f".{name}.tmp"
        status, _ = self._request("PUT", self._path(temp), data, headers)
        if status == 409:  # a parent collection is missing (Apache, Nextcloud)
            self._mkcols(key)
            status, _ = self._request("PUT", self._path(temp), data, headers)
        self._check(f"sending {key}", status)
        dest = ("https" if self.https else "http") + f"://{self.host}"
        dest += f":{self.port}" if self.port else ""
        status, _ = self._request("MOVE", self._path(temp), None,
                                  {"Destination": dest + self._path(key), "Overwrite": "T"})
        if not 200 <= status < 300:
            self._request("DELETE", self._path(temp))
        self._check(f"moving {key} into place", status)

    def get(self, key: str) -> bytes:
        status, body = self._request("GET", self._path(key))
        self._check(f"reading {key}", status)
        return body

    def keys(self, prefix: str, skip: Collection[str] = ()) -> list[str]:
        """Every file under ``prefix`` (WebDAV PROPFIND, depth 1, folder by folder). The
        listing is bounded: folders at most LIST_MAX_DEPTH below ``prefix`` (a results
        layout has 5), at most LIST_MAX_FOLDERS folders, each once, only folders under the
        one listed; an answer that is not WebDAV XML is a StoreError naming the folder.
        ``skip``: names of folders right under ``prefix`` not entered (the fleet build
        skips ``_fleet`` and ``_keys``)."""
        out: list[str] = []
        start = prefix.strip("/")
        skipped = {f"{start}/{name}" if start else name for name in skip}
        todo = [start]
        seen = {start}
        root = self.base + "/"
        depth0 = start.count("/") + 1 if start else 0
        while todo:
            folder = todo.pop()
            path = self._path(folder) + "/" if folder else root
            status, body = self._request("PROPFIND", path, None, {"Depth": "1"})
            if status == 404:
                continue
            self._check(f"listing {folder or '/'}", status)
            try:
                tree = ET.fromstring(body)
            except (ET.ParseError, ValueError, RecursionError) as exc:
                raise StoreError(f"listing {folder or '/'}: the answer is not WebDAV XML "
                                 f"({type(exc).__name__})") from None
            if tree.tag != "{DAV:}multistatus":
                raise StoreError(f"listing {folder or '/'}: the answer is not WebDAV XML "
                                 f"(<{tree.tag[:40]}>, not a DAV multistatus)")
            answers = list(tree.iter("{DAV:}response"))
            for resp in answers:
                href = unquote(urlsplit(resp.findtext("{DAV:}href") or "").path)
                rel = href[len(root):] if href.startswith(root) else href.lstrip("/")
                name = rel.rstrip("/")
                if name == folder or not rel or (folder and not name.startswith(folder + "/")):
                    continue  # the folder itself, or not below it
                if rel.endswith("/"):
                    if (name in seen or name in skipped
                            or name.count("/") + 1 - depth0 > LIST_MAX_DEPTH):
                        continue
                    if len(seen) >= LIST_MAX_FOLDERS:
                        raise StoreError(f"listing {start or '/'}: more than "
                                         f"{LIST_MAX_FOLDERS} folders: not a results store")
                    seen.add(name)
                    todo.append(name)
                elif ".tmp-" not in rel.rpartition("/")[2]:
                    out.append(rel)
        return sorted(out)
