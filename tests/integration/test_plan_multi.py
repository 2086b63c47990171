"""Several drives at once: two loop devices, one `ssdbench run`, each fio pinned to a CPU;
a drive that is gone fails alone; a wrong consent for one refuses all before any write."""

from __future__ import annotations

import dataclasses
import json
import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.plan import engine
from ssdbench.plan.engine import DriveJob
from ssdbench.plan.journal import Journal
from ssdbench.plan.plans import build_plan
from ssdbench.system import Host, SystemRunner, live_host
from tests.conftest import loop_device

MIB = 2**20


@pytest.fixture
def loops() -> Iterator[list[str]]:
    with loop_device(24, prefix="ssdbench-multi-") as (a, _), \
            loop_device(24, prefix="ssdbench-multi-") as (b, _):
        yield [a, b]


SETS = ["--set", "trim_torture_seconds=2", "--set", "probe_gib=0.00390625",
        "--set", "trim_idle_seconds=0", "--erase-fallback", "discard"]


def test_two_drives_at_once_each_pinned(loops: list[str], tmp_path: Path) -> None:
    names = [os.path.basename(d) for d in loops]
    results = tmp_path / "results"
    code = main(["run", *loops, "--destroy", names[1], "--destroy", names[0], "--plan", "trim",
                 "--quiet", "--results", str(results), *SETS])
    assert code == ExitCode.OK
    dirs = sorted(p for p in results.iterdir() if p.is_dir())
    assert len(dirs) == 2
    for name in names:
        (drive_dir,) = [d for d in dirs if d.name.endswith("_" + name)]
        record = json.loads((drive_dir / "trim" / "run.json").read_text())
        assert record["state"] == "done" and record["drive"]["name"] == name
        # the machine and the controller (#45): a loop device hangs off none
        assert set(record["host"]["machine"]) >= {"sys_vendor", "product_serial"}
        assert record["host"]["controller"]["bus"] == "none"
        log = (drive_dir / "log.txt").read_text()
        assert "taskset -c" in log  # pinned
        other = names[1 - names.index(name)]
        assert f"/dev/{other}" not in log  # each drive's log has only its own commands
    state = json.loads((results / "state.json").read_text())
    assert {k: v["state"] for k, v in state["drives"].items()} == dict.fromkeys(names, "done")


def test_wrong_consent_for_one_refuses_all(loops: list[str], tmp_path: Path) -> None:
    names = [os.path.basename(d) for d in loops]
    results = tmp_path / "results"
    code = main(["run", *loops, "--destroy", names[0], "--destroy", "loop999", "--plan", "trim",
                 "--quiet", "--results", str(results), *SETS])
    assert code == ExitCode.REFUSED
    assert not results.exists()


def test_a_drive_that_is_gone_fails_alone(loops: list[str], tmp_path: Path) -> None:
    from ssdbench.devices import discover, find_drive

    host = live_host()
    drive = find_drive(discover(host, include_all=True), loops[0])
    gone = dataclasses.replace(drive, path="/dev/ssdbench-gone0", name="ssdbench-gone0")
    plan = build_plan("trim", sets=["trim_torture_seconds=2", "probe_gib=0.00390625",
                                    "trim_idle_seconds=0", "erase_fallback=discard"])
    results = tmp_path / "results"
    results.mkdir()
    outcomes = engine.run_plans(
        lambda: Host(SystemRunner(), host.fs),
        [DriveJob(gone, gone.consent_id, plan), DriveJob(drive, drive.consent_id, plan)],
        results_root=results, journal=Journal.open(results))
    assert [o.drive for o in outcomes] == ["ssdbench-gone0", drive.name]
    assert outcomes[0].state == "failed" and "ssdbench-gone0" in (outcomes[0].runs[0].error or "")
    assert outcomes[1].state == "done"
