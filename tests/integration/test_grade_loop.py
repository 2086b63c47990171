"""`ssdbench run DEV --plan grade` on a loop device (root): read-only (the drive is not
written: no --destroy needed), and a device without SMART is "not gradable" with
smartctl's own reason, never a pass; the grade reaches run.json, summary.csv, report.html
and index.html (#32 item 2)."""

from __future__ import annotations

import csv
import hashlib
import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import loop_device


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(16, fill=0x6C, prefix="ssdbench-grade-") as (dev, _image):
        yield dev


def test_grade_plan_on_a_loop_device_is_read_only_and_not_gradable(loop: str,
                                                                     tmp_path: Path) -> None:
    before = hashlib.sha256(Path(loop).read_bytes()).hexdigest()
    results = tmp_path / "results"
    assert main(["run", loop, "--plan", "grade", "--quiet", "--results", str(results)]) == (
        ExitCode.OK)
    assert hashlib.sha256(Path(loop).read_bytes()).hexdigest() == before
    [run_json] = list(results.rglob("grade/run.json"))
    run = json.loads(run_json.read_text())
    # the plan's short self-test: a loop device has none, said so, never a pass
    assert run["self_test"]["ran"] is False, run["self_test"]
    assert run["self_test"]["summary"].startswith("not run: smartctl -c"), run["self_test"]
    grade = run["grade"]
    assert grade["grade"] == "not gradable", grade
    assert grade["reasons"][0]["grade"] == "not gradable"
    assert "smartctl" in grade["reasons"][0]["text"], grade
    assert grade["thresholds"]["media_errors_scrap"] == 10
    with (results / "summary.csv").open(newline="") as fh:
        [row] = list(csv.DictReader(fh))
    assert (row["run"], row["grade"]) == ("grade", "not gradable")
    report = (run_json.parent.parent / "report.html").read_text()
    assert "Health grade" in report and "g-notgradable" in report
    assert "not gradable" in (results / "index.html").read_text()
