"""One fetch for the config, the lab key and the store (#42 item 4, lab/fetch.py): schemes
matched without case, an unknown scheme an error (never a file), no redirect from https to
http, a deadline for the whole transfer; against real servers on 127.0.0.1."""

from __future__ import annotations

import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

import ssdbench.kiosk.config as kconfig
import ssdbench.lab.store as store_module
from ssdbench.kiosk.config import ConfigError, load_config
from ssdbench.kiosk.labkey import prepare_record_keys
from ssdbench.lab.config import parse_store
from ssdbench.lab.store import StoreError, open_store
from ssdbench.lab.uploader import StoreUploader
from ssdbench.record.sign import forget_keys
from ssdbench.record.write import seal
from ssdbench.untrusted import without_url_secrets
from tests.unit.kiosk.test_config_url import GOOD, Server
from tests.unit.lab.netservers import Drip, tls_server_context
from tests.unit.record.test_record import record as a_record

PW = "Zq7-s3cret"


def pem() -> bytes:
    return Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()
    forget_keys()


class Stop(Exception):
    """Raised by a test's ``wait``: the first try is all the test wants."""


def stop(_s: float) -> None:
    raise Stop


# ---- one parser for every URL ----

@pytest.mark.parametrize("text", ["HTTPS://h.lab/k.pem", " https://h.lab/k.pem",
                                  "https://h.lab/k.pem\n", "Https://h.lab/k.pem"])
def test_the_scheme_is_matched_without_case_and_around_white_space(text: str) -> None:
    from ssdbench.lab.fetch import parse_url

    url = parse_url(text)
    assert (url.scheme, url.host, url.port, url.target) == ("https", "h.lab", None, "/k.pem")


def test_user_and_password_are_taken_whole() -> None:
    from ssdbench.lab.fetch import parse_url

    url = parse_url(" https://lab:pa ss@w%25rd@cfg.lab:8443/k.pem?x=1 ")
    assert (url.username, url.password) == ("lab", "pa ss@w%rd")
    assert (url.host, url.port, url.target) == ("cfg.lab", 8443, "/k.pem?x=1")
    assert url.shown == "https://cfg.lab:8443/k.pem"


@pytest.mark.parametrize("text", [
    f"ftp://lab:{PW}@h.lab/k.pem",            # an unknown scheme
    f"htps://lab:{PW}@h.lab/k.pem",           # a typo
    f"https://lab:{PW}/x@h.lab/k.pem",        # a raw / in the password
    f"https://lab:{PW}@h.lab:99999/k.pem",    # a port out of range
    f"https://lab:{PW}@/k.pem",               # no host
    f"https://lab:{PW}@h lab/k.pem",          # a space in the host
])
def test_a_url_that_cannot_work_is_an_error_that_names_no_secret(text: str) -> None:
    from ssdbench.lab.fetch import UrlError, parse_url

    with pytest.raises(UrlError) as exc:
        parse_url(text)
    assert "Zq7" not in str(exc.value) and "s3cret" not in str(exc.value), exc.value


@pytest.mark.parametrize("text", [
    f"https://lab:{PW}@cfg.lab/k.pem",
    f"HTTPS://lab:{PW}@cfg.lab/k.pem",
    f" https://lab:{PW}@cfg.lab/k.pem ",
    "https://lab:Zq7 with spaces@cfg.lab/k.pem",
    "https://lab:Zq7@at@cfg.lab/k.pem",
    "https://lab:Zq7%20esc%40aped@cfg.lab/k.pem",
    "https://lab:Zq7/slash@cfg.lab/k.pem",     # fails to parse: still redacted
    "htps://lab:Zq7-typo@cfg.lab/k.pem",
    "https://lab:Zq7?q#f@cfg.lab/k.pem",
])
def test_every_way_of_writing_a_password_is_redacted(text: str) -> None:
    shown = without_url_secrets(text)
    assert "Zq7" not in shown and "REMOVED" in shown, shown
    assert "cfg.lab" in shown, shown
    # in a line of text too (a log line, the kernel command line in a bundle)
    line = without_url_secrets(f"config {text.strip()} loaded")
    assert "Zq7" not in line and line.startswith("config "), line


# ---- the lab key and the config: one parser, one fetch ----

@pytest.mark.parametrize("form", ["HTTP://lab:{pw}@{host}/k.pem", " http://lab:{pw}@{host}/k.pem",
                                  "http://lab:{pw}@{host}/k.pem\n"])
def test_a_key_url_in_capitals_or_with_spaces_is_fetched_not_taken_for_a_file(
        server: Server, form: str) -> None:
    """It was a file path: not fetched at the start, and at the record the path's text
    (`user:password` in it) went into the UNSIGNED reason."""
    server.files["/k.pem"] = (200, pem())
    url = form.format(pw=PW, host=f"127.0.0.1:{server.port}")
    lines: list[str] = []
    prepare_record_keys([url], source="lab.toml", results=None, say=lines.append, wait=stop)
    assert len(server.auth) == 1, lines
    assert "held in memory only (plain HTTP" in lines[-1], lines
    assert PW not in "".join(lines)
    assert "signature" in seal(a_record(), url) and "unsigned" not in seal(
        a_record(), url)["signature"]


@pytest.mark.parametrize("url", [f"ftp://lab:{PW}@127.0.0.1/k.pem",
                                 f"htps://lab:{PW}@127.0.0.1/k.pem",
                                 f"FILE://lab:{PW}@localhost/k.pem"])
def test_a_key_url_with_an_unknown_scheme_stops_the_start(url: str) -> None:
    lines: list[str] = []
    with pytest.raises(ConfigError) as exc:
        prepare_record_keys([url], source="lab.toml", results=None, say=lines.append,
                            wait=stop)
    assert "http or https" in exc.value.problem and PW not in str(exc.value), exc.value
    reason = seal(a_record(), url)["signature"]["reason"]
    assert "http or https" in reason and PW not in reason, reason


def test_a_config_url_with_an_unknown_scheme_is_a_config_error() -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(f"HTTPX://lab:{PW}@127.0.0.1/k.toml", say=lambda _l: None, wait=stop)
    assert "http or https" in exc.value.problem and PW not in str(exc.value), exc.value


def test_https_is_never_followed_to_http(server: Server, tmp_path: Path,
                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """An https key URL answered by a redirect to http was followed and the key accepted,
    with no plain-HTTP warning; the config fetch shared the code."""
    ctx, ca_file = tls_server_context(tmp_path)
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    tls = Server(tls=ctx)
    try:
        key = pem()
        server.files["/k.pem"] = (200, key)
        server.files["/k.toml"] = (200, GOOD.encode())
        tls.files["/direct.pem"] = (200, key)
        tls.files["/k.pem"] = (302, server.url("/k.pem").encode())
        tls.files["/k.toml"] = (302, server.url("/k.toml").encode())
        base = f"https://lab:{PW}@127.0.0.1:{tls.port}"
        lines: list[str] = []
        # the test's CA is trusted: a key straight over https is fetched
        prepare_record_keys([base + "/direct.pem"], source="lab.toml", results=None,
                            say=lines.append, wait=stop)
        assert "plain HTTP" not in lines[-1] and "held in memory only" in lines[-1], lines
        with pytest.raises(ConfigError) as exc:
            prepare_record_keys([base + "/k.pem"], source="lab.toml", results=None,
                                say=lines.append, wait=stop)
        assert "from https to http" in exc.value.problem, exc.value
        with pytest.raises(ConfigError) as exc:
            load_config(base + "/k.toml", say=lines.append, wait=stop)
        assert "from https to http" in exc.value.problem, exc.value
    finally:
        tls.stop()
    assert server.auth == [] and PW not in "".join(lines) + str(exc.value)
    assert len(tls.auth) == 3


# ---- a deadline for the whole transfer ----

SLOW = b"HTTP/1.1 200 OK\r\nContent-Length: 4000\r\n\r\n" + b"x" * 4000


def test_a_dripping_key_server_is_given_up_at_the_deadline(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A server that drips a byte every 0.25 s was still being read after 12 s: the 15-s
    timeout was per read. Now the whole transfer has the deadline."""
    monkeypatch.setattr(kconfig, "FETCH_TIMEOUT_S", 1.5)
    drip = Drip(SLOW, for_s=10.0)
    lines: list[str] = []
    t0 = time.monotonic()
    try:
        with pytest.raises(Stop):
            prepare_record_keys([drip.url("/k.pem", f"lab:{PW}@")], source="lab.toml",
                                results=None, say=lines.append, wait=stop,
                                net_state=lambda: "network up")
    finally:
        took = time.monotonic() - t0
        drip.close()
    assert took < 2.5, (took, lines)
    assert "no whole answer within 1.5 s" in lines[-1] and PW not in lines[-1], lines


def test_a_store_request_keeps_its_deadline(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_module, "TIMEOUT_S", 1.0)
    drip = Drip(SLOW, for_s=10.0)
    cfg = parse_store({"kind": "webdav", "endpoint": drip.url("/dav"), "username": "bench",
                       "password": PW}, Path("."))
    t0 = time.monotonic()
    try:
        with pytest.raises(StoreError) as exc:
            open_store(cfg).get("lab1/x.json")
    finally:
        took = time.monotonic() - t0
        drip.close()
    assert took < 2.0, took
    assert "no whole answer within 1 s" in str(exc.value) and PW not in str(exc.value)


def test_close_keeps_its_wait_against_a_store_that_drips(tmp_path: Path) -> None:
    """close(wait_s=2) took 22 s against a dripping store (the last requests ran on, each
    read within its timeout, until the 20-s grace)."""
    drip = Drip(b"HTTP/1.1 201 Created\r\nContent-Length: 0\r\n\r\n", for_s=40.0)
    results = tmp_path / "results"
    results.mkdir()
    for name in ("index.html", "summary.csv", "state.json"):
        (results / name).write_text(f"{name}\n")
    cfg = parse_store({"kind": "webdav", "endpoint": drip.url(""), "prefix": "lab1",
                       "username": "bench", "password": PW}, Path("."))
    lines: list[str] = []
    up = StoreUploader(open_store(cfg), cfg, results, "bench-07", lines.append)
    t0 = time.monotonic()
    try:
        left = up.close(wait_s=2.0)
    finally:
        took = time.monotonic() - t0
        drip.close()
    assert drip.requests >= 1
    assert took < 3.2, took
    assert left == 3
    assert lines and PW not in "".join(lines), lines


def test_a_config_url_in_capitals_on_the_kernel_command_line_is_a_url() -> None:
    """It was taken for a file name relative to the stick."""
    from ssdbench.kiosk.config import find_config

    assert find_config(None, "quiet ssdbench.config=HTTPS://cfg.lab/k.toml", Path("/stick")) == (
        "HTTPS://cfg.lab/k.toml")
