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
