"""Station mode on the host (root): `ssdbench kiosk` with `[station]` waits, a loop device
"plugged in" while it waits is found, erased, recorded and announced, and the session ends
by itself after `idle_minutes`.

The drive is plugged in by attaching a loop device under a name that does not exist yet
(`losetup /dev/loopN FILE`, N from 200 up: `losetup -f` hands out the lowest free numbers,
so no other test gets it), so its kernel name is known before the kiosk starts and
`select`/`destroy` can name it exactly: no other loop device on the machine is chosen.
A loop device has no secure erase: with the discard fallback its record is FAIL "Clear not
achieved", which is what the station must announce (the QEMU e2e has a real PASS)."""

from __future__ import annotations

import csv
import json
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.exitcodes import ExitCode
from tests.conftest import REPO, remove_loop_node, require_root, unplugged_loop_numbers

MIB = 2**20


@pytest.fixture
def unplugged() -> Iterator[tuple[str, Path]]:
    """A loop device name not in /sys/block yet and a 16 MiB file to attach there."""
    require_root()
    [number] = unplugged_loop_numbers(1)
    dev = f"/dev/loop{number}"
    folder = Path(tempfile.mkdtemp(prefix="ssdbench-station-", dir="/dev/shm"))
    image = folder / "disk.img"
    image.write_bytes(bytes([0xA7]) * 16 * MIB)
    try:
        yield dev, image
    finally:
        subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
        remove_loop_node(number)
        shutil.rmtree(folder, ignore_errors=True)


def test_a_drive_plugged_in_while_the_station_waits_is_erased_and_recorded(
        unplugged: tuple[str, Path], tmp_path: Path) -> None:
    dev, image = unplugged
    name = os.path.basename(dev)
    config = tmp_path / "ssdbench.toml"
    config.write_text(
        'plan = "erase"\n'
        f'select = ["serial:{name}"]\n'
        f'destroy = ["{name}"]\n'
        "svg = false\n"
        "[params]\n"
        'erase_fallback = "discard"\n'
        'operator = "Station Tester"\n'
        "[station]\n"
        "idle_minutes = 0.05\n")  # 3 s
    results = tmp_path / "results"
    proc = subprocess.Popen(
        [sys.executable, "-m", "ssdbench", "kiosk", "--config", str(config), "--results",
         str(results), "--include-all", "--no-power"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        env=dict(os.environ, PYTHONUNBUFFERED="1"))
    assert proc.stdout is not None
    seen = []
    for line in proc.stdout:  # until the station waits (or the kiosk ended: then it failed)
        seen.append(line)
        if "ssdbench: station: waiting for drives" in line:
            break
    assert f"{name} " not in "".join(seen)  # not there at the start
    subprocess.run(["losetup", dev, str(image)], check=True)  # plugged in
    rest, err = proc.communicate(timeout=300)
    out = "".join(seen) + rest
    assert proc.returncode == ExitCode.FAILURE, out + err  # the record is FAIL (a discard)

    assert f"ssdbench: station: {name} (? {name}) found: erasing" in out, out
    assert f"ssdbench: station: {name} ({name}) FAIL: " in out, out
    assert "Clear not achieved" in out
    assert "ssdbench: station: idle for 0.05 min: the session ends" in out
    records = list(results.rglob("erase-record.json"))
    assert len(records) == 1, sorted(results.rglob("*"))
    record = json.loads(records[0].read_text())
    assert record["result"]["status"] == "FAIL"
    assert record["drive"]["capacity_bytes"] == 16 * MIB
    assert record["people"]["operator"] == "Station Tester"
    kiosk_txt = (results / "kiosk.txt").read_text()
    assert f"station: {name} (? {name}) FAIL: " in kiosk_txt, kiosk_txt
    sessions = list(results.glob("erase-session-*.csv"))
    assert len(sessions) == 1
    with sessions[0].open(newline="") as fh:
        assert [(r["interface"], r["result"]) for r in csv.DictReader(fh)] == [("loop", "FAIL")]
    state = json.loads((results / "state.json").read_text())
    assert state["drives"][name]["state"] == "failed"
