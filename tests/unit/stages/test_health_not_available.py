"""A drive without SMART (a loop device, a USB bridge without SAT): its health stages are
"not available", a state of their own in run.json's stage list and the progress events,
never "done" with an error and never "failed"; the run goes on (#45)."""

from __future__ import annotations

from pathlib import Path

from ssdbench.progress import Progress
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import NOT_AVAILABLE, RunContext, Target, run_stages
from ssdbench.stages.health import HealthStage
from ssdbench.stages.params import RunParams
from ssdbench.system import Host
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
