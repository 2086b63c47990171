"""The erase plan end to end on a loop device (root): `ssdbench run DEV --plan erase`.

A loop device has no secure erase, so with erase_fallback = discard the drive is
discarded and its record must say FAIL, "Clear not achieved", "not a sanitization" - the
record is still written, signed with the lab key, and verifies; the run exits non-zero."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import loop_device
from tests.schema_check import check_tree


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(16, fill=0xA5, prefix="ssdbench-erase-plan-") as (dev, _image):
        yield dev


def test_erase_plan_on_a_loop_device_writes_a_signed_fail_record(
        loop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = tmp_path / "lab-key.pem"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    name = os.path.basename(loop)
    results = tmp_path / "results"
    code = main(["run", loop, "--plan", "erase", "--destroy", name, "--erase-fallback",
                 "discard", "--quiet", "--results", str(results),
                 "--set", "operator=A. Tester", "--set", "asset_tag=INV-7",
                 "--set", f"record_key={key}"])
    assert code == ExitCode.FAILURE
    records = list(results.rglob("erase-record.json"))
    assert len(records) == 1, list(results.rglob("*"))
    run_dir = records[0].parent
    record = json.loads(records[0].read_text())
    assert record["result"]["status"] == "FAIL"
    assert record["result"]["reason"].startswith("Clear not achieved")
    assert record["sanitization"]["category"] == "none"
    assert "not a sanitization" in record["sanitization"]["note"]
    assert record["sanitization"]["method"] == "discard"
    assert record["drive"]["interface"] == "loop"
    assert record["drive"]["capacity_bytes"] == 16 * 2**20
    assert record["people"]["operator"] == "A. Tester"
    assert record["people"]["asset_tag"] == "INV-7"
    assert record["tools"]["kernel"] and record["tools"]["ssdbench"]
    assert (run_dir / "erase-certificate.html").read_text().count("FAIL") >= 1
    assert (run_dir / "erase-certificate.pdf").read_bytes()[:5] == b"%PDF-"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["state"] == "failed" and "Clear not achieved" in run["error"]
    assert run["erase_record"]["signed"] is True

    capsys.readouterr()
    assert main(["verify-record", str(records[0]), "--key", str(key)]) == ExitCode.OK
    assert record["signature"]["fingerprint"] in capsys.readouterr().out

    sessions = list(results.rglob("erase-session-*.csv"))
    assert len(sessions) == 1
    with open(sessions[0], newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert [(r["interface"], r["result"], r["category"]) for r in rows] == [
        ("loop", "FAIL", "none")]
    assert rows[0]["signed_by"] == record["signature"]["fingerprint"]
    # every JSON and CSV file against its schema (ssdbench/schemas)
    check_tree(results, expect={"erase-record.json.schema.json": 1,
                                "erase-session.csv.schema.json": 1,
                                "record-chain.json.schema.json": 1})


def _files_holding(root: Path, secrets: list[bytes]) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*") if p.is_file()
                  and any(s in p.read_bytes() for s in secrets))


def test_a_lab_key_from_a_url_signs_and_no_written_file_holds_it(
        loop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """record_key = an http URL with a user and password (a real server on 127.0.0.1): the
    key is fetched before the drive is touched and held in memory; the record verifies with
    the lab's public key; neither the key (PEM, its base64 body, its 32 raw bytes) nor the
    URL's password is in any file of the results or of a support bundle (#28 item 2)."""
    from tests.unit.kiosk.test_config_url import Server

    private = Ed25519PrivateKey.generate()
    data = private.private_bytes(serialization.Encoding.PEM,
                                 serialization.PrivateFormat.PKCS8,
                                 serialization.NoEncryption())
    raw = private.private_bytes(serialization.Encoding.Raw, serialization.PrivateFormat.Raw,
                                serialization.NoEncryption())
    public = tmp_path / "lab-key.pub.pem"
    public.write_bytes(private.public_key().public_bytes(
        serialization.Encoding.PEM, serialization.PublicFormat.SubjectPublicKeyInfo))
    server = Server()
    server.files["/keys/bench.pem"] = (200, data)
    results = tmp_path / "results"
    try:
        url = f"http://lab:Pa55-w0rd@127.0.0.1:{server.port}/keys/bench.pem"
        code = main(["run", loop, "--plan", "erase", "--destroy", os.path.basename(loop),
                     "--erase-fallback", "discard", "--quiet", "--results", str(results),
                     "--set", "record_pdf=false", "--set", f"record_key={url}"])
    finally:
        server.stop()
        from ssdbench.record.sign import forget_keys

        forget_keys()
    assert code == ExitCode.FAILURE  # a loop device: discarded, not sanitized
    assert len(server.auth) == 1
    err = capsys.readouterr().err
    assert "held in memory only (plain HTTP" in err, err
    [record] = list(results.rglob("erase-record.json"))
    assert main(["verify-record", str(record), "--key", str(public)]) == ExitCode.OK
    body = b"".join(data.splitlines()[1:-1])
    secrets = [data, body, body[:40], raw, b"Pa55-w0rd"]
    assert _files_holding(results, secrets) == []
    run = json.loads(next(results.rglob("run.json")).read_text())
    assert run["params"]["record_key"] == (
        f"http://REMOVED@127.0.0.1:{server.port}/keys/bench.pem")
    bundle = tmp_path / "bundle"
    assert main(["bundle", str(bundle)]) == ExitCode.OK
    assert _files_holding(bundle, secrets) == []
    assert any(bundle.rglob("*"))


def test_a_lab_key_in_the_results_folder_is_refused_before_the_drive_is_touched(
        loop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    results = tmp_path / "results"
    results.mkdir()
    key = results / "lab-key.pem"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    with open(loop, "rb") as f:
        before = f.read()
    code = main(["run", loop, "--plan", "erase", "--destroy", os.path.basename(loop),
                 "--erase-fallback", "discard", "--quiet", "--results", str(results),
                 "--set", f"record_key={key}"])
    assert code == ExitCode.USAGE
    assert "is in the results folder: whoever holds the results could sign records" in (
        capsys.readouterr().err)
    with open(loop, "rb") as f:
        assert f.read() == before
    assert sorted(p.name for p in results.iterdir()) == ["lab-key.pem"]
