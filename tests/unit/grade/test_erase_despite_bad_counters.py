"""The erase plan reads health and the grade before it erases (record/stage.py); a smartctl
answer whose counters are out of any drive's range (10^400 power-on hours raised
OverflowError, a 5000-digit raw string ValueError) made that stage stop before the erase
(#42 item 6). Now the drive is erased, and its record says "not gradable" and why."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.record.stage import CertifiedEraseStage
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, Target
from ssdbench.stages.params import RunParams
from ssdbench.system import Host
from tests.unit.devices.fixtures import fixture_text
from tests.unit.erase.replay import FakeFS, ScriptedRunner
from tests.unit.erase.test_hidden import capture

SECTORS = 586070255  # the HPA capture's visible sectors
SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
ERASE = {"method": "ata-security-erase-enhanced", "secure": True, "verified": True,
         "duration_s": 61.0, "detail": "ata-security-erase-enhanced in 60 s",
         "verification": {"markers": 16, "block_bytes": 4096, "offsets": [0, 4096],
                          "survivors": [], "passed": True}, "steps": ["method x"]}


def _bad_hours() -> str:
    return json.dumps(json.loads(fixture_text(SATA)) | {"power_on_time": {"hours": 10**400}})


def _bad_raw_string() -> str:
    obj = json.loads(fixture_text(SATA))
    for attr in obj["ata_smart_attributes"]["table"]:
        if attr["id"] == 5:
            attr["raw"] = {"value": 5, "string": "5" * 5000}
    return json.dumps(obj)


def _no_smart() -> str:
    """What smartctl says of a drive it cannot read (a loop device, a USB bridge without
    pass-through): exit status 2, "Unable to detect device type" (a real answer's form)."""
    return json.dumps({"smartctl": {"version": [7, 3], "exit_status": 2, "messages": [
        {"string": "/dev/sda: Unable to detect device type", "severity": "error"}]}})


@pytest.mark.parametrize("smart", [_bad_hours, _bad_raw_string, _no_smart],
                         ids=["hours-10^400", "raw-5000-digits", "no-smart"])
def test_the_drive_is_erased_and_its_record_says_not_gradable(tmp_path: Path,
                                                               smart: Any) -> None:
    drive_dir = tmp_path / "results" / "20261128T000000Z_Samsung_SSD_860_S1"
    run_dir = drive_dir / "erase"
    run_dir.mkdir(parents=True)
    drive = {"path": "/dev/sda", "name": "sda", "transport": "sata", "vendor": "ATA",
             "model": "Samsung SSD 860 EVO 500GB", "serial": "S1", "firmware": "RVT02B6Q",
             "size_bytes": SECTORS * 512, "logical_block_size": 512, "rotational": False,
             "nvme": None}
    (drive_dir / "drive.json").write_text(json.dumps({"drive": drive}))
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], capture("hdparm-N_hpa-enabled_forensicswiki.txt"))
    runner.add(["hdparm", "--dco-identify", "/dev/sda"], "", returncode=5)
    for _ in range(3):  # health before, the grade, health after
        runner.add(["smartctl", "-j", "-x", "/dev/sda"], smart())
    runner.add(["hdparm", "-V"], "hdparm v9.65\n")
    record = RunRecord.create(run_dir, run="erase", kind="erase", drive={"name": "sda"},
                              target={}, params={}, tools={"ssdbench": "0.1.0"})
    erased: list[str] = []

    def secure_erase(ctx: Any) -> dict[str, Any]:
        erased.append(" ".join(runner.calls[-1]))
        return ERASE

    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=run_dir, drive_name="sda",
                     run_name="erase", target=Target("/dev/sda", "block", "sda",
                                                     SECTORS * 512),
                     params=RunParams(), record=record, secure_erase=secure_erase)
    CertifiedEraseStage().execute(ctx)
    assert erased == ["smartctl -j -x /dev/sda"]  # the erase ran, after the grade
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["result"]["status"] == "PASS"
    run = json.loads((run_dir / "run.json").read_text())
    assert run["grade"]["grade"] == "not gradable"
    assert ("smartctl's output not understood" in run["grade"]["summary"]
            or smart is _no_smart)  # no SMART: "not available", and the erase still ran
    assert run["health"]["before"]["available"] is False
