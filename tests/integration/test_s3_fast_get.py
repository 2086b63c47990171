"""S3 GETs without boto3's per-request machinery (lab/store.py S3Get, #46: the fleet
build's 10,000 new run.json), against a real s3proxy on 127.0.0.1 and, for what s3proxy
never does (ignore a Range, cut a body, never answer, a certificate of another CA), small
servers of this test on 127.0.0.1. Each answer is compared with what boto3's GET gives."""

from __future__ import annotations

import socket
import socketserver
import ssl
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

import ssdbench.lab.store as store_mod
from ssdbench.lab.config import StoreConfig, parse_store
from ssdbench.lab.store import S3Store, StoreError
from tests.integration.test_store import KEY, SECRET, S3Proxy, free_port, make_bucket, s3_config
from tests.unit.lab.netservers import HOST, Loopback

# keys as a listing can give them: spaces, + ~ % ; = & @ and letters beyond ASCII
ODD_KEYS = ["lab1/bench-07/S4EV 0001/20261125T062239Z/trim/run.json",
            "lab1/bench-07/Ser+ial~x/Ä € (1)/a%20b;c=d&e@f!$'*,/run.json",
            "lab1/_fleet/sent/bench-07/20261125.txt"]


@pytest.fixture(scope="module")
def s3(tmp_path_factory: pytest.TempPathFactory) -> Iterator[S3Proxy]:
    server = S3Proxy(tmp_path_factory.mktemp("s3proxy-fast"), free_port())
    server.start()
    make_bucket(server, "fast-get")
    yield server
    server.stop()


@pytest.fixture(autouse=True)
def _no_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("http_proxy", "https_proxy", "all_proxy", "HTTP_PROXY", "HTTPS_PROXY",
                 "ALL_PROXY"):
        monkeypatch.delenv(name, raising=False)


def stores(cfg: StoreConfig) -> tuple[S3Store, S3Store]:
    """(direct GETs, boto3 GETs) for the same store."""
    direct, boto = S3Store(cfg), S3Store(cfg, direct_gets=False)
    assert direct._direct is not None and boto._direct is None
    return direct, boto


def failure(get: Callable[[], bytes]) -> StoreError:
    with pytest.raises(StoreError) as info:
        get()
    return info.value


def test_every_object_read_equals_what_was_put_and_boto3s_read(s3: S3Proxy) -> None:
    direct, boto = stores(s3_config(s3, "fast-get"))
    blobs = {k: (k * 300).encode()[: 9000 + i] for i, k in enumerate(ODD_KEYS)}
    blobs["lab1/empty.json"] = b""
    for k, data in blobs.items():
        direct.put(k, data)
    for k, data in blobs.items():
        assert direct.get(k) == boto.get(k) == data
    # from 8 threads at once over the kept connections, as the fleet build reads
    keys = [k for k in blobs for _ in range(40)]
    with ThreadPoolExecutor(8) as pool:
        got = list(pool.map(direct.get, keys))
    assert got == [blobs[k] for k in keys]
    assert direct._direct is not None and 0 < len(direct._direct._idle) <= 8


def test_a_limit_reads_at_most_one_byte_more(s3: S3Proxy) -> None:
    direct, boto = stores(s3_config(s3, "fast-get"))
    data = bytes(range(256)) * 40
    direct.put("lab1/limit.bin", data)
    for limit in (0, 99, len(data) - 1, len(data), len(data) + 5):
        got = direct.get("lab1/limit.bin", limit=limit)
        assert got == boto.get("lab1/limit.bin", limit=limit) == data[: limit + 1]
    assert direct.get("lab1/limit.bin") == data  # the connection still good after


def test_a_missing_key_is_a_404_not_a_refusal(s3: S3Proxy) -> None:
    from ssdbench.lab import fleetindex

    direct, boto = stores(s3_config(s3, "fast-get"))
    mine = failure(lambda: direct.get("lab1/nothing/here.json"))
    theirs = failure(lambda: boto.get("lab1/nothing/here.json"))
    assert str(mine) == str(theirs) == (
        "reading lab1/nothing/here.json: the store answered 404 NoSuchKey")
    assert not mine.refused
    # what the fleet build makes of it: no index yet
    assert fleetindex.StoreSource(direct, "lab1").read_index("bench-07/20261125") is None


def test_a_missing_bucket_is_refused(s3: S3Proxy) -> None:
    direct, boto = stores(s3_config(s3, "no-such-bucket"))
    mine = failure(lambda: direct.get("lab1/a.json"))
    theirs = failure(lambda: boto.get("lab1/a.json"))
    assert str(mine) == str(theirs) and mine.refused and theirs.refused
    assert "404 NoSuchBucket" in str(mine)


@pytest.mark.parametrize("wrong", ["secret", "key"])
def test_wrong_credentials_a_403_refused_naming_no_secret(s3: S3Proxy, wrong: str) -> None:
    good = S3Store(s3_config(s3, "fast-get"))
    good.put("lab1/private.json", b"{}")
    fields = {"kind": "s3", "endpoint": s3.endpoint, "bucket": "fast-get", "prefix": "lab1",
              "access_key": KEY if wrong == "secret" else "another-key-id",
              "secret_key": "not-the-s3cr3t-value" if wrong == "secret" else SECRET}
    cfg = parse_store(fields, Path("."))
    direct, boto = stores(cfg)
    mine = failure(lambda: direct.get("lab1/private.json"))
    theirs = failure(lambda: boto.get("lab1/private.json"))
    assert str(mine) == str(theirs) and mine.refused
    assert "answered 403" in str(mine) and "check the store's keys" in str(mine)
    for secret in cfg.secrets():
        assert secret not in str(mine)


def test_nothing_listening_a_clear_error_naming_no_secret() -> None:
    cfg = parse_store({"kind": "s3", "endpoint": f"http://{HOST}:{free_port()}",
                       "bucket": "fast-get", "access_key": KEY, "secret_key": SECRET},
                      Path("."))
    err = failure(lambda: S3Store(cfg).get("lab1/a.json"))
    assert str(err).startswith("reading lab1/a.json: ConnectionRefusedError")
    assert not err.refused and SECRET not in str(err) and KEY not in str(err)


def test_a_store_restarted_meanwhile_its_kept_connections_are_not_used(tmp_path: Path) -> None:
    server = S3Proxy(tmp_path, free_port())
    server.start()
    try:
        make_bucket(server, "fast-get")
        direct = S3Store(s3_config(server, "fast-get"))
        direct.put("lab1/a.json", b"[1]")
        with ThreadPoolExecutor(4) as pool:
            assert list(pool.map(direct.get, ["lab1/a.json"] * 8)) == [b"[1]"] * 8
        assert direct._direct is not None and direct._direct._idle
        server.stop()  # every kept connection closed by the store
        server.start()
        assert direct.get("lab1/a.json") == b"[1]"
    finally:
        server.stop()


class Canned(Loopback):
    """An HTTP server on 127.0.0.1 that answers each request with ``answer(request)`` (raw
    bytes; None: it reads the request and never answers, until closed)."""

    def __init__(self, answer: Callable[[bytes], bytes | None],
                 context: ssl.SSLContext | None = None) -> None:
        self.requests: list[bytes] = []
        canned = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                try:
                    if context is not None:
                        conn = context.wrap_socket(conn, server_side=True)
                    request = conn.recv(65536)
                    canned.requests.append(request)
                    reply = answer(request)
                    if reply is None:
                        canned.stop.wait(30)
                        return
                    conn.sendall(reply)
                except (OSError, ssl.SSLError):
                    return
                finally:
                    conn.close()

        super().__init__(Handler)

    def cfg(self, scheme: str = "http", ca_file: Path | None = None) -> StoreConfig:
        fields = {"kind": "s3", "endpoint": f"{scheme}://{HOST}:{self.port}",
                  "bucket": "fast-get", "prefix": "lab1", "access_key": KEY,
                  "secret_key": SECRET}
        if ca_file is not None:
            fields["ca_file"] = str(ca_file)
        return parse_store(fields, Path("."))


@pytest.fixture
def canned() -> Iterator[Callable[..., Canned]]:
    made: list[Canned] = []

    def make(answer: Callable[[bytes], bytes | None], **kw: ssl.SSLContext) -> Canned:
        made.append(Canned(answer, **kw))
        return made[-1]

    yield make
    for server in made:
        server.close()


def test_a_store_that_ignores_the_range_is_read_no_further(
        canned: Callable[..., Canned]) -> None:
    big = 8 << 20
    server = canned(lambda _req: b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % big
                    + b"x" * big)
    got = S3Store(server.cfg()).get("lab1/_fleet/sent/bench-07/20261125.txt", limit=100)
    assert got == b"x" * 101  # more than the limit: the caller refuses it as too large
    assert b"\r\nrange: bytes=0-100\r\n" in server.requests[0].lower()


def test_a_body_shorter_than_its_length_is_an_error_never_used(
        canned: Callable[..., Canned]) -> None:
    server = canned(lambda _req: b"HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n{\"run\":")
    err = failure(lambda: S3Store(server.cfg()).get("lab1/a/run.json"))
    assert "reading lab1/a/run.json: the answer was cut: 7 of its 1000 bytes" in str(err)


def test_a_store_that_never_answers_times_out(canned: Callable[..., Canned],
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(store_mod, "TIMEOUT_S", 0.5)  # boto3's read_timeout, kept
    server = canned(lambda _req: None)
    err = failure(lambda: S3Store(server.cfg()).get("lab1/a/run.json"))
    assert str(err) == "reading lab1/a/run.json: no answer within 0.5 s (a slow or stalled store)"
    assert not err.refused


def test_https_with_the_stores_ca_file_and_a_certificate_that_does_not_verify(
        canned: Callable[..., Canned], tmp_path: Path) -> None:
    from tests.unit.lab.netservers import tls_server_context

    for name in ("ours", "other"):
        (tmp_path / name).mkdir()
    context, ca_file = tls_server_context(tmp_path / "ours")
    _other, other_ca = tls_server_context(tmp_path / "other")
    server = canned(lambda _req: b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\n{}",
                    context=context)
    assert S3Store(server.cfg("https", ca_file)).get("lab1/a.json") == b"{}"
    for cfg in (server.cfg("https", other_ca), server.cfg("https")):
        direct, boto = stores(cfg)
        err = failure(lambda d=direct: d.get("lab1/a.json"))  # type: ignore[misc]
        assert "certificate does not verify" in str(err), err
        failure(lambda b=boto: b.get("lab1/a.json"))  # type: ignore[misc]  # boto3 the same
