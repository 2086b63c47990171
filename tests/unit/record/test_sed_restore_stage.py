"""The erase plan's stage with the #22 options: the native max restored before the erase
(recorded, the HPA warning gone), a locked self-encrypting drive refused with the advice, and
a PSID revert (typed PSID, sedutil-cli through the runner) recorded before the erase."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.sed import parse_sedutil_query
from ssdbench.erase.psid import revert_argv
from ssdbench.record.stage import CertifiedEraseStage
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageFailed, Target
from ssdbench.stages.params import RunParams
from ssdbench.system import Host
from tests.unit.devices.test_sed import capture as sed_capture
from tests.unit.erase.replay import FakeFS, ScriptedRunner
from tests.unit.erase.test_hidden import capture

from .test_stage import ERASE, SECTORS

PSID = "00215A9C0AA61EDA8F92DE7A9E30D969"
RESTORED = "/dev/sda:\n max sectors   = 586072368/586072368, HPA is disabled\n"


def _setup(tmp_path: Path, runner: ScriptedRunner, params: RunParams,
           sed: dict[str, Any] | None = None) -> tuple[RunContext, list[int], Path]:
    drive_dir = tmp_path / "results" / "20261125T000000Z_X_S1"
    run_dir = drive_dir / "erase"
    run_dir.mkdir(parents=True)
    drive: dict[str, Any] = {"path": "/dev/sda", "name": "sda", "transport": "sata",
                             "model": "SAMSUNG SSD PM810", "serial": "S1",
                             "size_bytes": SECTORS * 512, "logical_block_size": 512}
    if sed is not None:
        drive["sed"] = sed
    (drive_dir / "drive.json").write_text(json.dumps({"drive": drive}))
    record = RunRecord.create(run_dir, run="erase", kind="erase", drive={"name": "sda"},
                              target={}, params={}, tools={})
    erased: list[int] = []

    def secure_erase(ctx: Any) -> dict[str, Any]:
        erased.append(1)
        return ERASE

    ctx = RunContext(host=Host(runner, FakeFS()), run_dir=run_dir, drive_name="sda",
                     run_name="erase", target=Target("/dev/sda", "block", "sda", SECTORS * 512),
                     params=params, record=record, secure_erase=secure_erase)
    return ctx, erased, run_dir


def _health_and_tools(runner: ScriptedRunner) -> None:
    runner.add(["hdparm", "--dco-identify", "/dev/sda"], "", returncode=5)
    for _ in range(2):
        runner.add(["smartctl", "-j", "-x", "/dev/sda"], "", returncode=1)
    runner.add(["hdparm", "-V"], "hdparm v9.65\n")


def test_native_max_restored_before_the_erase_and_recorded(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], capture("hdparm-N_hpa-enabled_forensicswiki.txt"))
    runner.add(["hdparm", "-N", "p586072368", "/dev/sda"], "")
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)  # read back by the restore
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)  # the hidden-area check
    _health_and_tools(runner)
    ctx, erased, run_dir = _setup(tmp_path, runner, RunParams(restore_native_max=True))
    CertifiedEraseStage().execute(ctx)
    assert erased == [1]
    rec = json.loads((run_dir / "erase-record.json").read_text())
    restore = rec["hidden_areas"]["ata"]["native_max_restore"]
    assert (restore["result"], restore["before_sectors"], restore["after_sectors"]) == (
        "done", 586070255, 586072368)
    assert not any("HPA" in w for w in rec["warnings"]) and rec["result"]["status"] == "PASS"
    html = (run_dir / "erase-certificate.html").read_text()
    assert "Native max restored first" in html and "586070255 → 586072368 sectors" in html


def test_the_restored_drive_alone_is_discovered_again(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The kernel sees the restored size: the stage discovers the drive again, and only it
    (a discovery of every drive would send hdparm, smartctl, lsblk, blkid to drives in the
    middle of their own erases)."""
    bigger = SECTORS + 2048
    monkeypatch.setattr("ssdbench.record.stage.restore_native_max", lambda host, path: {
        "result": "done", "before_sectors": SECTORS, "after_sectors": bigger,
        "kernel": {"sectors": bigger}})
    looked: list[Any] = []
    fresh = type("D", (), {"path": "/dev/sda", "size_bytes": bigger * 512})()

    def discover(host: Host, *, only: Any = None) -> list[Any]:
        looked.append(only)
        return [fresh]

    monkeypatch.setattr("ssdbench.devices.discover", discover)
    monkeypatch.setattr("ssdbench.devices.find_drive", lambda drives, spec: drives[0])
    monkeypatch.setattr("ssdbench.stages.secure_erase.secure_erase_hook",
                        lambda drive, root: lambda ctx: ERASE)
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)  # the hidden-area check
    _health_and_tools(runner)
    ctx, _erased, run_dir = _setup(tmp_path, runner, RunParams(restore_native_max=True))
    CertifiedEraseStage().execute(ctx)
    assert looked == [{"sda"}]
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["hidden_areas"]["ata"]["native_max_restore"]["result"] == "done"


def test_restore_is_off_unless_asked_for() -> None:
    assert RunParams().restore_native_max is False
    assert RunParams().with_values({"restore_native_max": "yes"}).restore_native_max is True


def _locked() -> dict[str, Any]:
    return parse_sedutil_query(
        sed_capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt")).to_json()


def test_locked_drive_without_psid_is_refused_with_the_advice(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)
    _health_and_tools(runner)
    ctx, erased, run_dir = _setup(tmp_path, runner, RunParams(), sed=_locked())
    with pytest.raises(StageFailed, match="locked self-encrypting drive"):
        CertifiedEraseStage().execute(ctx)
    assert erased == []
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["result"]["status"] == "FAIL" and "PSID revert" in rec["result"]["reason"]
    assert rec["tcg_revert"] is None


def test_psid_revert_refused_is_recorded_and_nothing_is_erased(tmp_path: Path) -> None:
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)
    runner.add(revert_argv(PSID, "/dev/sda"), "", returncode=1,
               stderr=sed_capture("sedutil-psid-revert_not-authorized_sedutil-476.txt"))
    _health_and_tools(runner)
    ctx, erased, run_dir = _setup(tmp_path, runner, RunParams(psid=PSID), sed=_locked())
    with pytest.raises(StageFailed, match="NOT_AUTHORIZED"):
        CertifiedEraseStage().execute(ctx)
    assert erased == []
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["tcg_revert"]["result"] == "failed" and PSID not in json.dumps(rec)


def test_psid_revert_then_erase(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    runner = ScriptedRunner()
    runner.add(["hdparm", "-N", "/dev/sda"], RESTORED)
    runner.add(revert_argv(PSID, "/dev/sda"), "", stderr="revertTper completed successfully\n")
    _health_and_tools(runner)
    ctx, erased, run_dir = _setup(tmp_path, runner, RunParams(psid=PSID), sed=_locked())
    unlocked = type("D", (), {"sed_locked": False, "sed": None, "path": "/dev/sda"})()
    looked: list[Any] = []

    def discover(host: Host, *, only: Any = None) -> list[Any]:
        looked.append(only)
        return [unlocked]

    monkeypatch.setattr("ssdbench.devices.discover", discover)
    monkeypatch.setattr("ssdbench.devices.find_drive", lambda drives, spec: drives[0])
    hooks: list[Any] = []

    def fake_hook(drive: Any, root: Path) -> Any:
        hooks.append((drive, root))

        def hook(ctx: Any) -> dict[str, Any]:
            erased.append(2)
            return ERASE

        return hook

    monkeypatch.setattr("ssdbench.stages.secure_erase.secure_erase_hook", fake_hook)
    CertifiedEraseStage().execute(ctx)
    assert erased == [2] and hooks[0][1] == tmp_path / "results"
    assert looked == [{"sda"}]  # this drive only: the others may be in their erases
    rec = json.loads((run_dir / "erase-record.json").read_text())
    assert rec["tcg_revert"]["result"] == "done" and rec["result"]["status"] == "PASS"
    assert rec["tcg_revert"]["method"] == "tcg-psid-revert"
    assert "TCG PSID revert first</td><td>done: PSID revert done" in (
        run_dir / "erase-certificate.html").read_text()
    run = json.loads((run_dir / "run.json").read_text())
    assert PSID not in json.dumps(run)


def test_psid_param_is_checked_and_not_written_to_run_json() -> None:
    params = RunParams().with_values({"psid": PSID.lower()})
    assert params.psid == PSID and params.as_record()["psid"] == "(given)"
    with pytest.raises(ValueError, match="32 characters"):
        RunParams().with_values({"psid": "ABC"})


def test_a_journaled_plan_with_a_psid_resumes_without_it() -> None:
    from ssdbench.plan.plans import plan_from_json, preset

    plan = preset("erase").with_params({"psid": PSID, "operator": "A. Tester"}, source="t")
    data = plan.to_json()
    assert PSID not in str(data)
    again = plan_from_json(data)  # what a resume reads back from the journal
    assert again.params.psid == "" and again.params.operator == "A. Tester"
