"""The lab's signing key at a bench's start (#28 item 2, kiosk/labkey.py): never on the
results stick or in the results folder; from a URL, fetched from a real HTTP server on
127.0.0.1 into memory only, with the URL's user and password as basic auth."""

from __future__ import annotations

import base64
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ec import SECP256R1, generate_private_key
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.kiosk.config import ConfigError
from ssdbench.kiosk.labkey import prepare_record_keys
from ssdbench.record.sign import (
    dump_record,
    fingerprint,
    forget_keys,
    raw_public,
    verify_record_bytes,
)
from ssdbench.record.write import seal
from ssdbench.stages.params import RunParams
from tests.unit.kiosk.test_config_url import Server
from tests.unit.record.test_record import record as a_record


def pem(key: object) -> bytes:
    data: bytes = key.private_bytes(  # type: ignore[attr-defined]
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption())
    return data


@pytest.fixture
def server() -> Iterator[Server]:
    s = Server()
    yield s
    s.stop()
    forget_keys()


def fetch(url: str, lines: list[str], **kw: object) -> None:
    prepare_record_keys([url], source="lab.toml", results=None, say=lines.append,
                        wait=lambda _s: None, **kw)  # type: ignore[arg-type]


def test_a_key_from_a_url_signs_records_and_is_held_in_memory_only(server: Server) -> None:
    private = Ed25519PrivateKey.generate()
    server.files["/keys/bench7.pem"] = (200, pem(private))
    url = f"http://lab:s3cret@127.0.0.1:{server.port}/keys/bench7.pem?token=t"
    lines: list[str] = []
    fetch(url, lines)
    assert server.auth == ["Basic " + base64.b64encode(b"lab:s3cret").decode()]
    shown = f"http://127.0.0.1:{server.port}/keys/bench7.pem"
    assert lines[0] == (f"lab key fetched from {shown} ({len(pem(private))} bytes) "
                        "(plain HTTP: anyone on this network could read it)")
    assert lines[1].startswith(f"lab key {shown}: SHA256:") and "held in memory only" in lines[1]
    assert "plain HTTP" in lines[1] and "s3cret" not in "".join(lines)
    record = seal(a_record(), url)
    verdict = verify_record_bytes(dump_record(record), expected_fingerprint=fingerprint(
        raw_public(private.public_key())))
    assert verdict.ok, verdict.message
    # run.json and the journal keep the URL without its secrets; a plan resumed from them
    # signs with the key this start fetched
    kept = RunParams(record_key=url).as_record()["record_key"]
    assert "s3cret" not in kept and "token" not in kept
    assert "unsigned" not in seal({"x": 1}, kept)["signature"]


def test_a_key_url_that_is_not_a_key_or_not_there_stops_the_start(server: Server) -> None:
    server.files["/ec.pem"] = (200, pem(generate_private_key(SECP256R1())))
    server.files["/html"] = (200, b"<html>login</html>")
    lines: list[str] = []
    with pytest.raises(ConfigError, match=r"`params.record_key`: lab key .*/ec.pem: not an "
                                          r"Ed25519 key"):
        fetch(server.url("/ec.pem"), lines)
    with pytest.raises(ConfigError, match=r"not an unencrypted PEM private key"):
        fetch(server.url("/html"), lines)
    with pytest.raises(ConfigError, match=r"^lab.toml: `params.record_key`: http://127.0.0.1:"
                                          r"\d+/gone.pem: the server answered 404"):
        fetch(server.url("/gone.pem"), lines)
    server.files["/big.pem"] = (200, b"x" * (64 * 1024 + 1))
    with pytest.raises(ConfigError, match=r"larger than 64 KiB: not a lab key"):
        fetch(server.url("/big.pem"), lines)
    # never fetched, never signed with: the record says so
    assert seal({"x": 1}, server.url("/ec.pem"))["signature"]["unsigned"] is True


def test_a_key_on_the_results_stick_or_in_the_results_folder_is_refused(
        tmp_path: Path) -> None:
    stick = tmp_path / "stick"
    (stick / "keys").mkdir(parents=True)
    key = stick / "keys" / "lab-key.pem"
    key.write_bytes(pem(Ed25519PrivateKey.generate()))
    beside = tmp_path / "elsewhere.pem"  # the same filesystem as the stick folder here
    beside.write_bytes(key.read_bytes())
    with pytest.raises(ConfigError, match=r"lab-key.pem is on the results stick: whoever "
                                          r"holds the results could sign records"):
        prepare_record_keys([str(key)], source="s.toml", results=stick, whole_filesystem=True,
                            say=print)
    # a mount point: anywhere on its filesystem is on the stick
    with pytest.raises(ConfigError, match=r"is on the results stick"):
        prepare_record_keys([str(beside)], source="s.toml", results=stick,
                            whole_filesystem=True, say=print)
    # `ssdbench run --results DIR`: inside DIR only (a symlink into it too)
    link = tmp_path / "link.pem"
    link.symlink_to(key)
    for inside in (key, link):
        with pytest.raises(ConfigError, match=r"is in the results folder"):
            prepare_record_keys([str(inside)], source="plan parameter", key="record_key",
                                results=stick, say=print)
    prepare_record_keys([str(beside), ""], source="plan parameter", key="record_key",
                        results=stick, say=print)


def test_a_dry_run_does_not_fetch(server: Server) -> None:
    lines: list[str] = []
    fetch(server.url("/never.pem"), lines, fetch=False)
    assert lines == [] and server.auth == []
