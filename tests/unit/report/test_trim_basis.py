"""The report's TRIM verdict reads the idles the run recorded (issue #20 item 3)."""

from __future__ import annotations

import json
from pathlib import Path

from ssdbench.report.load import load_run
from ssdbench.report.model import analyse
from tests.unit.report.synthetic import DriveSpec, write_drive_folder


def _trim_run(tmp_path: Path) -> Path:
    drive = write_drive_folder(tmp_path, DriveSpec(), duration=120, runs=("trim",))
    return drive / "trim"


def test_a_run_with_the_settle_idle_credits_trim(tmp_path: Path) -> None:
    trim = analyse(load_run(_trim_run(tmp_path))).trim
    assert trim is not None
    assert (trim.basis, trim.settle_s, trim.trim_idle_s) == ("same-idle", 60.0, 60.0)
    assert "same 60-s idle" in trim.reason


def test_a_run_from_before_the_settle_stage_says_idle_may_count(tmp_path: Path) -> None:
    run_dir = _trim_run(tmp_path)
    meta = json.loads((run_dir / "run.json").read_text())
    del meta["settle"]
    (run_dir / "run.json").write_text(json.dumps(meta))
    trim = analyse(load_run(run_dir)).trim
    assert trim is not None and trim.basis == "idle-after-trim-only"
    assert "background garbage collection" in trim.reason
