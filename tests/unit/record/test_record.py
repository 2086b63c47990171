"""The erase record end to end: built from a real erase (the QEMU NVMe format recording)
and discovery's real `list --json` entry of that drive, signed with a lab key, written as
JSON / HTML / CSV, and checked by `ssdbench verify-record`."""

from __future__ import annotations

import csv
import hashlib
import io
import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.cli import main
from ssdbench.record import (
    CLEAR,
    FAIL,
    NONE,
    PASS,
    PURGE,
    build_record,
    dump_record,
    sanitization_for,
    seal,
    verify_record_bytes,
    write_record_files,
)
from ssdbench.record.chain import link_seal_write
from ssdbench.record.render import csv_text

DATA = Path(__file__).resolve().parents[2] / "data"


def nvme_drive() -> dict[str, Any]:
    drives = json.loads((DATA / "bundles/qemu-nvme-ahci-usb/list-all.json").read_text())
    drive: dict[str, Any] = next(d for d in drives if d["name"] == "nvme0n1")
    return drive


def qemu_erase() -> dict[str, Any]:
    erase: dict[str, Any] = json.loads((DATA / "erase/qemu-nvme-4kn/record.json").read_text())
    return erase


def make_key(tmp_path: Path, name: str = "lab-key.pem") -> Path:
    key = Ed25519PrivateKey.generate()
    path = tmp_path / name
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                       serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    return path


def record(erase: dict[str, Any] | None = None, error: str | None = None,
           hidden: dict[str, Any] | None = None) -> dict[str, Any]:
    return build_record(
        drive=nvme_drive(), erase=qemu_erase() if erase is None else erase, error=error,
        hidden=hidden or {}, tools={"ssdbench": "0.1.0", "kernel": "6.1.0", "nvme-cli": "2.3"},
        people={"operator": "A. Tester", "organisation": "Lab", "customer": "ACME",
                "asset_tag": "INV-0042"},
        health_before={"available": True, "passed": True, "power_on_hours": 12},
        health_after={"available": True, "passed": True, "power_on_hours": 12},
        started="2026-11-21T14:58:33Z", finished="2026-11-21T14:59:05Z", duration_s=32.4,
        record_id="00000000-0000-4000-8000-000000000001",
    )


def test_nist_mapping_is_honest() -> None:
    assert sanitization_for("nvme-format-user-data").category == PURGE
    assert sanitization_for("nvme-sanitize-crypto").category == PURGE
    assert sanitization_for("ata-sanitize-block").category == PURGE
    assert sanitization_for("ata-security-erase-enhanced").category == PURGE
    assert sanitization_for("ata-security-erase").category == CLEAR
    discard = sanitization_for("discard")
    assert discard.category == NONE and "not a sanitization" in discard.note
    assert sanitization_for("something-new").category == NONE


def test_real_erase_makes_a_pass_record_with_identity_and_verification() -> None:
    r = record()
    assert r["result"]["status"] == PASS
    assert r["sanitization"]["category"] == PURGE
    assert "Secure Erase Settings = 1" in r["sanitization"]["technique"]
    assert r["drive"]["serial"] == "SSDBNVME0001" and r["drive"]["interface"] == "nvme"
    assert r["drive"]["media_type"] == "flash memory (SSD)"
    assert r["verification"]["sampled"] == 16 and r["verification"]["result"] == "passed"
    assert r["verification"]["offsets"][0] == 0
    assert r["people"]["asset_tag"] == "INV-0042"


def test_discard_and_failures_are_fail_with_the_reason() -> None:
    d = record({"method": "discard", "secure": False, "verified": False, "duration_s": 1,
                "detail": "not secure-erased"})
    assert d["result"]["status"] == FAIL
    assert d["result"]["reason"].startswith("Clear not achieved")
    assert d["verification"]["result"] == "not verified"
    survived = qemu_erase()
    survived["verification"] = {**survived["verification"], "survivors": [0], "passed": False}
    assert record(survived)["result"]["status"] == FAIL
    failed = record(None, error="secure erase failed: nvme format: exit code 1")
    assert failed["result"]["status"] == FAIL and "exit code 1" in failed["result"]["reason"]


def test_signed_record_verifies_and_one_changed_byte_fails(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    key = make_key(tmp_path)
    sealed = seal(record(), str(key))
    files = write_record_files(tmp_path, sealed)
    path = tmp_path / files["json"]
    data = path.read_bytes()
    parsed = json.loads(data)
    assert parsed["result"]["status"] == PASS
    assert parsed["signature"]["fingerprint"].startswith("SHA256:")
    assert verify_record_bytes(data).ok
    # the printable certificate names the digest of this very file (#28 item 2)
    html = (tmp_path / files["html"]).read_text()
    assert hashlib.sha256(data).hexdigest() in html and "verify-record --key" in html

    assert main(["verify-record", str(path), "--key", str(key)]) == 0
    assert parsed["signature"]["fingerprint"] in capsys.readouterr().out

    # one changed byte, anywhere that matters: a digit of the serial, then a space
    at = data.index(b"SSDBNVME0001") + len("SSDBNVME000")
    tampered = tmp_path / "tampered.json"
    tampered.write_bytes(data[:at] + b"2" + data[at + 1:])
    assert main(["verify-record", str(tampered)]) == 1
    assert "changed after it was signed" in capsys.readouterr().err
    sp = data.index(b'  "drive"')
    tampered.write_bytes(data[:sp] + b"\t" + data[sp + 1:])
    assert main(["verify-record", str(tampered)]) == 1
    assert "not byte for byte" in capsys.readouterr().err

    other = make_key(tmp_path, "other.pem")
    assert main(["verify-record", str(path), "--key", str(other)]) == 1
    assert f"not by --key {other}" in capsys.readouterr().err


def test_unsigned_record_says_so_everywhere(tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    sealed = seal(record(), "")
    files = write_record_files(tmp_path, sealed)
    assert sealed["signature"]["unsigned"] is True
    assert main(["verify-record", str(tmp_path / files["json"])]) == 1
    assert "UNSIGNED" in capsys.readouterr().err
    html = (tmp_path / files["html"]).read_text()
    assert "UNSIGNED RECORD" in html
    assert "signed record" not in html and "record (UNSIGNED) is erase-record.json" in html
    bad = seal(record(), str(tmp_path / "missing.pem"))
    assert bad["signature"]["unsigned"] and "cannot read" in bad["signature"]["reason"]


def test_certificate_and_csv_carry_the_auditors_fields(tmp_path: Path) -> None:
    hidden = {"nvme": {"warnings": ["other namespaces on this controller: nvme0n2; ..."],
                       "notes": []}}
    sealed = seal(record(hidden=hidden), str(make_key(tmp_path)))
    files = write_record_files(tmp_path, sealed)
    html = (tmp_path / files["html"]).read_text()
    for text in ("Certificate of Sanitization", "PASS", "Purge", "SSDBNVME0001",
                 "INV-0042", "ACME", "A. Tester", sealed["signature"]["fingerprint"],
                 "other namespaces on this controller", "Verified by"):
        assert text in html, text
    assert "<link" not in html and "<script" not in html  # self-contained
    rows = list(csv.DictReader(io.StringIO(csv_text([sealed, seal(record(), "")]))))
    assert [r["result"] for r in rows] == ["PASS", "PASS"]
    assert rows[0]["signed_by"] == sealed["signature"]["fingerprint"]
    assert rows[1]["signed_by"] == "UNSIGNED"
    assert rows[0]["warnings"].startswith("other namespaces")


def test_pdf_is_written_and_fits_one_a4_page(tmp_path: Path) -> None:
    from weasyprint import HTML  # type: ignore[import-untyped,import-not-found,unused-ignore]

    hidden = {"nvme": {"warnings": ["other namespaces on this controller: nvme0n2; a "
                                    "Format NVM of one namespace does not erase them"],
                       "notes": []}}
    key = str(make_key(tmp_path))
    # the longest page: the second record of a results folder's chain (the longest
    # tamper-evidence table), a scrap grade with four reasons and a failed capacity check
    worst = record(hidden=hidden) | {
        "grade": {"grade": "scrap", "reasons": [
            "12 sectors pending reallocation: data there cannot be read now",
            "150 sectors or blocks reallocated", "85% of its rated life used",
            "history may have been reset: 31,281.5 GiB written by hosts in 0 power-on hours"]},
        "authenticity": {"verdict": "wraps", "summary": "FAKE (wraps): claims 153,603,584 "
                         "bytes, holds 67,108,864 bytes (43.7% of it)"}}
    for name in ("first", "second"):
        (tmp_path / name).mkdir()
        sealed, _data = link_seal_write(tmp_path, tmp_path / name / "erase-record.json",
                                        worst, lambda r: seal(r, key))
    assert sealed["chain"]["seq"] == 2
    files = write_record_files(tmp_path, sealed)
    assert files["pdf"] is not None, files["pdf_problem"]
    assert (tmp_path / files["pdf"]).read_bytes()[:5] == b"%PDF-"
    html = (tmp_path / files["html"]).read_text()
    assert "Drive health — grade: scrap" in html and "(and 3 more in erase-record.json)" in html
    assert "Capacity check: FAKE (wraps)" in html
    assert len(HTML(string=html).render().pages) == 1


def test_a_forged_record_resigned_with_another_key_is_never_ok(
        tmp_path: Path, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    """#28 item 2: a FAIL record changed to PASS and re-signed with a new key printed "OK:
    signature valid", exit 0, without --key. Now a signature proves the signer only against
    a key the auditor names (--key, --trusted, or a trusted-keys file)."""
    monkeypatch.setattr("ssdbench.commands.verify_record.TRUSTED_KEYS", ())
    lab = make_key(tmp_path)
    failed = seal(record(error="the drive disappeared"), str(lab))
    assert failed["result"]["status"] == "FAIL"
    forged = {k: v for k, v in failed.items() if k != "signature"}
    forged["result"] = {**forged["result"], "status": PASS, "reason": "all good"}
    forger = make_key(tmp_path, "forger.pem")
    (tmp_path / "forged").mkdir()
    path = tmp_path / "forged" / write_record_files(tmp_path / "forged", seal(forged,
                                                                              str(forger)))["json"]
    assert verify_record_bytes(path.read_bytes()).ok  # intact: it is signed, by someone

    assert main(["verify-record", str(path)]) == 1
    out = capsys.readouterr()
    assert "signer is NOT trusted" in out.err and "OK" not in out.out
    assert "says: result PASS" in out.out and "SSDBNVME0001" in out.out  # what it claims
    assert main(["verify-record", str(path), "--key", str(lab)]) == 1
    assert "FAILED: signed by key" in capsys.readouterr().err

    # a trusted-keys file: fingerprints (as printed) or PEM files, comments, blank lines
    lab_fp = failed["signature"]["fingerprint"]
    trusted = tmp_path / "trusted-keys"
    trusted.write_text(f"# the lab's keys\n\n{lab_fp}  # bench room key\n")
    assert main(["verify-record", str(path), "--trusted", str(trusted)]) == 1
    capsys.readouterr()
    genuine = tmp_path / "genuine"
    genuine.mkdir()
    real = genuine / write_record_files(genuine, failed)["json"]
    assert main(["verify-record", str(real), "--trusted", str(trusted)]) == 0
    out = capsys.readouterr()
    assert f"OK: signature valid (Ed25519, key {lab_fp}), a key of the trusted keys" in out.out
    assert "says: result FAIL (" in out.out
    trusted.write_text("lab-key.pem\n")  # a PEM file beside the list
    assert main(["verify-record", str(real), "--trusted", str(trusted)]) == 0
    trusted.write_text("not a key\n")
    assert main(["verify-record", str(real), "--trusted", str(trusted)]) == 2
    assert "line 1: neither a key fingerprint" in capsys.readouterr().err
    # the default place of the trusted-keys file
    default = tmp_path / "etc-trusted-keys"
    default.write_text(lab_fp + "\n")
    monkeypatch.setattr("ssdbench.commands.verify_record.TRUSTED_KEYS", (default,))
    assert main(["verify-record", str(real)]) == 0
    assert main(["verify-record", str(path)]) == 1


@pytest.mark.parametrize("change", [
    {"algorithm": "none"}, {"note": "extra member, not signed"}])
def test_the_signature_member_is_checked_strictly(tmp_path: Path,
                                                  change: dict[str, str]) -> None:
    sealed = seal(record(), str(make_key(tmp_path)))
    changed = {**sealed, "signature": {**sealed["signature"], **change}}
    verdict = verify_record_bytes(dump_record(changed))
    assert not verdict.ok and "signature member is not what ssdbench writes" in verdict.message


@pytest.mark.parametrize("data", [
    # a lone surrogate, the signature member well formed: it reaches the file-form check
    b'{"format": "ssdbench-erase-record", "x": "\\ud800", "signature": {"algorithm": '
    b'"Ed25519", "fingerprint": "x", "public_key": "x", "value": "x"}}',
    b'{"format": "ssdbench-erase-record", "n": ' + b"9" * 5000 + b"}",
    b"[" * 100_000 + b"]" * 100_000,
], ids=["lone-surrogate", "5000-digits", "deep"])
def test_a_hostile_record_file_is_refused_not_a_traceback(
        tmp_path: Path, data: bytes, capsys: pytest.CaptureFixture[str]) -> None:
    """#28 item 10: each of these was a traceback out of verify-record."""
    path = tmp_path / "erase-record.json"
    path.write_bytes(data)
    assert not verify_record_bytes(data).ok
    assert main(["verify-record", str(path), "--key", str(make_key(tmp_path))]) == 1
    assert "FAILED" in capsys.readouterr().err
