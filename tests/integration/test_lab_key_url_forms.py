"""`ssdbench run DEV --plan erase` on a loop device (root) with the lab key's URL written
each way an operator might write it (#42 item 4): in capitals, with a space before it, a
password with a space, an '@' or %-escapes, over https from a server on 127.0.0.1 whose CA
the test trusts, or over plain http; and URLs that cannot work. A URL that works signs the
record; one that cannot stops the start before the drive is touched; in every case the
password is in no file of the results, of `ssdbench bundle`, nor on the console."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.record.sign import forget_keys
from tests.conftest import loop_device
from tests.unit.kiosk.test_config_url import Server
from tests.unit.lab.netservers import tls_server_context

FORMS = {  # each password holds "Pa55~" ("~": in no base64 alphabet, so no signature holds it)
    "capitals-space": "HTTPS://lab:Pa55~ w0rd@{tls}/keys/bench.pem",
    "leading-space-at": " https://lab:Pa55~@w0rd@{tls}/keys/bench.pem",
    "escaped": "https://lab:Pa55~%25w0rd%20x@{tls}/keys/bench.pem",
    "plain-http": "HTTP://lab:Pa55~-w0rd@{plain}/keys/bench.pem",
    "fails-typo": "htps://lab:Pa55~-typo@{tls}/keys/bench.pem",
    "fails-slash": "https://lab:Pa55~/slash@{tls}/keys/bench.pem",
}


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(16, fill=0xA5, prefix="ssdbench-key-forms-") as (dev, _image):
        yield dev


def _holding(root: Path, needle: bytes) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*")
                  if p.is_file() and needle in p.read_bytes())


@pytest.mark.parametrize("form", sorted(FORMS))
def test_every_way_of_writing_the_key_url(loop: str, tmp_path: Path, form: str,
                                          monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    (tmp_path / "tls").mkdir()
    ctx, ca_file = tls_server_context(tmp_path / "tls")
    monkeypatch.setenv("SSL_CERT_FILE", str(ca_file))
    private = Ed25519PrivateKey.generate()
    public = tmp_path / "lab-key.pub.pem"
    public.write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    tls, plain = Server(tls=ctx), Server()
    for s in (tls, plain):
        s.files["/keys/bench.pem"] = (200, private.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()))
    url = FORMS[form].format(tls=f"127.0.0.1:{tls.port}", plain=f"127.0.0.1:{plain.port}")
    results = tmp_path / "results"
    with open(loop, "rb") as f:
        before = f.read()
    try:
        code = main(["run", loop, "--plan", "erase", "--destroy", os.path.basename(loop),
                     "--erase-fallback", "discard", "--quiet", "--results", str(results),
                     "--set", "record_pdf=false", "--set", f"record_key={url}"])
    finally:
        tls.stop()
        plain.stop()
        forget_keys()
    console = capsys.readouterr()
    if form.startswith("fails"):
        assert code == ExitCode.USAGE, console.err
        assert "record_key" in console.err and "not a valid URL" in console.err, console.err
        with open(loop, "rb") as f:
            assert f.read() == before
    else:
        assert code == ExitCode.FAILURE, console.err  # a loop device: discarded
        assert len(tls.auth) + len(plain.auth) == 1
        assert ("(plain HTTP" in console.err) == (form == "plain-http"), console.err
        [record] = list(results.rglob("erase-record.json"))
        assert main(["verify-record", str(record), "--key", str(public)]) == ExitCode.OK
    bundle = tmp_path / "bundle"
    assert main(["bundle", str(bundle)]) == ExitCode.OK
    console_after = capsys.readouterr()
    assert "Pa55~" not in console.out + console.err + console_after.out + console_after.err
    if results.exists():
        assert _holding(results, b"Pa55~") == []
    assert _holding(bundle, b"Pa55~") == []
