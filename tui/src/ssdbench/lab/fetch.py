"""One HTTP(S) transfer for everything a bench fetches or sends: the kiosk config from a
URL, the lab's key (``record_key``) and the store's requests (docs/lab.md "One fetch").

* :func:`parse_url` is the one parser: white space around the URL is dropped, the scheme is
  matched without case (``HTTPS://`` is ``https://``), and a text that looks like a URL
  with another scheme (``ftp://``, ``htps://``) is a :class:`UrlError`, never a file name.
  The user and password are taken whole (a space, an ``@``, ``%``-escapes); a raw ``/``,
  ``?`` or ``#`` in them, or an ``@`` after the host, is an error: nobody can tell which
  host was meant.
* :func:`request` is one transfer with a deadline for the whole of it (connect, TLS,
  headers, body): a server that drips a byte at a time is cut off when the time is up, not
  read on while each byte comes within a socket timeout. A body shorter than its
  Content-Length is an error, never used.
* :func:`get` follows redirects, within the same deadline: the user and password go to
  their own origin only, and ``https`` is never followed to ``http`` (a :class:`FetchError`
  that says so: the key or the config would travel in plain text).

A FetchError's message does not name the URL (the caller does, with :func:`shown`: no user,
password or query), and any text a library made goes through
:func:`ssdbench.untrusted.without_url_secrets` and loses the password.
"""

from __future__ import annotations

import base64
import http.client
import re
import socket
import ssl
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from urllib.parse import unquote, urljoin

from ssdbench.untrusted import without_url_secrets

SCHEMES = ("http", "https")
DEFAULT_PORTS = {"http": 80, "https": 443}
MAX_REDIRECTS = 5
REDIRECTS = (301, 302, 303, 307, 308)
# a URL's start: a scheme and "//" (RFC 3986), or a scheme we speak and ":" alone
_URLISH = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_OURS = re.compile(r"^(https?):", re.IGNORECASE)
_HOST = re.compile(r"^(\[[0-9A-Fa-f:.]+\]|[A-Za-z0-9._~!$&'()*+,;=%-]+)(?::(\d{1,5}))?$")
_BAD_IN_TARGET = re.compile(r"[\x00-\x20\x7f]")


class UrlError(ValueError):
    """A URL that cannot be used; the message names no user or password."""


class FetchError(Exception):
    """A transfer that failed; the message names no secret. ``final``: an answer that will
    not change by trying again (a certificate that does not verify, a redirect to plain
    HTTP, too large); ``tls``: the certificate did not verify."""

    def __init__(self, message: str, *, final: bool = False, tls: bool = False,
                 too_large: bool = False) -> None:
        self.final = final
        self.tls = tls
        self.too_large = too_large
        super().__init__(message)


def looks_like_url(text: str) -> bool:
    """Whether ``text`` is meant as a URL (``scheme://``, or ``http:``/``https:`` in any
    case), white space around it ignored: it is then parsed as one, never a file name."""
    text = text.strip()
    return bool(_URLISH.match(text) or _OURS.match(text))


@dataclass(frozen=True)
class Url:
    scheme: str  # "http" or "https", lower case
    host: str
    port: int | None
    target: str  # the path and query, as the request line sends them
    username: str | None = None  # %-escapes decoded
    password: str | None = None

    @property
    def origin(self) -> tuple[str, str, int]:
        return self.scheme, self.host.lower(), self.port or DEFAULT_PORTS[self.scheme]

    @property
    def netloc(self) -> str:
        return self.host + (f":{self.port}" if self.port is not None else "")

    @property
    def bare(self) -> str:
        """The URL without its user and password (what a redirect is resolved against)."""
        return f"{self.scheme}://{self.netloc}{self.target}"

    @property
    def shown(self) -> str:
        """The URL as messages name it: no user, password or query (tokens live there)."""
        return f"{self.scheme}://{self.netloc}{self.target.partition('?')[0]}"

    @property
    def plain(self) -> bool:
        return self.scheme == "http"

    def secrets(self) -> list[str]:
        """The password as written and decoded, to scrub from a library's message."""
        return [s for s in (self.password,) if s]

    def auth_header(self) -> dict[str, str]:
        if self.username is None:
            return {}
        pair = f"{self.username}:{self.password or ''}".encode()
        return {"Authorization": "Basic " + base64.b64encode(pair).decode("ascii")}


def shown(text: str) -> str:
    """``text`` (a URL or not) as a message names it: the parsed URL's :attr:`Url.shown`,
    or, when it does not parse, the text with every user, password and query removed."""
    try:
        return parse_url(text).shown
    except UrlError:
        return without_url_secrets(text.strip())


def parse_url(text: str) -> Url:
    """The http(s) URL ``text`` names (see the module docstring); UrlError when it cannot
    be one, naming it without its secrets."""
    raw = text.strip()
    named = without_url_secrets(raw)
    m = _URLISH.match(raw)
    if m is None:
        if _OURS.match(raw):
            raise UrlError(f"{named} is not a valid URL: write http:// or https://")
        raise UrlError(f"{named} is not a URL")
    scheme = m.group(1).lower()
    if scheme not in SCHEMES:
        raise UrlError(f"{named} is not a valid URL: the scheme {m.group(1)[:20]!r} is not "
                       "http or https")
    rest = raw[m.end():]
    cut = min((i for i in (rest.find(c) for c in "/?#") if i >= 0), default=len(rest))
    authority, target = rest[:cut], rest[cut:]
    userinfo, at, hostport = authority.rpartition("@")
    if "@" in target:
        raise UrlError(f"{named} is not a valid URL: an '@' after the host (a '/', '?' or "
                       "'#' in a password is written %2F, %3F, %23; an '@' in a path %40)")
    hm = _HOST.match(hostport)
    if hm is None:
        raise UrlError(f"{named} is not a valid URL: no host, or a host with characters "
                       "a host cannot have")
    port = int(hm.group(2)) if hm.group(2) else None
    if port is not None and not 0 < port < 65536:
        raise UrlError(f"{named} is not a valid URL: the port is not 1 to 65535")
    target = target.partition("#")[0] or "/"
    if target.startswith("?"):
        target = "/" + target
    if _BAD_IN_TARGET.search(target):
        raise UrlError(f"{named} is not a valid URL: a space or control character in the "
                       "path (write a space %20)")
    username = password = None
    if at:
        user, colon, pw = userinfo.partition(":")
        username, password = unquote(user), unquote(pw) if colon else None
    return Url(scheme, hm.group(1), port, target, username, password)


def _scrub(text: str, url: Url) -> str:
    text = without_url_secrets(text)
    for secret in url.secrets():
        if len(secret) >= 3:
            text = text.replace(secret, "REMOVED")
    return text


class _Watch:
    """The deadline of one transfer: when it passes, the connection's socket is shut down
    (a dripping server's next byte never arrives), and every socket operation before that
    waits at most until the deadline."""

    def __init__(self, end: float) -> None:
        self.end = end
        self.fired = False
        self._done = False
        self._dup: socket.socket | None = None
        self._lock = threading.Lock()
        self._timer = threading.Timer(max(0.0, end - time.monotonic()), self._fire)
        self._timer.daemon = True
        self._timer.start()

    def left(self) -> float:
        left = self.end - time.monotonic()
        if left <= 0:
            self.fired = True
            raise TimeoutError("the deadline passed")
        return left

    def arm(self, sock: socket.socket) -> None:
        # a duplicate of the descriptor: shutting it down ends the connection, and it
        # cannot be another socket by then (it is closed only here)
        with self._lock:
            if not self._done:
                self._dup = sock.dup()
        sock.settimeout(self.left())

    def _fire(self) -> None:
        with self._lock:
            self.fired = True
            if self._dup is not None and not self._done:
                try:
                    self._dup.shutdown(socket.SHUT_RDWR)
                except OSError:
                    pass

    def done(self) -> None:
        self._timer.cancel()
        with self._lock:
            self._done = True
            if self._dup is not None:
                self._dup.close()
                self._dup = None


class _Http(http.client.HTTPConnection):
    def __init__(self, url: Url, watch: _Watch) -> None:
        # the address without its brackets, the port always given ("[::1]" read alone
        # would give port 1)
        super().__init__(url.host.removeprefix("[").removesuffix("]"), url.origin[2],
                         timeout=watch.left())
        self._watch = watch

    def connect(self) -> None:
        self.timeout = self._watch.left()
        super().connect()
        self._watch.arm(self.sock)


class _Https(_Http):
    default_port = 443

    def __init__(self, url: Url, watch: _Watch, context: ssl.SSLContext) -> None:
        super().__init__(url, watch)
        self._ssl = context

    def connect(self) -> None:
        super().connect()
        self.sock = self._ssl.wrap_socket(self.sock, server_hostname=self.host)


@dataclass(frozen=True)
class Answer:
    status: int
    reason: str
    headers: Mapping[str, str]  # names in lower case
    body: bytes
    url: Url  # where it came from (after redirects)


def _size(n: int) -> str:
    return f"{n >> 20} MiB" if n % (1 << 20) == 0 else f"{n >> 10} KiB"


def request(url: Url, method: str = "GET", *, body: bytes | None = None,
            headers: Mapping[str, str] | None = None, timeout_s: float,
            until: float | None = None, limit: int | None = None,
            context: ssl.SSLContext | None = None, auth: bool = True) -> Answer:
    """One request and its whole answer within ``timeout_s`` seconds (and by ``until``, a
    ``time.monotonic()`` value, when given): a FetchError otherwise. The URL's user and
    password are sent as basic auth when ``auth``. No redirect is followed here. A body
    over ``limit`` bytes, or shorter than its Content-Length, is a FetchError."""
    t0 = time.monotonic()
    end = t0 + timeout_s if until is None else min(t0 + timeout_s, until)
    late = FetchError(f"no whole answer within {max(0.0, end - t0):.3g} s (a slow or "
                      "stalled server)")
    if end <= t0:
        raise FetchError("no time left before the deadline")
    watch = _Watch(end)
    conn: _Http | None = None
    try:
        if url.scheme == "https":
            conn = _Https(url, watch, context or ssl.create_default_context())
        else:
            conn = _Http(url, watch)
        sent = {"User-Agent": "ssdbench", **(url.auth_header() if auth else {}),
                **(headers or {})}
        conn.request(method, url.target, body=body, headers=sent)
        resp = conn.getresponse()
        data = resp.read(limit + 1) if limit is not None else resp.read()
        announced = resp.getheader("Content-Length")
        answer = Answer(resp.status, resp.reason,
                        {k.lower(): v for k, v in resp.getheaders()}, data, url)
        if watch.fired:  # the body ended because the deadline shut the socket down
            raise late
    except FetchError:
        raise
    except ssl.SSLCertVerificationError as exc:
        raise FetchError("the server's certificate does not verify: "
                         f"{_scrub(str(exc.verify_message), url)}", final=True,
                         tls=True) from None
    except (OSError, ValueError, http.client.HTTPException) as exc:
        # refused, DNS, a reset, a malformed answer, a chunked body cut mid-chunk, or the
        # deadline (the watch shut the socket down, or a read waited out the time left)
        if watch.fired or time.monotonic() >= end:
            raise late from None
        raise FetchError(f"{type(exc).__name__}: {_scrub(str(exc), url)}") from None
    finally:
        watch.done()
        if conn is not None:
            conn.close()
    if limit is not None and len(answer.body) > limit:
        raise FetchError(f"is larger than {_size(limit)}", final=True, too_large=True)
    if announced is not None and method != "HEAD" and answer.status not in (204, 304):
        try:
            want = int(announced.strip())
        except ValueError:
            raise FetchError(f"the server announced a Content-Length of {announced[:40]!r}: "
                             "not a length") from None
        if len(answer.body) < want:
            raise FetchError(f"the answer was cut: {len(answer.body)} of its {want} bytes "
                             "arrived")
    return answer


def get(url: Url, *, timeout_s: float, limit: int,
        context: ssl.SSLContext | None = None) -> Answer:
    """GET ``url``, following up to MAX_REDIRECTS redirects within the one deadline of
    ``timeout_s`` seconds. The user and password go to the URL's own origin only; a
    redirect from https to http is a final FetchError (never followed)."""
    return follow(url, timeout_s=timeout_s, limit=limit, context=context)


def follow(url: Url, method: str = "GET", *, body: bytes | None = None,
           headers: Mapping[str, str] | None = None,
           home_headers: Mapping[str, str] | None = None,
           statuses: tuple[int, ...] = REDIRECTS, timeout_s: float,
           until: float | None = None, limit: int,
           context: ssl.SSLContext | None = None, what: str = "answer") -> Answer:
    """``method`` ``url`` (with ``body``), following up to MAX_REDIRECTS redirects whose
    status is in ``statuses`` (the same method and body) within the one deadline of
    ``timeout_s`` seconds (and ``until``). ``home_headers`` (default: the URL's user and
    password as basic auth) and ``context`` (a lab CA) go to the URL's own origin only; a
    redirect from https to http is a final FetchError naming ``what`` (never followed)."""
    end = time.monotonic() + timeout_s
    if until is not None:
        end = min(end, until)
    own = url.auth_header() if home_headers is None else dict(home_headers)
    current = url
    for _hop in range(MAX_REDIRECTS + 1):
        home = current.origin == url.origin  # the credentials go there only
        answer = request(current, method, body=body,
                         headers={**(headers or {}), **(own if home else {})},
                         timeout_s=timeout_s, until=end, limit=limit, auth=False,
                         context=context if home else None)
        location = answer.headers.get("location")
        if answer.status not in statuses or not location:
            return answer
        try:
            nxt = parse_url(urljoin(current.bare, location.strip()))
        except UrlError as exc:
            raise FetchError(f"redirected to a URL that cannot work ({exc})",
                             final=True) from None
        nxt = Url(nxt.scheme, nxt.host, nxt.port, nxt.target)  # never a Location's user
        if current.scheme == "https" and nxt.scheme != "https":
            raise FetchError(f"redirected from https to http ({nxt.shown}): refused, the "
                             f"{what} would travel in plain text; name the https URL "
                             "itself", final=True)
        current = nxt
    raise FetchError(f"more than {MAX_REDIRECTS} redirects", final=True)
