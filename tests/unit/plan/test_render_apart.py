"""plan/engine.render_apart: the TUI's report and index drawn by a process of its own, its
command in log.txt; a report that fails is a sentence, never an exception."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ssdbench.plan.engine import finish, render_apart
from ssdbench.system import CommandRecord, SystemRunner
from tests.unit.report.synthetic import write_drive_folder


def _runner() -> tuple[SystemRunner, list[CommandRecord]]:
    runner = SystemRunner()
    seen: list[CommandRecord] = []
    runner.add_sink(seen.append)
    return runner, seen


def test_the_drive_report_and_the_index_come_from_a_process_of_their_own(tmp_path: Path):
    root = tmp_path / "ssdbench"
    drive = write_drive_folder(root, duration=120, runs=("consistency-default",))
    runner, seen = _runner()
    assert render_apart("drive", drive, runner, svg=False) is None
    assert (drive / "report.html").is_file()
    assert (drive / "consistency-default" / "iops-full-log.png").is_file()
    assert not list(drive.rglob("*.svg"))  # --no-svg reached the process
    assert finish(root, svg=False, runner=runner) == []
    assert (root / "index.html").is_file() and (root / "summary.csv").is_file()
    commands = [r.argv[-3:] for r in seen]
    assert commands == [("drive", str(drive), "--no-svg"), ("index", str(root), "--no-svg")]
    assert all(r.argv[1:3] == ("-m", "ssdbench.report.apart") for r in seen)


def test_the_report_process_finds_this_ssdbench_and_matplotlibs_cache(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path):
    """A child gets a fixed environment; the report's needs this ssdbench on its path (an
    interpreter without the package installed: the image-pins venv of make test) and
    MPLCONFIGDIR (the image's prebuilt font cache), nothing else of this process's."""
    import ssdbench
    from ssdbench.plan.engine import _report_env

    monkeypatch.setenv("MPLCONFIGDIR", str(tmp_path / "mpl"))
    monkeypatch.setenv("PYTHONPATH", "/elsewhere")
    monkeypatch.setenv("SSDBENCH_SECRET_THING", "x")
    env = _report_env()
    root = str(Path(ssdbench.__file__).resolve().parents[1])
    assert env["PYTHONPATH"].split(os.pathsep) == [root, "/elsewhere"]
    assert env["MPLCONFIGDIR"] == str(tmp_path / "mpl")
    assert "SSDBENCH_SECRET_THING" not in env


def test_a_report_that_fails_is_a_sentence_naming_the_retry(tmp_path: Path):
    runner, seen = _runner()
    missing = tmp_path / "ssdbench" / "no-such-drive"
    problem = render_apart("drive", missing, runner)
    assert problem is not None and problem.startswith("report failed (")
    assert f"ssdbench report {missing.parent}" in problem
    assert seen and seen[0].outcome == "failed"
    # no results folder yet: the index has nothing to draw and says nothing
    assert finish(tmp_path / "none", runner=runner) == []
