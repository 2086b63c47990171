"""The erase plan's stage on an ATA drive at the process boundary: HPA/DCO read before the
erase and their warnings on the record; the erase's own record (as the erase room returns
it) makes a PASS / Purge record; the health snapshots and tool versions are on it."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.record.stage import CertifiedEraseStage
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, Target
from ssdbench.stages.params import ParamError, RunParams
from ssdbench.system import Host
from tests.unit.erase.replay import FakeFS, ScriptedRunner
from tests.unit.erase.test_hidden import capture

SECTORS = 586070255  # the HPA capture's visible sectors
ERASE = {"method": "ata-security-erase-enhanced", "secure": True, "verified": True,
         "duration_s": 61.0, "detail": "ata-security-erase-enhanced in 60 s",
         "verification": {"markers": 16, "block_bytes": 4096, "offsets": [0, 4096],
                          "survivors": [], "passed": True}, "steps": ["method x"]}


def _ata_erase_run(tmp_path: Path, params: RunParams) -> tuple[Path, list[str]]:
    """The erase plan's stage on the HPA capture's drive: (run folder, what ran last
    before the erase)."""
    drive_dir = tmp_path / "results" / "20261125T000000Z_WDC_WD3000_S1"
    run_dir = drive_dir / "erase"
    run_dir.mkdir(parents=True)
    drive = {"path": "/dev/sda", "name": "sda", "transport": "sata", "vendor": "ATA",
             "model": "WDC WD3000HLFS", "serial": "S1", "firmware": "04.04V01",
             "size_bytes": SECTORS * 512, "logical_block_size": 512, "rotational": False,
             "nvme": None}
    (drive_dir / "drive.json").write_text(json.dumps({"drive": drive}))
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], capture("hdparm-N_hpa-enabled_forensicswiki.txt"))
    runner.add(["hdparm", "--dco-identify", "/dev/sda"], "", returncode=5)
    for _ in range(2):
        runner.add(["smartctl", "-j", "-x", "/dev/sda"], "", returncode=1)
    runner.add(["hdparm", "-V"], "hdparm v9.65\n")
    record = RunRecord.create(run_dir, run="erase", kind="erase", drive={"name": "sda"},
                              target={}, params={}, tools={"ssdbench": "0.1.0"})
    erased: list[str] = []

    def secure_erase(ctx: Any) -> dict[str, Any]:
        erased.append(" ".join(runner.calls[-1]))  # what ran last before the erase
        return ERASE

    fs = FakeFS({"/etc/ssdbench-image-id": "5c5b97aa1f89677e\n"})
    ctx = RunContext(host=Host(runner, fs), run_dir=run_dir, drive_name="sda",
                     run_name="erase", target=Target("/dev/sda", "block", "sda",
                                                     SECTORS * 512),
                     params=params, record=record, secure_erase=secure_erase)
    CertifiedEraseStage().execute(ctx)
    return run_dir, erased


def test_ata_erase_run_writes_a_purge_record_with_the_hpa_warning(tmp_path: Path) -> None:
    run_dir, erased = _ata_erase_run(tmp_path, RunParams(operator="A. Tester"))
    assert erased == ["smartctl -j -x /dev/sda"]  # hidden areas and health read first
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["result"]["status"] == "PASS"
    assert rec["sanitization"]["category"] == "Purge"
    assert rec["drive"]["manufacturer"] == "WDC (from the model string)"
    assert rec["drive"]["native_max_bytes"] == 586072368 * 512
    assert rec["drive"]["native_max_source"] == "hdparm -N native max"
    assert rec["hidden_areas"]["ata"]["hpa"]["hidden_sectors"] == 2113
    assert rec["hidden_areas"]["ata"]["dco_error"]
    assert any(w.startswith("HPA enabled") for w in rec["warnings"])
    assert rec["tools"]["hdparm"] == "hdparm v9.65"
    assert rec["tools"]["image"] == "ssdbench image 5c5b97aa1f89677e"  # the id rcS logs
    assert rec["health"]["before"]["available"] is False
    assert rec["people"]["operator"] == "A. Tester"
    assert rec["signature"]["unsigned"] is True
    assert "HPA enabled" in (run_dir / "erase-certificate.html").read_text()
    run = json.loads((run_dir / "run.json").read_text())
    assert run["erase_record"]["result"]["status"] == "PASS"
    assert list((tmp_path / "results").glob("erase-session-*.csv"))


def test_a_drive_pulled_mid_erase_gets_a_fail_record_that_says_so(tmp_path: Path) -> None:
    """Station mode: the drive leaves in the middle of its erase (QEMU device_del, a pulled
    cable). The record is still written and its reason says the drive disappeared, before
    the tool's own words (dd's "No such file or directory" points elsewhere)."""
    from ssdbench.stages.base import StageFailed

    drive_dir = tmp_path / "results" / "20261125T000000Z_QEMU_NVMe_Ctrl_P1"
    run_dir = drive_dir / "erase"
    run_dir.mkdir(parents=True)
    drive = {"path": "/dev/nvme0n1", "name": "nvme0n1", "transport": "nvme", "vendor": "",
             "model": "QEMU NVMe Ctrl", "serial": "P1", "firmware": "7.2.22",
             "size_bytes": 64 << 20, "logical_block_size": 512, "rotational": False,
             "nvme": None}
    (drive_dir / "drive.json").write_text(json.dumps({"drive": drive}))
    runner = ScriptedRunner()
    for _ in range(2):
        runner.add(["smartctl", "-j", "-x", "/dev/nvme0n1"], "", returncode=2)
    runner.add(["nvme", "version"], "nvme version 2.3\n")
    fs = FakeFS({"/sys/class/block/nvme0n1/size": "131072\n"})
    record = RunRecord.create(run_dir, run="erase", kind="erase", drive={"name": "nvme0n1"},
                              target={}, params={}, tools={"ssdbench": "0.1.0"})

    def pulled(ctx: Any) -> dict[str, Any]:
        del fs.files["/sys/class/block/nvme0n1/size"]  # the kernel removed it
        raise StageFailed("secure erase failed: nvme-format-user-data failed: dd ... "
                          "dd: failed to open '/dev/nvme0n1': No such file or directory")

    ctx = RunContext(host=Host(runner, fs), run_dir=run_dir, drive_name="nvme0n1",
                     run_name="erase", target=Target("/dev/nvme0n1", "block", "nvme0n1",
                                                     64 << 20),
                     params=RunParams(), record=record, secure_erase=pulled)
    try:
        CertifiedEraseStage().execute(ctx)
    except StageFailed as exc:
        failed = str(exc)
    else:
        raise AssertionError("the stage passed")
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["result"]["status"] == "FAIL"
    reason = rec["result"]["reason"]
    assert "the drive disappeared during the erase (/dev/nvme0n1 is gone)" in reason, reason
    assert "No such file or directory" in reason
    assert "the drive disappeared" in failed



def test_record_pdf_false_keeps_the_record_and_its_html_and_says_why_no_pdf(
        tmp_path: Path) -> None:
    params = RunParams().with_values({"record_pdf": "no"}, "ssdbench.toml [params]")
    assert params.record_pdf is False and RunParams().record_pdf is True
    run_dir, _ = _ata_erase_run(tmp_path, params)
    assert json.loads((run_dir / "erase-record.json").read_text())["result"]["status"] == "PASS"
    assert "HPA enabled" in (run_dir / "erase-certificate.html").read_text()
    assert not (run_dir / "erase-certificate.pdf").exists()
    files = json.loads((run_dir / "run.json").read_text())["erase_record"]
    assert files["pdf"] is None
    assert files["pdf_problem"] == "no PDF: plan parameter record_pdf is false"
    with pytest.raises(ParamError, match=r"record_pdf.*true or false"):
        RunParams().with_values({"record_pdf": "maybe"})
