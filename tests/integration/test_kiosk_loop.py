"""`ssdbench kiosk` on two loop devices with a config file: only the drive `destroy` names
is written; a bad config exits 2 and writes nothing (checksums before/after)."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.exitcodes import ExitCode
from tests.conftest import REPO, loop_device
from tests.schema_check import check_tree

MIB = 2**20


@pytest.fixture
def loops() -> Iterator[list[str]]:
    """Two 24 MiB loop devices on /dev/shm filled with a pattern (so writes show)."""
    with loop_device(24, fill=0x5A, prefix="ssdbench-kiosk-") as (a, _), \
            loop_device(24, fill=0x5B, prefix="ssdbench-kiosk-") as (b, _):
        yield [a, b]


def digest(dev: str) -> str:
    h = hashlib.sha256()
    with open(dev, "rb") as f:
        while chunk := f.read(4 * MIB):
            h.update(chunk)
    return h.hexdigest()


def kiosk(config: Path, results: Path, *extra: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "ssdbench", "kiosk", "--config", str(config), "--results",
         str(results), "--include-all", "--no-power", *extra],
        capture_output=True, text=True, cwd=REPO, timeout=600,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))


def write_config(path: Path, names: list[str], destroy: list[str], extra: str = "") -> Path:
    path.write_text(
        'plan = "trim"\n'
        f"select = {json.dumps(['serial:' + n for n in names])}\n"
        f"destroy = {json.dumps(destroy)}\n"
        'on_finish = "poweroff"\n'  # --no-power: the test machine stays up
        f"{extra}"
        "[params]\n"
        'erase_fallback = "discard"\n'
        "trim_torture_seconds = 2\n"
        "probe_gib = 0.00390625\n"  # 4 MiB
        "trim_idle_seconds = 0\n"
    )
    return path


def test_kiosk_runs_only_the_drive_destroy_names(loops: list[str], tmp_path: Path) -> None:
    names = [os.path.basename(d) for d in loops]
    before_other = digest(loops[1])
    config = write_config(tmp_path / "ssdbench.toml", names, [names[0]], "svg = false\n")
    results = tmp_path / "results"

    dry = kiosk(config, results, "--dry-run")
    assert dry.returncode == ExitCode.OK, dry.stderr
    assert f"would run trim on {loops[0]}" in dry.stdout
    assert loops[1] not in dry.stdout.split("skipped")[0] or "skipped" in dry.stdout
    assert not results.exists() or not any(results.iterdir())

    done = kiosk(config, results)
    assert done.returncode == ExitCode.OK, done.stdout + done.stderr
    out = done.stdout
    assert f"{names[1]} (? {names[1]}) skipped: not named in `destroy`" in out
    for stage in ("erase", "probe-clean", "fill", "torture", "trim", "probe-after_trim"):
        assert f"ssdbench: {names[0]} trim {stage} done" in out, out
    assert f"ssdbench: {names[0]} trim probe-clean done " in out and " MiB/s" in out
    assert f"ssdbench: {names[0]} ({names[0]}): done: trim done" in out
    assert digest(loops[1]) == before_other  # never touched
    drive_dirs = [p for p in results.iterdir() if p.is_dir()]
    assert len(drive_dirs) == 1 and drive_dirs[0].name.endswith(names[0])
    record = json.loads((drive_dirs[0] / "trim" / "run.json").read_text())
    assert record["state"] == "done" and record["params"]["trim_torture_seconds"] == 2
    state = json.loads((results / "state.json").read_text())
    assert state["drives"][names[0]]["state"] == "done"
    # svg = false: the charts as PNG only
    assert list(results.rglob("*.png")) and not list(results.rglob("*.svg"))
    # every JSON and CSV file against its schema (ssdbench/schemas)
    check_tree(results, expect={"run.json.schema.json": 1, "drive.json.schema.json": 1,
                                "summary.csv.schema.json": 1, "iops.csv.schema.json": 1})

    again = kiosk(config, results)  # a reboot after the end: the journal says done
    assert again.returncode == ExitCode.OK
    assert "already finished (done)" in again.stdout
    assert len([p for p in results.iterdir() if p.is_dir()]) == 1


def test_a_config_that_selects_no_drive_says_so_and_writes_nothing(loops: list[str],
                                                                   tmp_path: Path) -> None:
    """A stick whose config names no drive of this bench: the kiosk says which entry matched
    nothing and that there is no drive to test, exits 3 (docs/kiosk.md), writes no drive."""
    before = [digest(d) for d in loops]
    config = tmp_path / "ssdbench.toml"
    config.write_text('plan = "quick"\nselect = ["serial:NO-SUCH-DRIVE"]\n'
                      'destroy = ["NO-SUCH-DRIVE"]\non_finish = "stay"\n')
    results = tmp_path / "results"
    done = kiosk(config, results)
    assert done.returncode == ExitCode.NO_SUCH_DRIVE, done.stdout + done.stderr
    assert "`select` entry serial:NO-SUCH-DRIVE matched no drive" in done.stdout, done.stdout
    assert "ssdbench: no drive to test" in done.stdout, done.stdout
    assert [digest(d) for d in loops] == before
    assert not [p for p in results.rglob("*") if p.is_dir() and p.name.endswith("DRIVE")]


@pytest.mark.parametrize(("text", "key"), [
    ("destroy = 3\n", "`destroy`"),
    ('[params]\ntorture_seconds = "soon"\n', "torture_seconds"),
    ("colour = 1\n", "`colour`"),
])
def test_bad_config_exits_2_and_writes_nothing(loops: list[str], tmp_path: Path, text: str,
                                               key: str) -> None:
    names = [os.path.basename(d) for d in loops]
    before = [digest(d) for d in loops]
    config = tmp_path / "ssdbench.toml"
    config.write_text('plan = "trim"\n'
                      f"select = {json.dumps(['serial:' + n for n in names])}\n"
                      + ("" if text.startswith("destroy") else "destroy = \"all-eligible\"\n")
                      + text)
    results = tmp_path / "results"
    bad = kiosk(config, results)
    assert bad.returncode == ExitCode.USAGE, bad.stdout + bad.stderr
    assert key in bad.stderr and "nothing was erased or written" in bad.stderr
    assert [digest(d) for d in loops] == before
    assert not results.exists()


def erase_config(path: Path, name: str) -> Path:
    path.write_text('plan = "erase"\n'
                    f'select = ["serial:{name}"]\n'
                    f'destroy = ["{name}"]\n'
                    'on_finish = "stay"\n'
                    "svg = false\n"
                    "[params]\n"
                    'erase_fallback = "discard"\n')
    return path


def test_another_serial_less_drive_at_the_kernel_name_of_a_finished_one_is_erased(
        tmp_path: Path) -> None:
    """A drive without a serial replaces another at the same kernel name (here: another
    backing file at the same loop device): the journal knew drives by serial, else kernel
    name, and skipped it as finished. Its identity differs: it is erased, and the console
    says why the journal's entry is not its."""
    with loop_device(16, fill=0x5C, prefix="ssdbench-kiosk-") as (dev, _first):
        name = os.path.basename(dev)
        config = erase_config(tmp_path / "ssdbench.toml", name)
        results = tmp_path / "results"
        first = kiosk(config, results)
        assert "Clear not achieved" in first.stdout, first.stdout + first.stderr
        assert len(list(results.rglob("erase-record.json"))) == 1
        second = tmp_path / "second.img"
        second.write_bytes(bytes([0x5D]) * 16 * MIB)
        subprocess.run(["losetup", "-d", dev], check=True)
        subprocess.run(["losetup", dev, str(second)], check=True)  # the swap
        try:
            again = kiosk(config, results)
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
            subprocess.run(["losetup", dev, str(_first)], check=False)  # for the fixture
        out = again.stdout
        assert "already finished" not in out, out
        assert f"ssdbench: {name} ({name}): the journal's entry {name} (plan erase, failed) " \
               "is not this drive's: it was another drive: backing " in out, out
        assert f"ssdbench: {name} erase erase " in out, out  # erased this time
        records = sorted(results.rglob("erase-record.json"))
        assert len(records) == 2, records  # each drive its own folder and record
        state = json.loads((results / "state.json").read_text())
        backings = sorted(e["identity"]["backing"] for e in state["drives"].values())
        assert backings == sorted([str(_first), str(second)]), state


def test_two_drives_sharing_a_serial_get_two_folders_journal_entries_and_records(
        loops: list[str], tmp_path: Path) -> None:
    """Two drives that report one serial and model, started together: each has its own
    drive folder, journal entry (by identity) and erase record naming the other."""
    from dataclasses import replace

    from ssdbench.devices import discover
    from ssdbench.kiosk.station import mark_shared_serials
    from ssdbench.plan import engine
    from ssdbench.plan.journal import Journal
    from ssdbench.plan.plans import build_plan
    from ssdbench.system import live_host

    names = [os.path.basename(d) for d in loops]
    host = live_host()
    found = {d.name: d for d in discover(host, include_all=True, only=names)}
    twins = mark_shared_serials([replace(found[n], serial="DUP0001", model="FAKE SSD")
                                 for n in names])
    assert [d.serial_shared_with for d in twins] == [(names[1],), (names[0],)]
    plan = build_plan("erase").with_params({"erase_fallback": "discard"}, source="test")
    results = tmp_path / "results"
    journal = Journal(results / "state.json")
    outcomes = engine.run_plans(live_host, [
        engine.DriveJob(d, "DUP0001", plan) for d in twins], results_root=results,
        journal=journal, svg=False)
    dirs = {o.drive_dir for o in outcomes}
    assert len(dirs) == 2 and None not in dirs, outcomes
    state = json.loads((results / "state.json").read_text())
    assert sorted(state["drives"]) == ["DUP0001", "DUP0001~2"]
    assert {e["drive"] for e in state["drives"].values()} == set(names)
    for d in twins:
        assert journal.find(d.identity.to_json()) is not None
    records = [json.loads(p.read_text()) for p in sorted(results.rglob("erase-record.json"))]
    assert len(records) == 2
    shared = sorted(tuple(r["drive"]["serial_shared_with"]) for r in records)
    assert shared == sorted([(names[0],), (names[1],)]), records
    check_tree(results, expect={"erase-record.json.schema.json": 2})  # ssdbench/schemas
