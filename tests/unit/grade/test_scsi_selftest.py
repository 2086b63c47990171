"""The SAS/SCSI self-test (grade/selftest.py's parser, stages/selftest.py's ``_Scsi``) on the
real smartctl 7.3 and sg3_utils 1.46 output of the emulated SAS drive in QEMU
(tests/data/sas-emu/, its README): ``smartctl -j -l selftest`` before, while the short test
runs (the log's entry of result 15, REQUEST SENSE's progress) and after; ``smartctl -j -t``
and ``-X``. The drive's failure is the captured log edited (said where)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS
from ssdbench.devices.errors import ParseError
from ssdbench.grade.selftest import parse_scsi_self_test_log
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageCancelled, StageNotAvailable, Target
from ssdbench.stages.params import RunParams
from ssdbench.stages.selftest import SelfTestStage, native_scsi
from ssdbench.system import Host
from tests.unit.erase.replay import ScriptedRunner

SAS = Path(__file__).resolve().parents[2] / "data" / "sas-emu"
DEV = "/dev/sdb"
LOG = ["smartctl", "-j", "-l", "selftest", DEV]
PROGRESS = ["sg_requests", "--progress", DEV]


def capture(name: str) -> str:
    return (SAS / name).read_text()


def failed_log() -> str:
    """EDITED from smartctl-selftest-after.json: the newest entry as the emulator's worn
    profile logs it (result 7, failed in segment 1; simdrive/ata/sas.py), with smartctl's
    self_test_result[] words. Not captured: the QEMU test's drive has the healthy profile."""
    obj = json.loads(capture("smartctl-selftest-after.json"))
    obj["scsi_self_test_0"]["result"] = {"value": 7, "string": "Failed in segment -->"}
    obj["scsi_self_test_0"]["failed_segment"] = {"value": 1, "aka": "self_test_number"}
    return json.dumps(obj)


def test_the_log_before_while_running_after_and_aborted() -> None:
    before = parse_scsi_self_test_log(capture("smartctl-selftest-before.json"))
    assert not before.running and len(before.entries) == 1
    running = parse_scsi_self_test_log(capture("smartctl-selftest-running.json"))
    assert running.running and running.latest is None
    assert (running.entries[0].kind, running.entries[0].result) == ("short", 15)
    assert running.entries[0].status == "Self test in progress ..."
    after = parse_scsi_self_test_log(capture("smartctl-selftest-after.json"))
    assert not after.running and after.signature != before.signature
    assert after.latest is not None
    assert (after.latest.kind, after.latest.passed, after.latest.status,
            after.latest.power_on_hours) == ("short", True, "Completed", 1234)
    aborted = parse_scsi_self_test_log(capture("smartctl-selftest-aborted.json"))
    assert aborted.latest is not None
    assert (aborted.latest.kind, aborted.latest.passed) == ("extended", None)
    assert aborted.latest.status == "Aborted (by user command)"
    failed = parse_scsi_self_test_log(failed_log()).latest
    assert failed is not None and (failed.passed, failed.status) == (
        False, "Failed in segment -->")
    # smartctl's answer to -t names no test: an empty log
    assert parse_scsi_self_test_log(capture("smartctl-t-short.json")).entries == ()


def _edited(**entry: Any) -> str:
    obj = json.loads(capture("smartctl-selftest-after.json"))
    obj["scsi_self_test_0"].update(entry)
    return json.dumps(obj)


@pytest.mark.parametrize(("text", "words"), [
    ("not json", "not JSON"),
    ("[1, 2]", "expected a JSON object"),
    ('{"scsi_self_test_0": [1]}', "scsi_self_test_0 is a list"),
    (_edited(result={"value": "zero"}), "scsi_self_test_0 has no result value"),
    (_edited(result={"value": 99}), "out of range"),
    (_edited(result={"value": 1e400}), "not a number a drive reports"),
    (_edited(result={"value": 0, "string": "x" * 500}), "not smartctl's words"),
    (_edited(power_on_time={"hours": -1}), "out of range"),
    ('{"scsi_extended_self_test_seconds": -5}', "out of range"),
    ("[" * 100_000 + "]" * 100_000, "smartctl -l selftest"),
])
def test_a_malformed_log_is_a_parse_error(text: str, words: str) -> None:
    with pytest.raises(ParseError, match=words):
        parse_scsi_self_test_log(text)


# ---- the stage ------------------------------------------------------------------------


def _ctx(tmp_path: Path, runner: ScriptedRunner, kind: str, *,
         drive: dict[str, Any] | None = None) -> RunContext:
    """A run of the grade plan on sdb; its drive.json as discovery writes it for the
    emulated SAS drive (transport scsi, vendor SSDBENCH)."""
    run_dir = tmp_path / "drive" / "grade"
    run_dir.mkdir(parents=True)
    identity = drive if drive is not None else {
        "name": "sdb", "path": DEV, "transport": "scsi", "vendor": "SSDBENCH"}
    (run_dir.parent / "drive.json").write_text(json.dumps({"drive": identity}))
    target = Target(DEV, "block", "sdb", 16 << 20)
    record = RunRecord.create(run_dir, run="grade", kind="grade", drive={"name": "sdb"},
                              target=target.record(0), params={}, tools={})
    return RunContext(host=Host(runner, ReplayFS(FSRecord())), run_dir=run_dir,
                      drive_name="sdb", run_name="grade", target=target,
                      params=RunParams(self_test=kind), record=record)


def _stored(ctx: RunContext) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ctx.record.path.read_text())["self_test"]
    return data


def test_a_short_self_test_runs_with_progress_to_a_new_entry_that_passed(
        tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "short", DEV], capture("smartctl-t-short.json"))
    runner.add(LOG, capture("smartctl-selftest-running.json"))
    runner.add(PROGRESS, capture("sg_requests-selftest.txt"))
    runner.add(LOG, capture("smartctl-selftest-after.json"))
    ctx = _ctx(tmp_path, runner, "short")
    seen: list[Any] = []
    ctx.progress = seen.append
    SelfTestStage(poll_s=0.0).execute(ctx)
    st = _stored(ctx)
    assert st["ran"] is True and st["summary"] == "passed (Completed)", st
    assert st["result"] == {"kind": "short", "passed": True, "status": "Completed",
                            "power_on_hours": 1234}
    running = [ev for ev in seen if ev.fraction is not None]
    assert len(running) == 1 and round(running[0].fraction, 4) == 0.1931
    assert running[0].eta_s is not None
    assert running[0].message == "Self test in progress ... (19% done)"
    assert ("smartctl", "-j", "-c", DEV) not in runner.calls  # the ATA path is not taken


def test_the_drives_failure_is_recorded_as_failed(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "long", DEV], capture("smartctl-t-long.json"))
    runner.add(LOG, failed_log())
    ctx = _ctx(tmp_path, runner, "extended")
    SelfTestStage(poll_s=0.0).execute(ctx)  # a verdict: done, the grade says scrap
    st = _stored(ctx)
    assert st["ran"] is True and st["result"]["passed"] is False, st
    assert st["summary"] == "FAILED (Failed in segment -->)"


def test_a_refused_self_test_is_not_run_with_smartctls_words(tmp_path: Path) -> None:
    """smartctl -t's exit status bit 2 with its message (a drive that refuses SEND
    DIAGNOSTIC): the capture's answer with the status and words of a refusal."""
    refused = json.loads(capture("smartctl-t-short.json"))
    refused["smartctl"]["exit_status"] = 4
    refused["smartctl"]["messages"] = [{"string": "Short offline self test failed "
                                        "[Illegal request]", "severity": "error"}]
    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "short", DEV], json.dumps(refused))
    ctx = _ctx(tmp_path, runner, "short")
    with pytest.raises(StageNotAvailable, match=r"self-test \(short\) not run: smartctl -t "
                                                r"refused: Short offline self test failed"):
        SelfTestStage(poll_s=0.0).execute(ctx)
    st = _stored(ctx)
    assert st["ran"] is False and "Illegal request" in st["reason"], st


def test_a_drive_that_logs_no_new_entry_is_not_a_pass(tmp_path: Path) -> None:
    """The log after the test is the log before it: the "Completed" shown is an earlier
    test's, never this one's."""
    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "short", DEV], capture("smartctl-t-short.json"))
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    ctx = _ctx(tmp_path, runner, "short")
    with pytest.raises(StageNotAvailable, match="logged no new self-test"):
        SelfTestStage(poll_s=0.0).execute(ctx)
    assert _stored(ctx)["ran"] is False


def test_a_drive_that_logs_nothing_at_all_is_not_run(tmp_path: Path) -> None:
    empty = capture("smartctl-t-short.json")  # smartctl's JSON with no scsi_self_test_N
    runner = ScriptedRunner()
    runner.add(LOG, empty)
    runner.add(["smartctl", "-j", "-t", "short", DEV], capture("smartctl-t-short.json"))
    runner.add(LOG, empty)
    ctx = _ctx(tmp_path, runner, "short")
    with pytest.raises(StageNotAvailable, match="logged no new self-test"):
        SelfTestStage(poll_s=0.0).execute(ctx)


def test_a_test_already_running_is_not_this_runs(tmp_path: Path) -> None:
    runner = ScriptedRunner().add(LOG, capture("smartctl-selftest-running.json"))
    ctx = _ctx(tmp_path, runner, "short")
    with pytest.raises(StageNotAvailable, match="still running"):
        SelfTestStage(poll_s=0.0).execute(ctx)
    assert runner.calls == [tuple(LOG)]  # never started a second one


def test_a_malformed_log_while_running_fails_the_stage_with_its_reason(
        tmp_path: Path) -> None:
    from ssdbench.stages.base import StageFailed

    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "short", DEV], capture("smartctl-t-short.json"))
    runner.add(LOG, _edited(result={"value": 99}))
    ctx = _ctx(tmp_path, runner, "short")
    with pytest.raises(StageFailed, match="stopped answering: smartctl: scsi_self_test_0"):
        SelfTestStage(poll_s=0.0).execute(ctx)


def test_a_cancelled_self_test_is_aborted_with_smartctl_x(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(LOG, capture("smartctl-selftest-before.json"))
    runner.add(["smartctl", "-j", "-t", "long", DEV], capture("smartctl-t-long.json"))
    runner.add(["smartctl", "-j", "-X", DEV], capture("smartctl-X.json"))
    ctx = _ctx(tmp_path, runner, "extended")
    ctx.cancel.set()
    with pytest.raises(StageCancelled):
        SelfTestStage(poll_s=0.0).execute(ctx)
    assert runner.calls[-1] == ("smartctl", "-j", "-X", DEV)


@pytest.mark.parametrize(("drive", "scsi"), [
    ({"transport": "scsi", "vendor": "SSDBENCH"}, True),
    ({"transport": "sas", "vendor": "SEAGATE "}, True),
    ({"transport": "sas", "vendor": "ATA     "}, False),  # SATA behind SAT
    ({"transport": "sas", "vendor": "SEAGATE", "ata_passthrough": True}, False),
    ({"transport": "sata", "vendor": ""}, False),
    ({"transport": ["scsi"]}, False),
    (None, False),
])
def test_which_drives_take_the_scsi_self_test(drive: Any, scsi: bool) -> None:
    assert native_scsi(drive) is scsi


def test_a_sata_drive_behind_sat_keeps_the_ata_self_test(tmp_path: Path) -> None:
    runner = ScriptedRunner().add(["smartctl", "-j", "-c", DEV], '{"smartctl": {}}')
    ctx = _ctx(tmp_path, runner, "short", drive={"transport": "sas", "vendor": "ATA"})
    with pytest.raises(StageNotAvailable, match="smartctl -c"):
        SelfTestStage(poll_s=0.0).execute(ctx)
    assert runner.calls == [("smartctl", "-j", "-c", DEV)]
