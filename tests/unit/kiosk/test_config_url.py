"""``ssdbench.config=http(s)://...``: the kiosk config fetched from a lab's server (#21 item
2, docs/lab.md "Config from the network"), against a real HTTP server on 127.0.0.1."""

from __future__ import annotations

import datetime
import http.server
import ipaddress
import socket
import ssl
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import ClassVar

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from ssdbench.kiosk.config import ConfigError, find_config, load_config

GOOD = 'plan = "diagnose"\non_finish = "poweroff"\n'


class Files(http.server.BaseHTTPRequestHandler):
    files: ClassVar[dict[str, tuple[int, bytes]]] = {}
    auth: ClassVar[list[str]] = []

    def do_GET(self) -> None:
        if self.headers.get("Authorization"):
            self.auth.append(self.headers["Authorization"])
        code, body = self.files.get(self.path.split("?")[0], (404, b"not here\n"))
        self.send_response(code)
        if code in (301, 302, 303, 307, 308):  # the body is where to
            self.send_header("Location", body.decode())
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


class Server:
    def __init__(self, port: int = 0, tls: ssl.SSLContext | None = None) -> None:
        self.files: dict[str, tuple[int, bytes]] = {}
        self.auth: list[str] = []

        class Handler(Files):
            files = self.files
            auth = self.auth

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", port), Handler)
        self.port = self.httpd.server_address[1]
        if tls is not None:
            self.httpd.socket = tls.wrap_socket(self.httpd.socket, server_side=True)
        threading.Thread(target=self.httpd.serve_forever, args=(0.05,), daemon=True).start()

    def url(self, path: str) -> str:
        return f"http://127.0.0.1:{self.port}{path}"

    def stop(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()


def test_find_config_keeps_a_url_from_the_kernel_command_line(tmp_path: Path) -> None:
    url = "https://lab.example/benches/a.toml?token=x"
    assert find_config(None, f"quiet ssdbench.config={url}", tmp_path) == url
    assert find_config(None, "ssdbench.config=http://10.0.2.2/k.toml", None) == \
        "http://10.0.2.2/k.toml"


def test_a_config_from_a_url_is_fetched_and_validated(server: Server) -> None:
    server.files["/lab/a.toml"] = (200, GOOD.encode())
    said: list[str] = []
    config = load_config(server.url("/lab/a.toml"), say=said.append)
    assert config.plan == "diagnose" and config.on_finish == "poweroff"
    assert config.source == server.url("/lab/a.toml")
    assert any("fetched" in line for line in said), said


def test_a_bad_config_from_a_url_names_the_key_and_the_url_without_its_query(
        server: Server) -> None:
    server.files["/a.toml"] = (200, b'plan = "quick"\ndestroy = "all-eligible"\nsvgg = 1\n')
    with pytest.raises(ConfigError) as exc:
        load_config(server.url("/a.toml?token=SECRETVALUE"), say=lambda _l: None)
    assert exc.value.key == "svgg"
    assert str(exc.value).startswith(server.url("/a.toml") + ": `svgg`: unknown key")
    assert "SECRETVALUE" not in str(exc.value)


def test_a_refused_url_is_a_config_error_at_once(server: Server) -> None:
    server.files["/gone.toml"] = (403, b"forbidden\n")
    waits: list[float] = []
    with pytest.raises(ConfigError) as exc:
        load_config(server.url("/gone.toml"), say=lambda _l: None, wait=waits.append)
    assert exc.value.key == "(url)" and "403" in exc.value.problem
    assert waits == []  # no retry: the server answered


def test_the_network_not_there_yet_is_waited_for_and_said(tmp_path: Path) -> None:
    # a port nobody listens on until the second wait: the fetch retries, saying why
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    said: list[str] = []
    waits: list[float] = []
    started: list[Server] = []

    def wait(seconds: float) -> None:
        waits.append(seconds)
        if len(waits) == 2:
            srv = Server(port)
            srv.files["/k.toml"] = (200, GOOD.encode())
            started.append(srv)

    try:
        config = load_config(f"http://127.0.0.1:{port}/k.toml", say=said.append, wait=wait,
                             net_state=lambda: "no DHCP lease yet")
    finally:
        for srv in started:
            srv.stop()
    assert config.plan == "diagnose"
    assert len(waits) == 2 and waits[1] > waits[0]  # backoff
    waiting = [line for line in said if "waiting" in line]
    assert len(waiting) == 2, said
    assert "no DHCP lease yet" in waiting[0] and "refused" in waiting[0].lower(), said


def test_a_config_that_is_not_toml_is_a_syntax_error(server: Server) -> None:
    server.files["/x.toml"] = (200, b"<html>captive portal</html>")
    with pytest.raises(ConfigError) as exc:
        load_config(server.url("/x.toml"), say=lambda _l: None)
    assert exc.value.key == "(syntax)"


def test_relative_files_of_a_url_config_are_under_the_given_base(server: Server,
                                                                 tmp_path: Path) -> None:
    (tmp_path / "store.ini").write_text("[default]\naws_access_key_id = k\n"
                                        "aws_secret_access_key = s3cr3t\n")
    server.files["/s.toml"] = (200, b'plan = "diagnose"\n[store]\nkind = "s3"\n'
                               b'endpoint = "http://127.0.0.1:9"\nbucket = "lab"\n'
                               b'credentials_file = "store.ini"\n')
    config = load_config(server.url("/s.toml"), say=lambda _l: None, base=tmp_path)
    assert config.store is not None and config.store.access_key is not None
    assert config.store.access_key.reveal() == "k"


def test_a_certificate_that_does_not_verify_is_a_config_error(tmp_path: Path) -> None:
    """TLS is verified: a self-signed server (a stranger on the lab's network) is refused
    at once, naming why, and nothing is retried."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]),
                critical=False)
            .sign(key, hashes.SHA256()))
    (tmp_path / "cert.pem").write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    (tmp_path / "key.pem").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(tmp_path / "cert.pem", tmp_path / "key.pem")
    srv = Server(tls=ctx)
    srv.files["/k.toml"] = (200, GOOD.encode())
    waits: list[float] = []
    try:
        with pytest.raises(ConfigError) as exc:
            load_config(f"https://127.0.0.1:{srv.port}/k.toml", say=lambda _l: None,
                        wait=waits.append)
    finally:
        srv.stop()
    assert exc.value.key == "(tls)" and "self-signed" in exc.value.problem, exc.value
    assert waits == []


def test_a_config_over_1_mib_stops_at_once(server: Server) -> None:
    server.files["/big.toml"] = (200, b"# x\n" * 300_000)
    waits: list[float] = []
    with pytest.raises(ConfigError) as exc:
        load_config(server.url("/big.toml"), say=lambda _l: None, wait=waits.append)
    assert "larger than 1 MiB" in exc.value.problem and waits == []


def test_user_and_password_in_the_url_are_basic_auth_and_never_shown(server: Server) -> None:
    import base64

    server.files["/lab/b.toml"] = (200, GOOD.encode())
    said: list[str] = []
    url = f"http://lab:s3cr%40t@127.0.0.1:{server.port}/lab/b.toml"
    config = load_config(url, say=said.append, wait=lambda _s: pytest.fail("retried"))
    assert config.plan == "diagnose"
    assert server.auth == ["Basic " + base64.b64encode(b"lab:s3cr@t").decode()]
    assert not any("s3cr" in line for line in said) and "s3cr" not in config.source


@pytest.mark.parametrize("url", ["http://127.0.0.1:99999/a.toml", "http://127.0.0.1:x/a.toml",
                                 "http:///a.toml"])
def test_a_url_that_cannot_work_is_a_config_error(url: str) -> None:
    with pytest.raises(ConfigError) as exc:
        load_config(url, say=lambda _l: None, wait=lambda _s: pytest.fail("retried"))
    assert exc.value.key == "(url)" and "not a valid URL" in exc.value.problem


def test_the_kiosk_names_a_url_config_without_its_token(server: Server, tmp_path: Path) -> None:
    """The console line after loading (`config URL: plan ...`) printed the URL as given."""
    import io

    from ssdbench.devices.bundle import load_bundle
    from ssdbench.kiosk.run import KioskOptions, run_kiosk
    from ssdbench.system import Host
    from tests.conftest import DATA

    server.files["/k.toml"] = (200, b'plan = "quick"\nselect = ["serial:NOSUCH"]\n'
                                    b'destroy = "all-eligible"\n')
    b = load_bundle(DATA / "bundles" / "qemu-nvme-ahci-usb")

    class Fs:  # the bundle's files, with this test's kernel command line
        def __getattr__(self, name: str) -> object:
            return getattr(b.fs, name)

        def read_text(self, path: str) -> str | None:
            if path == "/proc/cmdline":
                return f"ssdbench.config={server.url('/k.toml?token=SECRETTOKEN')}\n"
            return b.fs.read_text(path)

    out, err = io.StringIO(), io.StringIO()
    run_kiosk(KioskOptions(results=tmp_path / "results", no_power=True),
              Host(b.runner, Fs()), out, err)  # type: ignore[arg-type]
    console = out.getvalue() + err.getvalue()
    assert f"config {server.url('/k.toml')}: plan quick" in console, console
    assert "SECRETTOKEN" not in console


class Scripted:
    """A raw HTTP server on 127.0.0.1: each connection gets the next canned answer (bytes
    exactly as written, then the connection closed), so an answer can be cut anywhere."""

    def __init__(self, answers: list[bytes]) -> None:
        self.answers = list(answers)
        self.requests = 0
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.port = self.sock.getsockname()[1]
        threading.Thread(target=self._serve, daemon=True).start()

    def _serve(self) -> None:
        while self.answers:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                conn.recv(65536)  # the request
                self.requests += 1
                conn.sendall(self.answers.pop(0))

    def close(self) -> None:
        self.sock.close()


# an erase plan that names one drive: cut after its plan line, `select` would be "every
# eligible drive" and `destroy` missing
ERASE = (b'plan = "erase"\nselect = ["serial:S3R14L"]\ndestroy = ["S3R14L"]\n'
         b'on_finish = "poweroff"\n')


def _whole(body: bytes) -> bytes:
    return b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(body) + body


@pytest.mark.parametrize("cut", [
    # Content-Length announces the whole body, 40 bytes arrive, then the connection closes
    b"HTTP/1.1 200 OK\r\nContent-Length: %d\r\n\r\n" % len(ERASE) + ERASE[:40],
    # chunked, cut in the middle of its only chunk (http.client: IncompleteRead)
    b"HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n%x\r\n" % len(ERASE) + ERASE[:40],
], ids=["content-length", "chunked"])
def test_a_config_cut_mid_transfer_is_never_used_and_fetched_again(cut: bytes) -> None:
    server = Scripted([cut, _whole(ERASE)])
    said: list[str] = []
    waits: list[float] = []
    try:
        config = load_config(f"http://127.0.0.1:{server.port}/erase.toml", say=said.append,
                             wait=waits.append, net_state=lambda: "network up")
    finally:
        server.close()
    assert server.requests == 2 and waits == [1.0], said
    assert config.plan == "erase" and config.destroy_serials == ("S3R14L",), config
    assert not config.select_all and not config.destroy_all, config
    assert [(s.kind, s.pattern) for s in config.selectors] == [("serial", "S3R14L")], config
    waiting = [line for line in said if "waiting" in line]
    assert len(waiting) == 1, said
    assert ("the answer was cut: 40 of its" in waiting[0]
            or "IncompleteRead" in waiting[0]), waiting
    assert said[-1].startswith("config fetched from") and f"({len(ERASE)} bytes)" in said[-1]


def test_a_content_length_that_is_not_a_number_is_fetched_again() -> None:
    bad = b"HTTP/1.1 200 OK\r\nContent-Length: lots\r\nConnection: close\r\n\r\n" + ERASE
    server = Scripted([bad, _whole(ERASE)])
    said: list[str] = []
    try:
        config = load_config(f"http://127.0.0.1:{server.port}/erase.toml", say=said.append,
                             wait=lambda _s: None, net_state=lambda: "network up")
    finally:
        server.close()
    assert config.destroy_serials == ("S3R14L",) and server.requests == 2, said


def test_credentials_go_to_their_own_origin_only_not_where_a_redirect_points(
        server: Server) -> None:
    """#28 item 3: urllib sends every header on to wherever a redirect points; the lab's
    user and password must not reach another origin (here another port of 127.0.0.1)."""
    other = Server()
    try:
        other.files["/k.toml"] = (200, GOOD.encode())
        server.files["/moved.toml"] = (302, other.url("/k.toml").encode())
        server.files["/here.toml"] = (200, GOOD.encode())
        server.files["/renamed.toml"] = (301, server.url("/here.toml").encode())
        url = server.url("/moved.toml").replace("http://", "http://lab:s3cret@")
        config = load_config(url, say=lambda _l: None, wait=lambda _s: None)
        assert config.plan == "diagnose"
        assert other.auth == [], other.auth  # followed, but without the credentials
        assert len(server.auth) == 1
        # a redirect within the same origin keeps them
        url = server.url("/renamed.toml").replace("http://", "http://lab:s3cret@")
        load_config(url, say=lambda _l: None, wait=lambda _s: None)
        assert len(server.auth) == 3 and len(set(server.auth)) == 1, server.auth
    finally:
        other.stop()


def test_a_config_nested_too_deeply_is_a_syntax_error_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "deep.toml"
    path.write_text("plan = " + "[" * 5000 + "]" * 5000 + "\n")
    with pytest.raises(ConfigError) as exc:
        load_config(path)
    assert exc.value.key == "(syntax)" and "nested too deeply" in exc.value.problem
