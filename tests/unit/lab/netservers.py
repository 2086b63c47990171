"""Real servers on 127.0.0.1 for the fetch tests (#42 item 4): one that drips its answer a
byte at a time, and a TLS context whose certificate the test trusts (SSL_CERT_FILE)."""

from __future__ import annotations

import datetime
import ipaddress
import socket
import socketserver
import ssl
import threading
from pathlib import Path

from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import ExtendedKeyUsageOID, NameOID

HOST = "127.0.0.1"


class _Threading(socketserver.ThreadingTCPServer):
    daemon_threads = True
    allow_reuse_address = True


class Loopback:
    """A threading TCP server on 127.0.0.1 (a free port) serving ``handler`` until
    :meth:`close`; ``stop`` is set at close, for a handler that waits."""

    def __init__(self, handler: type[socketserver.BaseRequestHandler]) -> None:
        self.stop = threading.Event()
        self.server = _Threading((HOST, 0), handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, args=(0.05,), daemon=True).start()

    def close(self) -> None:
        self.stop.set()
        self.server.shutdown()
        self.server.server_close()


class Drip(Loopback):
    """Answers every request with ``answer``, one byte every ``every_s`` seconds, for at
    most ``for_s`` seconds (so a client that never gives up still ends the test)."""

    def __init__(self, answer: bytes, *, every_s: float = 0.25, for_s: float = 30.0) -> None:
        self.requests = 0
        drip = self

        class Handler(socketserver.BaseRequestHandler):
            def handle(self) -> None:
                conn: socket.socket = self.request
                drip.requests += 1
                try:
                    conn.recv(65536)
                    deadline = threading.Event()
                    timer = threading.Timer(for_s, deadline.set)
                    timer.start()
                    for byte in answer:
                        if drip.stop.wait(every_s) or deadline.is_set():
                            break
                        conn.sendall(bytes([byte]))
                    timer.cancel()
                except OSError:
                    return

        super().__init__(Handler)

    def url(self, path: str = "/k", userinfo: str = "") -> str:
        return f"http://{userinfo}{HOST}:{self.port}{path}"


def tls_server_context(folder: Path) -> tuple[ssl.SSLContext, Path]:
    """A server context for 127.0.0.1 and the CA file a client trusts it with (a CA and a
    leaf, as strict verification wants them)."""
    now = datetime.datetime.now(datetime.UTC)
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "ssdbench test CA")])
    ca = (x509.CertificateBuilder().subject_name(ca_name).issuer_name(ca_name)
          .public_key(ca_key.public_key()).serial_number(x509.random_serial_number())
          .not_valid_before(now - datetime.timedelta(days=1))
          .not_valid_after(now + datetime.timedelta(days=1))
          .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
          .add_extension(x509.KeyUsage(
              digital_signature=False, content_commitment=False, key_encipherment=False,
              data_encipherment=False, key_agreement=False, key_cert_sign=True,
              crl_sign=True, encipher_only=False, decipher_only=False), critical=True)
          .add_extension(x509.SubjectKeyIdentifier.from_public_key(ca_key.public_key()),
                         critical=False)
          .sign(ca_key, hashes.SHA256()))
    key = ec.generate_private_key(ec.SECP256R1())
    leaf = (x509.CertificateBuilder()
            .subject_name(x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, HOST)]))
            .issuer_name(ca_name).public_key(key.public_key())
            .serial_number(x509.random_serial_number())
            .not_valid_before(now - datetime.timedelta(days=1))
            .not_valid_after(now + datetime.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(
                [x509.IPAddress(ipaddress.ip_address(HOST))]), critical=False)
            .add_extension(x509.BasicConstraints(ca=False, path_length=None), critical=True)
            .add_extension(x509.ExtendedKeyUsage([ExtendedKeyUsageOID.SERVER_AUTH]),
                           critical=False)
            .add_extension(x509.AuthorityKeyIdentifier.from_issuer_public_key(
                ca_key.public_key()), critical=False)
            .sign(ca_key, hashes.SHA256()))
    ca_file = folder / "ca.pem"
    ca_file.write_bytes(ca.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.pem").write_bytes(leaf.public_bytes(serialization.Encoding.PEM))
    (folder / "leaf.key").write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(folder / "leaf.pem", folder / "leaf.key")
    return ctx, ca_file
