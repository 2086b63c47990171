"""A drive without SMART (a loop device, a USB bridge without SAT): its health stages are
"not available", a state of their own in run.json's stage list and the progress events,
never "done" with an error and never "failed"; the run goes on (#45)."""

from __future__ import annotations

import json
from pathlib import Path

from ssdbench.progress import Progress
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import NOT_AVAILABLE, RunContext, Target, run_stages
from ssdbench.stages.health import HealthStage
from ssdbench.stages.params import RunParams
from ssdbench.system import Host
from tests.unit.devices.fixtures import fixture_text
from tests.unit.erase.replay import FakeFS, ScriptedRunner


def test_no_smart_is_not_available_not_failed(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    for _ in range(2):  # smartctl says the device type is unknown (exit 2: open failed)
        runner.add(["smartctl", "-j", "-x", "/dev/loop1"],
                   '{"smartctl": {"exit_status": 2, "messages": [{"string": '
                   '"/dev/loop1: Unable to detect device type", "severity": "error"}]}}',
                   returncode=2)
    record = RunRecord.create(tmp_path, run="d", kind="diagnose", drive={"name": "loop1"},
                              target={}, params={}, tools={})
    events: list[Progress] = []
    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=tmp_path, drive_name="loop1",
                     run_name="d", target=Target("/dev/loop1", "block", "loop1", 1 << 30),
                     params=RunParams(), record=record, progress=events.append)
    state = run_stages(ctx, [HealthStage("before"), HealthStage("after")])
    assert state == "done"
    stages = {s["name"]: s for s in record.data["stages"]}
    for name in ("health-before", "health-after"):
        assert stages[name]["state"] == NOT_AVAILABLE == "not available", stages[name]
        assert "Unable to detect device type" in (stages[name]["error"] or "")
    finals = [e.state for e in events if e.stage == "health-before" and e.state != "running"]
    assert finals == [NOT_AVAILABLE]
    assert record.data["health"]["before"]["available"] is False


def _health(tmp_path: Path, text: str, returncode: int) -> RunRecord:
    runner = ScriptedRunner()
    runner.add(["smartctl", "-j", "-x", "/dev/sda"], text, returncode=returncode)
    record = RunRecord.create(tmp_path, run="d", kind="diagnose", drive={"name": "sda"},
                              target={}, params={}, tools={})
    ctx = RunContext(host=Host(runner, FakeFS({})), run_dir=tmp_path, drive_name="sda",
                     run_name="d", target=Target("/dev/sda", "block", "sda", 1 << 30),
                     params=RunParams(), record=record, progress=lambda _e: None)
    run_stages(ctx, [HealthStage("before")])
    return record


SAS_SSD = "smart/smartctl-a-j_7.3_SAMSUNG-MZILT960HBHQ_sas-ssd_healthy.json"


def test_one_failed_smartctl_command_is_not_an_unreadable_drive(tmp_path: Path) -> None:
    """A real SAS SSD's `smartctl -j` with exit bit 2 set (one of its commands failed: a
    log page the drive lacks, as the emulated SAS drive's `-x` does): what was read is the
    drive's health, the stage is done; bit 2 with nothing read stays not available."""
    obj = json.loads(fixture_text(SAS_SSD))
    obj["smartctl"]["exit_status"] = 4
    obj["smartctl"]["messages"] = [{"string": "Read Self-test Log failed", "severity": "error"}]
    record = _health(tmp_path / "read", json.dumps(obj), 4)
    (stage,) = record.data["stages"]
    assert stage["state"] == "done", stage
    health = record.data["health"]["before"]
    assert health["available"] is True and health["passed"] is True
    assert health["exit_status"] == 4 and health["messages"] == ["Read Self-test Log failed"]

    nothing = {"smartctl": obj["smartctl"]}
    record = _health(tmp_path / "nothing", json.dumps(nothing), 4)
    (stage,) = record.data["stages"]
    assert stage["state"] == NOT_AVAILABLE and "Self-test Log" in stage["error"], stage
