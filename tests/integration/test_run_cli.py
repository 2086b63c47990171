"""`ssdbench run` end to end on a loop device on tmpfs (root): refusals, a TRIM run, Ctrl-C."""

from __future__ import annotations

import csv
import json
import os
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import REPO, loop_device

MIB = 2**20


@pytest.fixture
def loop() -> Iterator[str]:
    """A 32 MiB loop device backed by a zero-filled file on /dev/shm."""
    with loop_device(32, prefix="ssdbench-run-") as (dev, _image):
        yield dev


def only_drive_dir(results: Path) -> Path:
    dirs = [p for p in results.iterdir() if p.is_dir()]
    assert len(dirs) == 1, dirs
    return dirs[0]


def test_missing_or_wrong_destroy_is_refused_and_nothing_written(
    loop: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    results = tmp_path / "results"
    assert main(["run", loop, "--results", str(results)]) == ExitCode.REFUSED
    assert "--destroy" in capsys.readouterr().err
    assert main(["run", loop, "--destroy", "loop999", "--results", str(results)]) == (
        ExitCode.REFUSED)
    assert not results.exists()


def test_unknown_drive_and_bad_parameter(loop: str, tmp_path: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    name = os.path.basename(loop)
    assert main(["run", loop, "--destroy", name, "--set", "torture_seconds=soon",
                 "--results", str(tmp_path)]) == ExitCode.USAGE
    assert "'torture_seconds'" in capsys.readouterr().err
    assert main(["run", "/dev/nonexistent9", "--destroy", "x"]) == ExitCode.NO_SUCH_DRIVE


def test_trim_run_probes_three_phases(loop: str, tmp_path: Path) -> None:
    name = os.path.basename(loop)
    results = tmp_path / "results"
    code = main(["run", loop, "--destroy", name, "--run", "trim", "--erase-fallback",
                 "discard", "--quiet", "--results", str(results),
                 "--set", "trim_torture_seconds=2", "--set", "probe_gib=0.0078125",
                 "--set", "trim_idle_seconds=0"])
    assert code == ExitCode.OK
    run_dir = only_drive_dir(results) / "trim"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done"
    assert [s["name"] for s in record["stages"]] == [
        "erase", "probe-clean", "fill", "torture", "settle", "probe-after_torture", "trim",
        "probe-after_trim"]
    assert all(s["state"] == "done" for s in record["stages"])
    assert record["erase"]["method"] == "discard" and record["erase"]["secure"] is False
    assert record["trim"]["discard_sectors"] == 32 * MIB // 512
    assert record["tools"]["fio"].startswith("fio-") and record["tools"]["kernel"]
    with open(run_dir / "probes.csv", newline="") as f:
        probes = list(csv.DictReader(f))
    assert [p["phase"] for p in probes] == ["clean", "after_torture", "after_trim"]
    assert all(int(p["bytes"]) == 8 * MIB and float(p["mib_s"]) > 0 for p in probes)
    for phase in ("clean", "after_torture", "after_trim"):
        assert (run_dir / f"probe-{phase}.csv").read_text().startswith("time_s,mib_s\n")
        assert (run_dir / "jobs" / f"probe-{phase}.fio").exists()
    assert len((run_dir / "iops.csv").read_text().splitlines()) == 1 + 2
    log = (only_drive_dir(results) / "log.txt").read_text()
    assert "blkdiscard" in log and "jobs/torture.fio" in log


def test_ctrl_c_stops_fio_cleanly_and_marks_the_run_cancelled(loop: str, tmp_path: Path) -> None:
    name = os.path.basename(loop)
    results = tmp_path / "results"
    env = dict(os.environ, PYTHONUNBUFFERED="1")
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdbench", "run", loop, "--destroy", name,
         "--erase-fallback", "discard", "--results", str(results),
         "--set", "torture_seconds=120"],
        stderr=subprocess.PIPE, stdout=subprocess.DEVNULL, text=True, cwd=REPO, env=env,
    )
    assert proc.stderr is not None
    deadline = time.monotonic() + 120
    seen = []
    for line in proc.stderr:
        seen.append(line)
        if "torture running" in line and "IOPS" in line:
            break
        assert time.monotonic() < deadline, seen
    proc.send_signal(signal.SIGINT)
    rest = proc.stderr.read()
    assert proc.wait(timeout=120) == ExitCode.INTERRUPTED, [*seen, rest]
    run_dir = only_drive_dir(results) / "consistency-default"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "cancelled"
    assert [s["state"] for s in record["stages"]] == ["done", "done", "done", "cancelled"]
    assert record["partition"]["wiped"] is True  # 0% OP: a leftover table is wiped
    assert (run_dir / "fio" / "torture_iops.1.log").stat().st_size > 0
    assert len((run_dir / "iops.csv").read_text().splitlines()) >= 2


def test_diagnose_reads_everything_and_writes_nothing(loop: str, tmp_path: Path) -> None:
    """The diagnose plan: full-span read scan and random reads with real fio, started with
    --readonly, no consent needed, and the drive's bytes unchanged."""
    with open(loop, "wb") as dev:  # recognisable content to read back
        dev.write(os.urandom(32 * MIB))
    before = subprocess.run(["sha256sum", loop], check=True, capture_output=True,
                            text=True).stdout.split()[0]
    results = tmp_path / "results"
    code = main(["run", loop, "--plan", "diagnose", "--quiet", "--results", str(results),
                 "--set", "random_read_seconds=2"])
    assert code == ExitCode.OK
    run_dir = only_drive_dir(results) / "diagnose"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done", record.get("error")
    assert record["erase"] is None
    readscan = (run_dir / "readscan.csv").read_text().splitlines()
    assert readscan[0] == "time_s,offset_gib,mib_s" and len(readscan) >= 2
    assert len((run_dir / "randread.csv").read_text().splitlines()) == 1 + 2
    log = (only_drive_dir(results) / "log.txt").read_text()
    assert "--readonly jobs/readscan.fio" in log and "--readonly jobs/randread.fio" in log
    after = subprocess.run(["sha256sum", loop], check=True, capture_output=True,
                           text=True).stdout.split()[0]
    assert after == before


def test_run_json_records_environment_and_why_counters_are_missing(tmp_path: Path) -> None:
    """A loop device has no SMART: run.json says so (issue #20 item 5) and the run is not
    held up or failed by it; the host's I/O scheduler and write cache are recorded."""
    with loop_device(32, prefix="ssdbench-env-") as (loop, _image):
        name = os.path.basename(loop)
        results = tmp_path / "results"
        code = main(["run", loop, "--destroy", name, "--run", "consistency",
                     "--erase-fallback", "discard", "--quiet", "--results", str(results),
                     "--set", "torture_seconds=2"])
        assert code == ExitCode.OK
        record = json.loads((only_drive_dir(results) / "consistency-default" /
                             "run.json").read_text())
    assert record["state"] == "done"
    health = record["health"]
    assert health["before"] is None and health["after"] is None
    assert "smartctl" in health["unavailable"]
    env = record["environment"]
    assert env["io_scheduler"] and env["write_cache"] in ("write back", "write through")
    assert env["fio_version"] == record["tools"]["fio"]
    assert not list((only_drive_dir(results) / "consistency-default").glob("sensors-*.csv"))
