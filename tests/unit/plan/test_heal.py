"""A finished plan whose drive.json lacks its last run: the power went after the journal
(state.json) said done and before drive.json, copied apart from it, reached the stick. Seen
in tests/e2e/test_power_loss.py (killed during the report: drive.json listed the three
interrupted attempts and not the finished run). The next kiosk boot, which only writes the
missing report, adds the run from its run.json."""

from __future__ import annotations

import io
import json
from pathlib import Path

from ssdbench.devices import Drive
from ssdbench.kiosk.config import parse_config
from ssdbench.kiosk.run import _jobs, _plan_for
from ssdbench.plan.engine import heal_finished_drive
from ssdbench.plan.journal import Journal

SERIAL = "E2EPOWERLOSS1"
ERASE = {"method": "nvme-format-user-data", "secure": True, "verified": True}


def drive() -> Drive:
    return Drive(path="/dev/nvme0n1", name="nvme0n1", transport="nvme", model="QEMU NVMe Ctrl",
                 serial=SERIAL, firmware="7.2", size_bytes=1 << 30, logical_block_size=512,
                 physical_block_size=512, rotational=False, trim_supported=True,
                 protected=False, protect_reasons=(), erase_methods=("nvme-format-user-data",),
                 ata_security=None, nvme=None)


def folder(root: Path) -> Path:
    drive_dir = root / "20261127T000154Z_QEMU_NVMe_Ctrl_E2EPOWERLOSS1"
    (drive_dir / "trim").mkdir(parents=True)
    (drive_dir / "trim" / "run.json").write_text(json.dumps(
        {"run": "trim", "state": "done", "erase": ERASE}))
    runs = [{"run": f"trim-interrupted-{i}", "state": "interrupted",
             "error": "set aside on resume"} for i in (1, 2, 3)]
    (drive_dir / "drive.json").write_text(json.dumps({"drive": {}, "erases": [],
                                                      "runs": runs}))
    return drive_dir


def runs_of(drive_dir: Path) -> list[tuple[str, str]]:
    doc = json.loads((drive_dir / "drive.json").read_text())
    return [(r["run"], r["state"]) for r in doc["runs"]]


def test_a_done_run_missing_from_drive_json_is_added_from_its_run_json(tmp_path: Path) -> None:
    drive_dir = folder(tmp_path)
    entry = {"state": "done", "runs": {"trim": {"state": "done"}}}
    assert heal_finished_drive(drive_dir, entry) == ["trim"]
    assert runs_of(drive_dir)[-1] == ("trim", "done")
    doc = json.loads((drive_dir / "drive.json").read_text())
    assert doc["erases"] == [{"run": "trim", **ERASE}]
    assert heal_finished_drive(drive_dir, entry) == []  # once
    assert len(runs_of(drive_dir)) == 4


def test_nothing_added_without_the_run_json_or_from_a_bad_journal(tmp_path: Path) -> None:
    drive_dir = folder(tmp_path)
    (drive_dir / "trim" / "run.json").unlink()
    assert heal_finished_drive(drive_dir, {"runs": {"trim": {"state": "done"}}}) == []
    assert heal_finished_drive(drive_dir, {"runs": ["trim"]}) == []
    assert heal_finished_drive(drive_dir, {"runs": {"trim": {"state": "running"}}}) == []
    (drive_dir / "drive.json").write_text("{torn")
    assert heal_finished_drive(drive_dir, {"runs": {"trim": {"state": "done"}}}) == []
    assert (drive_dir / "drive.json").read_text() == "{torn"  # left alone, never replaced


def test_the_kiosk_heals_a_finished_drive_before_writing_its_missing_report(
        tmp_path: Path) -> None:
    drive_dir = folder(tmp_path)
    config = parse_config({"plan": "trim", "select": [f"serial:{SERIAL}"],
                           "destroy": [SERIAL]})
    plan = _plan_for(config)
    journal = Journal.open(tmp_path)
    journal.start_drive(SERIAL, drive="nvme0n1", model="QEMU NVMe Ctrl", serial=SERIAL,
                        drive_dir=drive_dir.name, plan=plan.to_json(),
                        identity=drive().identity.to_json())  # the journal knows it by that
    journal.run_state(SERIAL, "trim", "done")
    journal.finish_drive(SERIAL, "done")
    out = io.StringIO()
    reports: list[Path] = []
    assert _jobs(config, plan, [drive()], journal, out, reports=reports) == []
    assert reports == [drive_dir]
    assert runs_of(drive_dir)[-1] == ("trim", "done")
    assert "drive.json lacked the finished run(s) trim; added from their run.json" \
        in out.getvalue()
