"""The kiosk config's ``[store]`` section: where a bench sends its results (docs/lab.md).

::

    [store]
    kind = "s3"                          # s3 | http | webdav
    endpoint = "https://s3.lab.example"  # s3: the service; http/webdav: the base URL
    bucket = "ssdbench"                  # s3 only
    prefix = "lab1"                      # keys: <prefix>/<bench>/<serial>/<run id>/<file>
    region = "us-east-1"                 # s3 only (default us-east-1)
    access_key = "..."                   # s3: keys, or credentials_file (+ profile)
    secret_key = "..."
    credentials_file = "store.ini"       # s3: an AWS-style INI file, relative to the config
    profile = "default"
    username = "..."                     # http/webdav: basic auth (or token = "...")
    password = "..."
    ca_file = "lab-ca.pem"               # trust only this CA for the store (else the system's)
    bench = "bench-07"                   # this bench's name (default: the host name)
    status_seconds = 10                  # how often status.json is sent

And its ``[post]`` section (:func:`parse_post`): each finished record POSTed to an asset
system (docs/lab.md "Results out: POST to an asset system")::

    [post]
    url = "https://assets.lab.example/api/ssdbench"
    token = "..."                        # Bearer; or username/password (Basic)
    ca_file = "lab-ca.pem"
    what = "records"                     # or "runs": each finished run.json too

Secrets are :class:`Secret` values: their ``repr`` and ``str`` never show them.
"""

from __future__ import annotations

import configparser
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.lab.fetch import UrlError, parse_url

KINDS = ("s3", "http", "webdav")
STORE_KEYS = ("kind", "endpoint", "bucket", "prefix", "region", "access_key", "secret_key",
              "credentials_file", "profile", "username", "password", "token", "ca_file",
              "bench", "status_seconds")
NAME_RE = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$")


class StoreConfigError(ValueError):
    """A bad ``[store]`` value: ``key`` (``store.endpoint``) and what is wrong."""

    def __init__(self, key: str, problem: str) -> None:
        self.key = key
        self.problem = problem
        super().__init__(f"`{key}`: {problem}")


class Secret:
    """A password or key: ``repr``/``str``/f-strings show ``***``; ``reveal()`` the value."""

    __slots__ = ("_value",)

    def __init__(self, value: str) -> None:
        self._value = value

    def reveal(self) -> str:
        return self._value

    def __repr__(self) -> str:
        return "Secret('***')"

    __str__ = __repr__

    def __format__(self, spec: str) -> str:
        return "***"

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Secret) and other._value == self._value

    def __hash__(self) -> int:
        return hash(self._value)

    def __bool__(self) -> bool:
        return bool(self._value)


@dataclass(frozen=True)
class StoreConfig:
    kind: str
    endpoint: str
    prefix: str = ""
    bucket: str = ""
    region: str = "us-east-1"
    access_key: Secret | None = None
    secret_key: Secret | None = None
    username: str = ""
    password: Secret | None = None
    token: Secret | None = None
    ca_file: Path | None = None
    bench: str = ""
    status_seconds: float = 10.0
    # the operator's fields each run is also keyed by (the kiosk config's ``[fields] keys``,
    # lab/storekeys.py): not a ``[store]`` key, the kiosk config sets it
    keys: tuple[str, ...] = ()

    def secrets(self) -> list[str]:
        """Every secret value (to scrub from any message that might quote one)."""
        return [s.reveal() for s in (self.access_key, self.secret_key, self.password,
                                     self.token) if s]

    def describe(self) -> str:
        """Where results go, without a secret: ``s3 https://host/bucket/prefix``."""
        where = self.endpoint.rstrip("/")
        if self.bucket:
            where += f"/{self.bucket}"
        if self.prefix:
            where += f"/{self.prefix}"
        return f"{self.kind} {where}"


def scrub(text: str, secrets: list[str]) -> str:
    """``text`` with every secret (4 characters or more) replaced by ``***``."""
    for s in sorted(secrets, key=len, reverse=True):
        if len(s) >= 4:
            text = text.replace(s, "***")
    return text


def _str(section: dict[str, Any], key: str, *, default: str = "") -> str:
    value = section.get(key, default)
    if not isinstance(value, str):
        raise StoreConfigError(f"store.{key}", f"expected a string, got {value!r}")
    return value.strip()


def _credentials_file(path: Path, profile: str) -> tuple[str, str]:
    ini = configparser.ConfigParser(interpolation=None)
    try:
        with path.open(encoding="utf-8") as fh:
            ini.read_file(fh)
    except (OSError, UnicodeDecodeError, configparser.Error) as exc:
        raise StoreConfigError("store.credentials_file",
                               f"{path} cannot be read: {type(exc).__name__}") from exc
    if not ini.has_section(profile):
        raise StoreConfigError("store.profile", f"no [{profile}] section in {path}")
    key = ini.get(profile, "aws_access_key_id", fallback="").strip()
    secret = ini.get(profile, "aws_secret_access_key", fallback="").strip()
    if not key or not secret:
        raise StoreConfigError("store.credentials_file",
                               f"[{profile}] in {path} needs aws_access_key_id and "
                               "aws_secret_access_key")
    return key, secret


def parse_store(section: object, base: Path) -> StoreConfig:
    """Validate a ``[store]`` table; relative file names are relative to ``base`` (the config
    file's folder). Raises :class:`StoreConfigError` naming the key."""
    if not isinstance(section, dict):
        raise StoreConfigError("store", "expected a table: [store] with key = value lines")
    unknown = sorted(set(section) - set(STORE_KEYS))
    if unknown:
        raise StoreConfigError(f"store.{unknown[0]}",
                               f"unknown key; the keys are {', '.join(STORE_KEYS)}")
    kind = _str(section, "kind")
    if kind not in KINDS:
        raise StoreConfigError("store.kind", f"expected one of {', '.join(KINDS)}, got {kind!r}")
    try:  # the one URL parser (lab/fetch.py): the scheme in any case; no secret in errors
        url = parse_url(_str(section, "endpoint"))
    except UrlError as exc:
        raise StoreConfigError("store.endpoint",
                               f"expected an http:// or https:// URL: {exc}") from None
    if url.username is not None:
        raise StoreConfigError("store.endpoint", "no user or password in the URL: use "
                               "access_key/secret_key or username/password")
    endpoint = f"{url.scheme}://{url.netloc}{url.target}"
    prefix = _str(section, "prefix").strip("/")
    if any(part in ("", ".", "..") for part in prefix.split("/")) and prefix:
        raise StoreConfigError("store.prefix", f"expected a/b/c without empty, . or .. parts, "
                               f"got {prefix!r}")

    def path_of(key: str) -> Path | None:
        name = _str(section, key)
        if not name:
            return None
        p = Path(name)
        p = p if p.is_absolute() else base / p
        if not p.is_file():
            raise StoreConfigError(f"store.{key}", f"no such file: {p}")
        return p

    ca_file = path_of("ca_file")
    bench = _str(section, "bench")
    if bench and not NAME_RE.match(bench):
        raise StoreConfigError("store.bench", "expected letters, digits, '.', '_' or '-' "
                               f"(at most 63), got {bench!r}")
    status = section.get("status_seconds", 10)
    if isinstance(status, bool) or not isinstance(status, int | float) or not 1 <= status <= 3600:
        raise StoreConfigError("store.status_seconds",
                               f"expected a number of seconds from 1 to 3600, got {status!r}")
    common: dict[str, Any] = {"kind": kind, "endpoint": endpoint.rstrip("/"), "prefix": prefix,
                              "ca_file": ca_file, "bench": bench,
                              "status_seconds": float(status)}
    if kind == "s3":
        for key in ("username", "password", "token"):
            if key in section:
                raise StoreConfigError(f"store.{key}", "is for http/webdav; s3 takes "
                                       "access_key/secret_key or credentials_file")
        bucket = _str(section, "bucket")
        if not re.fullmatch(r"[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]", bucket):
            raise StoreConfigError("store.bucket",
                                   f"expected an S3 bucket name (a-z 0-9 . -), got {bucket!r}")
        region = _str(section, "region", default="us-east-1") or "us-east-1"
        cred_file = path_of("credentials_file")
        if cred_file is not None:
            if "access_key" in section or "secret_key" in section:
                raise StoreConfigError("store.credentials_file",
                                       "give either credentials_file or access_key/secret_key")
            key, secret = _credentials_file(cred_file, _str(section, "profile",
                                                            default="default"))
        else:
            key, secret = _str(section, "access_key"), _str(section, "secret_key")
            if not key or not secret:
                raise StoreConfigError("store.access_key", "s3 needs access_key and secret_key "
                                       "(or credentials_file)")
        return StoreConfig(**common, bucket=bucket, region=region, access_key=Secret(key),
                           secret_key=Secret(secret))
    for key in ("bucket", "region", "access_key", "secret_key", "credentials_file", "profile"):
        if key in section:
            raise StoreConfigError(f"store.{key}", f"is for s3, not {kind}")
    password = _str(section, "password")
    token = _str(section, "token")
    username = _str(section, "username")
    if bool(username) != bool(password):
        raise StoreConfigError("store.password" if username else "store.username",
                               "username and password go together")
    if token and username:
        raise StoreConfigError("store.token", "give either token or username/password")
    return StoreConfig(**common, username=username,
                       password=Secret(password) if password else None,
                       token=Secret(token) if token else None)


# ---- [post]: each finished record POSTed to an asset system (docs/lab.md "Results out") ----

POST_KEYS = ("url", "token", "username", "password", "ca_file", "what")
POST_WHAT = ("records", "runs")
PLAIN_HTTP_CREDENTIALS = ("plain HTTP: anyone on this network could read the credentials and "
                          "the records; use https://")


@dataclass(frozen=True)
class PostConfig:
    """``[post]``: where each finished ``erase-record.json`` (and, with ``what = "runs"``,
    each finished ``run.json``) is POSTed."""

    url: str  # http(s), without user, password or fragment (parse_post refuses them)
    token: Secret | None = None  # sent as "Authorization: Bearer <token>"
    username: str = ""  # basic auth, with password
    password: Secret | None = None
    ca_file: Path | None = None  # trust only this CA for the receiver (else the system's)
    what: str = "records"  # "records": erase-record.json; "runs": run.json of finished runs too

    def secrets(self) -> list[str]:
        return [s.reveal() for s in (self.token, self.password) if s]

    def describe(self) -> str:
        """The URL as messages name it: no query (a token may live there)."""
        return parse_url(self.url).shown

    @property
    def warning(self) -> str | None:
        """What the console must say before the first POST (credentials over plain HTTP)."""
        if parse_url(self.url).plain and (self.token or self.password):
            return f"post to {self.describe()}: {PLAIN_HTTP_CREDENTIALS}"
        return None


def parse_post(section: object, base: Path) -> PostConfig:
    """Validate a ``[post]`` table; ``ca_file`` is relative to ``base`` (the config file's
    folder). Raises :class:`StoreConfigError` naming the key (``post.url``)."""
    if not isinstance(section, dict):
        raise StoreConfigError("post", "expected a table: [post] with key = value lines")
    unknown = sorted(set(section) - set(POST_KEYS))
    if unknown:
        raise StoreConfigError(f"post.{unknown[0]}",
                               f"unknown key; the keys are {', '.join(POST_KEYS)}")

    def text(key: str, default: str = "") -> str:
        value = section.get(key, default)
        if not isinstance(value, str):
            # never the value itself: it may be the token
            raise StoreConfigError(f"post.{key}", f"expected a string, got a "
                                   f"{type(value).__name__}")
        return value.strip()

    raw = text("url")
    if not raw:
        raise StoreConfigError("post.url", "missing: the receiver's http:// or https:// URL")
    try:  # the one URL parser (lab/fetch.py): no secret in its errors
        url = parse_url(raw)
    except UrlError as exc:
        raise StoreConfigError("post.url", f"expected an http:// or https:// URL: {exc}") from None
    if url.username is not None:
        raise StoreConfigError("post.url", "no user or password in the URL: use token, or "
                               "username and password")
    token, username, password = text("token"), text("username"), text("password")
    if ":" in username:
        raise StoreConfigError("post.username", "a ':' cannot be in a basic-auth user name")
    if bool(username) != bool(password):
        raise StoreConfigError("post.password" if username else "post.username",
                               "username and password go together")
    if token and username:
        raise StoreConfigError("post.token", "give either token or username/password")
    if any(c in token for c in "\r\n"):
        raise StoreConfigError("post.token", "a line break in the token: it cannot be a "
                               "header value")
    what = text("what", "records")
    if what not in POST_WHAT:
        raise StoreConfigError("post.what", f"expected one of {', '.join(POST_WHAT)}, "
                               f"got {what!r}")
    ca_name = text("ca_file")
    ca_file = None
    if ca_name:
        ca_file = Path(ca_name) if Path(ca_name).is_absolute() else base / ca_name
        if not ca_file.is_file():
            raise StoreConfigError("post.ca_file", f"no such file: {ca_file}")
        if url.plain:
            raise StoreConfigError("post.ca_file", "is for an https:// URL; this one is "
                                   "plain http://")
    return PostConfig(url=f"{url.scheme}://{url.netloc}{url.target}", token=Secret(token)
                      if token else None, username=username,
                      password=Secret(password) if password else None, ca_file=ca_file,
                      what=what)
