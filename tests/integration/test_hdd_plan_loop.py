"""The hard disk's plan on a loop device (#44; root): `ssdbench run --plan hdd` reads every
block once, timed (the surface scan), then grades and erases (here by overwrite: a loop
device has no firmware erase) and writes the signed record; `ssdbench report` draws the
surface chart and says the verdict first. The scan itself reads only: the backing file is
unchanged when the plan's erase is left out. Slow and unreadable sectors: tests/unit/
test_surface.py (a reader that fails), tests/integration/test_usb_and_disk_qemu.py (a QEMU
disk)."""

from __future__ import annotations

import csv
import hashlib
import json
import os
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import MIB, idema_scaled, loop_device
from tests.schema_check import check_tree

pytestmark = [pytest.mark.root]

SIZE = idema_scaled(7814037168, 48)  # a 4 TB disk's IDEMA count, its odd tail kept


def test_the_hdd_plan_scans_every_block_then_clears_the_disk(tmp_path: Path) -> None:
    with loop_device(size_bytes=SIZE, fill=0xA5, prefix="ssdbench-hdd-") as (dev, backing):
        results = tmp_path / "results"
        code = main(["run", dev, "--plan", "hdd", "--destroy", os.path.basename(dev),
                     "--quiet", "--no-svg", "--results", str(results),
                     "--set", "surface_regions=24", "--set", "record_pdf=false",
                     "--set", "overwrite_verify_percent=5"])
        assert code == ExitCode.OK
        data = backing.read_bytes()
    [surface_dir] = results.glob("*/surface")
    meta = json.loads((surface_dir / "run.json").read_text())
    assert meta["state"] == "done", meta.get("error")
    sf = meta["surface"]
    assert sf["verdict"] == "clean" and sf["unreadable_blocks"] == 0
    assert sf["blocks"] == -(-SIZE // (128 * 1024)) and sf["span_bytes"] == SIZE
    rows = list(csv.DictReader((surface_dir / "surface.csv").open()))
    assert len(rows) == 24 and int(rows[-1]["end_byte"]) == SIZE
    assert sum(int(r["end_byte"]) - int(r["start_byte"]) for r in rows) == SIZE
    [record_path] = results.rglob("erase-record.json")
    record = json.loads(record_path.read_text())
    assert record["result"]["status"] == "PASS"
    assert record["sanitization"]["category"] == "Clear"
    assert data.count(0xA5) < len(data) // 100  # the overwrite reached the whole disk
    assert main(["report", str(results)]) == ExitCode.OK
    [drive_dir] = results.glob("*_*")
    html = (drive_dir / "report.html").read_text()
    assert "Surface scan" in html and "surface: clean" in html
    assert (surface_dir / "surface.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    checked = check_tree(results)  # run.json's surface and surface.csv, to the contract
    assert checked.get("surface.csv.schema.json") == 1, checked


def test_the_surface_scan_alone_writes_nothing(tmp_path: Path) -> None:
    with loop_device(size_bytes=SIZE, fill=0x5A, prefix="ssdbench-hdd-") as (dev, backing):
        before = hashlib.sha256(backing.read_bytes()).hexdigest()
        plan = tmp_path / "scan.toml"
        plan.write_text('name = "scan"\n[[runs]]\nkind = "surface"\n')
        code = main(["run", dev, "--plan", str(plan), "--quiet", "--no-svg",
                     "--results", str(tmp_path / "results")])
        assert code == ExitCode.OK
        assert hashlib.sha256(backing.read_bytes()).hexdigest() == before
    assert MIB  # the size helpers are the suite's
