"""The erase record of a SAS drive: SCSI SANITIZE is Purge (NIST SP 800-88 Rev. 1, Table
A-8, SCSI SSDs), the record and the certificate say so with the service action that ran, and
the 520 -> 512 reformat's sizes are a member of their own, signed and held against the
schema. The drive is discovery's entry of the emulated SAS drive (tests/data/sas-emu/
captures), the reformat the erase room's record of the captured outputs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.erase import EraseOptions, scsi
from ssdbench.erase.model import SCSI_SANITIZE_METHODS, EraseRecord
from ssdbench.record import (
    CLEAR,
    PASS,
    PURGE,
    build_record,
    sanitization_for,
    seal,
    write_record_files,
)
from ssdbench.record.sign import verify_record_bytes
from ssdbench.system import Host
from tests.schema_check import check_json
from tests.unit.devices.test_sas_discovery import only_drive, sas_machine
from tests.unit.erase.replay import FakeClock, FakeFS, ScriptedRunner
from tests.unit.erase.test_scsi import reformat_script, reporter
from tests.unit.record.test_record import make_key


@pytest.mark.parametrize("method", SCSI_SANITIZE_METHODS)
def test_every_scsi_sanitize_method_is_purge_never_unmapped(method: str) -> None:
    san = sanitization_for(method)
    assert san.category == PURGE, method
    assert "SCSI SANITIZE" in san.technique and "Table A-8" in san.reference
    assert "no SP 800-88 mapping" not in san.note


def sas_erase() -> dict[str, Any]:
    """run.json ``erase`` of a 520-byte drive reformatted and block-erased."""
    runner, clock = ScriptedRunner(), FakeClock()
    reformat_script(runner)
    host = Host(runner, FakeFS({"/sys/block/sda/size": "32768\n"}))
    _, _, steps, rec = scsi.prepare_recorded(
        host, scsi_target(), "scsi-sanitize", EraseOptions(clock=clock), reporter([], clock),
        reformat_to=512)
    verification = {"markers": 16, "block_bytes": 512, "offsets": [0, 1048576],
                    "survivors": [], "passed": True}
    out = EraseRecord(
        method="scsi-sanitize-block", secure=True, verified=True, duration_s=9.5,
        detail="scsi-sanitize-block in 4.2 s; 16 markers erased", device="/dev/sda",
        serial="SASEMU0044", started="2026-11-28T19:00:00Z", finished="2026-11-28T19:00:10Z",
        steps=("method scsi-sanitize", *steps), scsi_reformat=rec).to_dict()
    out["verification"] = verification
    return out


def scsi_target() -> Any:
    from ssdbench.erase import EraseTarget

    return EraseTarget(path="/dev/sda", name="sda", transport="scsi", serial="SASEMU0044",
                       model="SSDBENCH SAS EMU", size_bytes=0, logical_block_size=512)


def sas_record() -> dict[str, Any]:
    drive = only_drive(sas_machine()).to_json()  # the 520-byte drive as discovery lists it
    return build_record(
        drive=drive, erase=sas_erase(), error=None, hidden={},
        tools={"ssdbench": "0.1.0", "sg3_utils": "1.46"}, people={"operator": "A. Tester"},
        health_before=None, health_after=None, started="2026-11-28T19:00:00Z",
        finished="2026-11-28T19:00:12Z", duration_s=12.0,
        record_id="00000000-0000-4000-8000-000000000044")


def test_sas_record_says_purge_by_scsi_sanitize_with_the_reformat_sizes(
        tmp_path: Path) -> None:
    r = sas_record()
    san = r["sanitization"]
    assert r["result"]["status"] == PASS, r["result"]
    assert r["result"]["reason"].startswith("Purge by SCSI SANITIZE, BLOCK ERASE")
    assert (san["category"], san["method"]) == (PURGE, "scsi-sanitize-block")
    refmt = san["scsi_reformat"]
    assert refmt["result"] == "done"
    assert (refmt["before"]["block_size"], refmt["after"]["block_size"]) == (520, 512)
    assert (refmt["before"]["size_bytes"], refmt["after"]["size_bytes"]) == (
        32263 * 520, 16 << 20)
    assert r["drive"]["interface"] == "scsi" and r["drive"]["serial"] == "SASEMU0044"
    # discovery saw capacity 0 (520-byte blocks); the record names the drive as erased
    assert (r["drive"]["capacity_bytes"], r["drive"]["logical_block_size"]) == (16 << 20, 512)
    key = make_key(tmp_path)
    files = write_record_files(tmp_path, seal(r, str(key)), pdf=False)
    path = tmp_path / files["json"]
    data = check_json(path)  # erase-record.json.schema.json (1.2.0 on): scsi_reformat
    assert data["sanitization"]["scsi_reformat"] == json.loads(json.dumps(refmt))
    assert verify_record_bytes(path.read_bytes()).ok
    raw = path.read_bytes()  # the sizes are signed with the rest
    assert raw.count(b'"block_size": 520') == 1
    assert not verify_record_bytes(raw.replace(b'"block_size": 520', b'"block_size": 528')).ok
    html = (tmp_path / files["html"]).read_text()
    assert "Purge" in html and "SCSI SANITIZE, BLOCK ERASE service action" in html
    assert "520 -&gt; 512 bytes a block (32263 -&gt; 32768 blocks), done" in html


def test_a_hostile_scsi_reformat_member_renders_as_text(tmp_path: Path) -> None:
    r = sas_record()
    r["sanitization"]["scsi_reformat"] = {"before": "<script>x</script>", "after": None,
                                          "result": "<b>done</b>"}
    files = write_record_files(tmp_path, seal(r, ""), pdf=False)
    html = (tmp_path / files["html"]).read_text()
    assert "<script>x" not in html and "&lt;b&gt;done&lt;/b&gt;" in html


def test_scsi_format_is_clear_never_purge_with_the_reason() -> None:
    san = sanitization_for("scsi-format")
    assert san.category == CLEAR
    assert "SCSI FORMAT UNIT" in san.technique
    assert "section 2.4 (Clear)" in san.reference and "A-8" in san.reference
    assert "not Purge" in san.note and "SANITIZE" in san.note


def test_a_verified_format_record_is_a_clear_pass_on_its_certificate(tmp_path: Path) -> None:
    """A drive without SANITIZE erased by FORMAT UNIT: PASS, Clear by SCSI FORMAT UNIT, the
    steps as the erase wrote them; schema-valid; the certificate says Clear and why."""
    erase = EraseRecord(
        method="scsi-format", secure=True, verified=True, duration_s=5.1,
        detail="scsi-format in 4.0 s; 16 markers erased", device="/dev/sda",
        serial="SASEMU0044", started="2026-11-28T19:00:00Z", finished="2026-11-28T19:00:06Z",
        steps=("method scsi-format", "REPORT SUPPORTED OPERATION CODES: FORMAT UNIT, no "
               "SANITIZE service action (the drive has none)",
               "sg_format --format --size=512 --fmtpinfo=0 --quick --early: FORMAT UNIT "
               "started, keeping 512 bytes a block, 32768 blocks, protection type 0")).to_dict()
    erase["verification"] = {"markers": 16, "block_bytes": 512, "offsets": [0, 1048576],
                             "survivors": [], "passed": True}
    drive = only_drive(sas_machine(block=512)).to_json()
    r = build_record(
        drive=drive, erase=erase, error=None, hidden={},
        tools={"ssdbench": "0.1.0", "sg3_utils": "1.46"}, people={"operator": "A. Tester"},
        health_before=None, health_after=None, started="2026-11-28T19:00:00Z",
        finished="2026-11-28T19:00:07Z", duration_s=7.0,
        record_id="00000000-0000-4000-8000-000000000045")
    assert r["result"]["status"] == PASS, r["result"]
    assert r["result"]["reason"].startswith("Clear by SCSI FORMAT UNIT")
    san = r["sanitization"]
    assert (san["category"], san["method"]) == (CLEAR, "scsi-format")
    assert "scsi_reformat" not in san
    files = write_record_files(tmp_path, seal(r, ""), pdf=False)
    check_json(tmp_path / files["json"])
    html = (tmp_path / files["html"]).read_text()
    assert "Clear" in html and "SCSI FORMAT UNIT" in html and "not Purge" in html
