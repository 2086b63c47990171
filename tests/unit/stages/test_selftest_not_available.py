"""#45 H: a drive whose ``smartctl -c`` shows no self-test (a loop device, a bridge without
SMART) has the self-test stage "not available", not "done" in green, and its reason names
smartctl once and no JSON key; run.json still records the test as not run for the grade."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import NOT_AVAILABLE, RunContext, Target, run_stages
from ssdbench.stages.params import RunParams
from ssdbench.stages.selftest import SelfTestStage
from ssdbench.system import Host
from tests.unit.erase.replay import ScriptedRunner

NO_STATUS = json.dumps({"smartctl": {"exit_status": 0}, "ata_smart_data": {}})
NO_SELF_TESTS = json.dumps({"smartctl": {"exit_status": 0}, "ata_smart_data": {
    "self_test": {"status": {"value": 0, "passed": True}},
    "capabilities": {"self_tests_supported": False}}})


@pytest.mark.parametrize(("answer", "why"), [
    (NO_STATUS, "not run: smartctl -c shows no self-test status"),
    (NO_SELF_TESTS, "not run: the drive does not support self-tests")])
def test_no_self_test_on_the_drive_is_not_available(tmp_path: Path, answer: str,
                                                    why: str) -> None:
    runner = ScriptedRunner().add(["smartctl", "-j", "-c", "/dev/sda"], answer)
    target = Target("/dev/sda", "block", "sda", 32 * 2**20)
    record = RunRecord.create(tmp_path, run="grade", kind="grade", drive={"name": "sda"},
                              target=target.record(0), params={}, tools={})
    ctx = RunContext(host=Host(runner, ReplayFS(FSRecord())), run_dir=tmp_path,
                     drive_name="sda", run_name="grade", target=target,
                     params=RunParams(self_test="short"), record=record)
    assert run_stages(ctx, [SelfTestStage(poll_s=0.0)]) == "done"  # the run goes on
    data = json.loads(record.path.read_text())
    stage = next(s for s in data["stages"] if s["name"] == "self-test")
    assert stage["state"] == NOT_AVAILABLE, stage
    st = data["self_test"]
    assert st["ran"] is False and st["summary"].startswith(why), st
    assert "smartctl -c: smartctl -c" not in st["summary"] and "ata_smart_data" not in (
        st["summary"] + str(stage.get("error")))
