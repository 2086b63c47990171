"""Pulled stick: the system runs from RAM, so the results stick (SSDRESULTS on the boot
stick) is unplugged mid-run (QMP device_del of the usb-storage device) and plugged back
(device_add of the same image). The measurement goes on; results made meanwhile are held in
RAM and reach the stick when it is back; every file on it parses."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from tests.e2e.rig import KIOSK_APPEND
from tests.e2e.scenarios import (
    BOOT_S,
    Guest,
    kiosk_config,
    make_drive,
    prepare_stick,
    stick_files,
    unparsable,
)

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow]

SERIAL = "E2ESTICKPULL1"
STAGE_S = 300.0


def test_stick_pulled_mid_run_and_plugged_back(dev_image: Path, tmp_path: Path) -> None:
    drive, _ = make_drive(tmp_path / "nvme.img", SERIAL)
    config = kiosk_config(tmp_path / "ssdbench.toml", SERIAL, torture_s=10, extra="svg = false")
    stick = prepare_stick(tmp_path, entry="kiosk", append=KIOSK_APPEND, kiosk_config=config,
                          direct=True)
    t0 = time.monotonic()
    # the kernel started directly (firmware and GRUB: test_boot.py)
    with Guest(tmp_path / "qemu", stick, (drive,), direct=True) as g:
        g.wait_for("ssdbench ready", BOOT_S)
        m = g.wait_for(r"^ssdbench: (nvme\d+n1) trim torture started", STAGE_S)
        name = m.group(1)
        m = g.wait_for(r"^ssdbench: results copied to the stick", 120, start=m.end())
        g.unplug_stick()
        pulled = len(g.text)
        gone = g.wait_for(r"^ssdbench: stick gone \((removed|writing failed)", STAGE_S,
                          start=pulled)
        # a stage finishes while the stick is out: its results are only in RAM
        g.wait_for(rf"^ssdbench: {name} trim probe-after_torture done", STAGE_S,
                   start=gone.end())
        g.plug_stick()
        back = g.wait_for(r"^ssdbench: stick back: results on stick /dev/sd\w+2", STAGE_S,
                          start=gone.end())
        g.wait_for(r"^ssdbench: all results copied: results on stick", STAGE_S, start=back.end())
        rc = g.wait_exit(120)
        serial = g.text
    print(f"stick pull boot: {time.monotonic() - t0:.0f} s")
    assert rc == 0, serial[-3000:]
    assert "ssdbench: poweroff" in serial, serial[-3000:]  # on_finish: the kiosk's own
    assert f"ssdbench: {name} ({SERIAL}): done: trim done" in serial, serial[-3000:]
    files = stick_files(stick, tmp_path / "stick")
    assert unparsable(files) == []
    assert not list(files.rglob(".*.tmp-*"))
    results = files / "ssdbench"
    entry = json.loads((results / "state.json").read_text())["drives"][SERIAL]
    assert entry["state"] == "done", entry
    run_dir = results / entry["drive_dir"] / "trim"
    record = json.loads((run_dir / "run.json").read_text())
    assert record["state"] == "done"
    assert {s["name"]: s["state"] for s in record["stages"]} == {
        "erase": "done", "probe-clean": "done", "fill": "done", "torture": "done", "settle": "done",
        "probe-after_torture": "done", "trim": "done", "probe-after_trim": "done"}
    # written while the stick was out, copied when it came back
    assert list(run_dir.glob("*.png")) and (run_dir.parent / "report.html").is_file()
    assert (results / "index.html").is_file() and (results / "summary.csv").is_file()
