"""The self-test parsers (grade/selftest.py) on real smartctl captures (the 860 EVO, the WD
Red SA500, QEMU's ATA disk), and a running test as the same captures show it with the
status byte a drive reports while it runs (ATA8-ACS: 0xF0 + tens of percent left)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS
from ssdbench.devices.model import ParseError
from ssdbench.grade.selftest import parse_nvme_self_test_log, parse_smartctl_capabilities
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageNotAvailable, Target
from ssdbench.stages.params import RunParams
from ssdbench.stages.selftest import SelfTestStage
from ssdbench.system import Host
from tests.unit.devices.fixtures import BUNDLES, fixture_text
from tests.unit.erase.replay import ScriptedRunner

SATA = "smart/smartctl-x-j_7.0_samsung-860-EVO-500GB_sata-ssd_devstats.json"
WD = "smart/smartctl-a-j_7.3_wd-red-SA500-4TB_sata-ssd_attr241-not-in-drivedb.json"


def test_the_drives_own_estimates_and_last_outcome() -> None:
    s = parse_smartctl_capabilities(fixture_text(SATA))
    assert (s.running, s.passed, s.short_minutes, s.extended_minutes, s.supported) == (
        False, True, 2, 85, True)
    wd = parse_smartctl_capabilities(fixture_text(WD))
    assert (wd.short_minutes, wd.extended_minutes) == (2, 10)
    qemu = parse_smartctl_capabilities(
        (BUNDLES / "qemu-nvme-ahci-usb" / "cmd" / "smartctl_-j_-x_dev_sda.out").read_text())
    assert (qemu.supported, qemu.short_minutes, qemu.extended_minutes) == (True, 2, 54)


@pytest.mark.parametrize(("value", "words", "left"), [
    (0xF9, "Self-test routine in progress, 90% remaining", 90),
    (0xF3, "", 30),  # no words and no remaining_percent: from the low nibble
])
def test_a_running_self_test_with_what_is_left(value: int, words: str, left: int) -> None:
    obj = json.loads(fixture_text(SATA))
    obj["ata_smart_data"]["self_test"]["status"] = {"value": value, "string": words}
    s = parse_smartctl_capabilities(json.dumps(obj))
    assert (s.running, s.remaining_percent, s.passed) == (True, left, None)


@pytest.mark.parametrize(("value", "passed"), [(0x79, False), (0x10, None), (0x00, True)])
def test_a_finished_self_test_by_its_status_byte(value: int, passed: bool | None) -> None:
    obj = json.loads(fixture_text(SATA))
    obj["ata_smart_data"]["self_test"]["status"] = {"value": value}
    s = parse_smartctl_capabilities(json.dumps(obj))
    assert (s.running, s.passed) == (False, passed)
    assert s.status  # the drive's words, or the standard's


def test_no_status_is_a_parse_error() -> None:
    with pytest.raises(ParseError):
        parse_smartctl_capabilities('{"smartctl": {"exit_status": 4}}')


# ---- the stage, against recorded tool output -------------------------------------------

# smartctl -t's answer as it starts a test (exit status 0; its JSON carries no more)
STARTED = json.dumps({"smartctl": {"version": [7, 3], "exit_status": 0}})
NVME_LOG = "selftest/nvme-self-test-log-json_v2.x_SYNTHESIZED-from-source_running-and-a-failure.json"
NVME_REFUSED = "selftest/nvme-device-self-test_v2.3_qemu-nvme_invalid-opcode.txt"


def test_the_nvme_self_test_log_while_running_and_its_newest_result() -> None:
    s = parse_nvme_self_test_log(fixture_text(NVME_LOG))
    assert (s.running, s.operation, s.completion_percent) == (True, 2, 42)
    assert s.latest is not None
    assert (s.latest.kind, s.latest.passed, s.latest.power_on_hours) == ("short", False, 12801)
    assert s.latest.status == "completed with one or more failed segments"
    done = json.loads(fixture_text(NVME_LOG))
    done["Current Device Self-Test Operation"] = 0
    assert parse_nvme_self_test_log(json.dumps(done)).completion_percent is None
    with pytest.raises(ParseError):
        parse_nvme_self_test_log('{"List of Valid Reports": []}')


def _ctx(tmp_path: Path, runner: ScriptedRunner, name: str, kind: str) -> RunContext:
    run_dir = tmp_path / "grade"
    run_dir.mkdir(parents=True)
    path = f"/dev/{name}"
    target = Target(path, "block", name, 32 * 2**20)
    record = RunRecord.create(run_dir, run="grade", kind="grade", drive={"name": name},
                              target=target.record(0), params={}, tools={})
    return RunContext(host=Host(runner, ReplayFS(FSRecord())), run_dir=run_dir,
                      drive_name=name, run_name="grade", target=target,
                      params=RunParams(self_test=kind), record=record)


def _stored(ctx: RunContext) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ctx.record.path.read_text())
    return data


def test_qemus_nvme_refuses_the_self_test_and_it_is_not_run_with_its_reason(
        tmp_path: Path) -> None:
    runner = ScriptedRunner().add(["nvme", "device-self-test", "/dev/nvme0n1", "-s", "1"],
                                  returncode=1, stderr=fixture_text(NVME_REFUSED))
    ctx = _ctx(tmp_path, runner, "nvme0n1", "short")
    with pytest.raises(StageNotAvailable, match="not run: nvme device-self-test refused"):
        SelfTestStage().execute(ctx)  # the stage is not "done"
    st = _stored(ctx)["self_test"]
    assert st["ran"] is False and st["summary"].startswith(
        "not run: nvme device-self-test refused"), st
    assert "Invalid Command Opcode" in st["reason"]


def test_an_ata_self_test_is_polled_to_its_end_with_progress(tmp_path: Path) -> None:
    """The 860 EVO's own smartctl output: idle, then running 90% and 40% left, then done."""
    def status(value: int, words: str) -> str:
        obj = json.loads(fixture_text(SATA))
        obj["ata_smart_data"]["self_test"]["status"] = {"value": value, "string": words}
        return json.dumps(obj)

    runner = ScriptedRunner()
    c = ["smartctl", "-j", "-c", "/dev/sda"]
    runner.add(c, fixture_text(SATA))
    runner.add(["smartctl", "-j", "-l", "selftest", "/dev/sda"], fixture_text(SATA))
    runner.add(["smartctl", "-j", "-t", "short", "/dev/sda"], STARTED)
    runner.add(c, status(0xF9, "Self-test routine in progress, 90% remaining"))
    runner.add(c, status(0xF4, "Self-test routine in progress, 40% remaining"))
    runner.add(c, status(0x00, "completed without error"))
    ctx = _ctx(tmp_path, runner, "sda", "short")
    seen: list[Any] = []
    ctx.progress = seen.append
    SelfTestStage(poll_s=0.0).execute(ctx)
    st = _stored(ctx)["self_test"]
    assert st["ran"] is True and st["result"]["passed"] is True, st
    fractions = [ev.fraction for ev in seen if ev.fraction is not None]
    assert [round(f, 1) for f in fractions] == [0.1, 0.6]
    assert all(ev.eta_s is not None for ev in seen if ev.fraction is not None)


def test_a_cancelled_self_test_is_aborted(tmp_path: Path) -> None:
    from ssdbench.stages.base import StageCancelled

    runner = ScriptedRunner()
    runner.add(["smartctl", "-j", "-c", "/dev/sda"], fixture_text(SATA))
    runner.add(["smartctl", "-j", "-l", "selftest", "/dev/sda"], fixture_text(SATA))
    runner.add(["smartctl", "-j", "-t", "long", "/dev/sda"], STARTED)
    runner.add(["smartctl", "-j", "-X", "/dev/sda"], "{}")
    ctx = _ctx(tmp_path, runner, "sda", "extended")
    ctx.cancel.set()
    with pytest.raises(StageCancelled):
        SelfTestStage(poll_s=0.0).execute(ctx)
    assert runner.calls[-1] == ("smartctl", "-j", "-X", "/dev/sda")


def test_a_refused_or_unlogged_ata_self_test_is_not_a_pass(tmp_path: Path) -> None:
    """smartctl -t answers with its exit status (every code is 'ok' to the runner): bits
    0-2 are a refusal; a test never seen running whose log has no new entry is an earlier
    test's status, not this one's (it was recorded as passed)."""
    refused = json.dumps({"smartctl": {"exit_status": 4, "messages": [
        {"string": "Execute SMART Short self-test routine immediately in off-line mode "
                   "failed: Input/output error", "severity": "error"}]}})
    def run_short(where: Path, started: str, polls: int) -> dict[str, Any]:
        runner = ScriptedRunner()
        for _ in range(polls):
            runner.add(["smartctl", "-j", "-c", "/dev/sda"], fixture_text(SATA))
            runner.add(["smartctl", "-j", "-l", "selftest", "/dev/sda"], fixture_text(SATA))
        runner.add(["smartctl", "-j", "-t", "short", "/dev/sda"], started)
        ctx = _ctx(where, runner, "sda", "short")
        with pytest.raises(StageNotAvailable, match=r"self-test \(short\) not run: "):
            SelfTestStage(poll_s=0.0).execute(ctx)  # "not available" with why, never "done"
        result: dict[str, Any] = _stored(ctx)["self_test"]
        return result

    st = run_short(tmp_path / "a", refused, 1)
    assert st["ran"] is False and "Input/output error" in st["reason"], st
    st = run_short(tmp_path / "b", STARTED, 2)
    assert st["ran"] is False and "logged no new self-test" in st["reason"], st


def test_the_grade_compares_the_drive_with_the_kernels_size_now(tmp_path: Path) -> None:
    """After an HPA's native max is restored and the disk rescanned the kernel sees more
    than the run's target said when it started: the identity check uses sysfs's size now
    (the stale one made the restored drive's identity "not add up")."""
    from ssdbench.stages.grade import grade_now

    text = fixture_text(SATA)  # the 860 EVO: 500,107,862,016 bytes
    argv = ["smartctl", "-j", "-x", "/dev/sda"]
    runner = ScriptedRunner().add(argv, text).add(argv, text)
    ctx = _ctx(tmp_path, runner, "sda", "none")  # its target: 32 MiB when the run began
    fs = ctx.host.fs
    assert isinstance(fs, ReplayFS)
    fs.record.files["/sys/class/block/sda/size"] = f"{500_107_862_016 // 512}\n"
    graded = grade_now(ctx)
    assert not any("identity" in r["text"] for r in graded["reasons"]), graded["reasons"]
    fs.record.files["/sys/class/block/sda/size"] = "30000\n"  # an HPA set since
    graded = grade_now(ctx)
    assert any("the kernel sees 15,360,000" in r["text"] for r in graded["reasons"])
