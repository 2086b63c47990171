"""Power loss mid-torture: `ssdbench run` killed (SIGKILL, with its fio) during the TRIM
run's torture, then `ssdbench run --resume`: the finished run is kept, the interrupted one
is set aside as "interrupted" and redone from its erase."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.exitcodes import ExitCode
from tests.conftest import REPO, loop_device

MIB = 2**20


@pytest.fixture
def loop() -> Iterator[str]:
    with loop_device(24, prefix="ssdbench-resume-") as (dev, _image):
        yield dev

def fio_pids_under(folder: Path) -> list[int]:
    """fio processes whose working directory is inside ``folder`` (started by this test)."""
    pids = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            comm = Path(f"/proc/{entry}/comm").read_text().strip()
            cwd = os.readlink(f"/proc/{entry}/cwd")
        except OSError:
            continue
        if comm.startswith("fio") and cwd.startswith(str(folder)):
            pids.append(int(entry))
    return pids


def power_loss(proc: subprocess.Popen[str], results: Path) -> None:
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(timeout=30)
    for pid in fio_pids_under(results):  # fio runs in its own session: it dies with the power
        os.kill(pid, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while fio_pids_under(results):
        assert time.monotonic() < deadline, "fio did not die"
        time.sleep(0.05)


def test_resume_keeps_finished_runs_and_redoes_the_interrupted_one(
        loop: str, tmp_path: Path) -> None:
    name = os.path.basename(loop)
    plan = tmp_path / "plan.toml"
    plan.write_text('name = "resume-test"\n[params]\nerase_fallback = "discard"\n'
                    "torture_seconds = 2\ntrim_torture_seconds = 6\nprobe_gib = 0.00390625\n"
                    "trim_idle_seconds = 0\n"
                    '[[runs]]\nkind = "consistency"\n[[runs]]\nkind = "trim"\n')
    results = tmp_path / "results"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdbench", "run", loop, "--destroy", name, "--plan", str(plan),
         "--results", str(results)],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
        start_new_session=True)
    assert proc.stderr is not None
    seen = []
    deadline = time.monotonic() + 180
    for line in proc.stderr:
        seen.append(line)
        if f"{name} trim torture running" in line and "IOPS" in line:
            break
        assert time.monotonic() < deadline, seen
    power_loss(proc, results)

    state = json.loads((results / "state.json").read_text())
    entry = state["drives"][name]
    assert entry["state"] == "running"
    assert entry["runs"]["consistency-default"]["state"] == "done"
    assert entry["runs"]["trim"]["state"] == "running"
    assert entry["runs"]["trim"]["stage"] == "torture"
    drive_dir = results / entry["drive_dir"]
    kept = json.loads((drive_dir / "consistency-default" / "run.json").read_text())
    # the stick's copy of drive.json may lag its state.json (they are copied apart; the
    # QEMU power-loss test once cut the power between the two): the finished run's entry
    # is missing, and the resume must put it back from its run.json
    drive_json = json.loads((drive_dir / "drive.json").read_text())
    drive_json["runs"] = [r for r in drive_json["runs"] if r["run"] != "consistency-default"]
    (drive_dir / "drive.json").write_text(json.dumps(drive_json))

    again = subprocess.run(
        [sys.executable, "-m", "ssdbench", "run", "--resume", "--results", str(results)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert again.returncode == ExitCode.OK, again.stderr
    assert "consistency-default: done (kept from before the restart)" in again.stderr
    assert json.loads((drive_dir / "consistency-default" / "run.json").read_text())[
        "started"] == kept["started"]
    redone = json.loads((drive_dir / "trim" / "run.json").read_text())
    assert redone["state"] == "done"
    assert redone["stages"][0]["name"] == "erase"
    aside = json.loads((drive_dir / "trim-interrupted-1" / "run.json").read_text())
    assert aside["state"] == "interrupted" and "torture" in aside["error"]
    assert [s["state"] for s in aside["stages"] if s["name"] == "torture"] == ["interrupted"]
    state = json.loads((results / "state.json").read_text())
    assert state["drives"][name]["state"] == "done"
    assert len(state["drives"][name]["resumes"]) == 1
    runs = json.loads((drive_dir / "drive.json").read_text())["runs"]
    assert [(r["run"], r["state"]) for r in runs] == [
        ("consistency-default", "done"), ("trim-interrupted-1", "interrupted"), ("trim", "done")]

    nothing = subprocess.run(
        [sys.executable, "-m", "ssdbench", "run", "--resume", "--results", str(results)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert nothing.returncode == ExitCode.USAGE and "nothing to resume" in nothing.stderr


def test_a_pts_round_loop_cut_by_power_loss_is_resumed_like_every_run(
        loop: str, tmp_path: Path) -> None:
    """The SNIA PTS latency plan (short: 1-s workloads, 4 KiB only) killed after its second
    round reached run.json, then `ssdbench run --resume`: the interrupted attempt is set
    aside with the rounds it measured, and the run is redone from its erase to a
    measurement window."""
    name = os.path.basename(loop)
    results = tmp_path / "results"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdbench", "run", loop, "--destroy", name, "--plan", "latency",
         "--erase-fallback", "discard", "--results", str(results), "--no-svg",
         "--set", "steady_round_s=1", "--set", "pts_max_rounds=5",
         "--set", "pts_wipc_passes=1", "--set", "pts_block_sizes=4k"],
        stderr=subprocess.DEVNULL, stdout=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
        start_new_session=True)
    deadline = time.monotonic() + 180
    while True:  # the plug goes once two rounds are on record
        rounds = 0
        for record in results.glob("*/latency/run.json"):
            try:
                rounds = len(json.loads(record.read_text())["pts"]["latency"]["rounds"])
            except (ValueError, KeyError):  # not there yet
                rounds = 0
        if rounds >= 2:
            break
        assert proc.poll() is None and time.monotonic() < deadline, rounds
        time.sleep(0.1)
    power_loss(proc, results)
    entry = json.loads((results / "state.json").read_text())["drives"][name]
    assert entry["runs"]["latency"]["state"] == "running"
    again = subprocess.run(
        [sys.executable, "-m", "ssdbench", "run", "--resume", "--results", str(results)],
        capture_output=True, text=True, cwd=REPO, env=env, timeout=300)
    assert again.returncode == ExitCode.OK, again.stderr
    drive_dir = results / entry["drive_dir"]
    aside = json.loads((drive_dir / "latency-interrupted-1" / "run.json").read_text())
    assert aside["state"] == "interrupted" and "latency" in aside["error"]
    assert len(aside["pts"]["latency"]["rounds"]) >= 2  # what it measured is kept
    redone = json.loads((drive_dir / "latency" / "run.json").read_text())
    assert redone["state"] == "done" and redone["stages"][0]["name"] == "erase"
    assert redone["pts"]["latency"]["steady"]["last_round"] == len(
        redone["pts"]["latency"]["rounds"])
    assert redone["analysis"]["pts"][0]["window"] is not None
