"""The SNIA PTS write saturation plan with real fio on loop devices (root) of real shapes: an
odd 512e sector count and a 4Kn device. fio writes exactly the goal (whole blocks of the
span, times the multiple) with random offsets inside the span, and the report has the WSAT
table, chart and CSVs (docs/pts.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import MIB, loop_device

pytestmark = [pytest.mark.root]

PATTERN = 0x5A


@pytest.mark.parametrize("size, sector", [
    (24 * MIB + 7 * 512, 512),  # an odd sector count: not even a multiple of 4 KiB
    (20 * MIB + 3 * 4096, 4096),  # 4Kn
])
def test_wsat_writes_its_goal_and_the_report_shows_it(tmp_path: Path, size: int,
                                                      sector: int) -> None:
    with loop_device(size_bytes=size, sector_size=sector, fill=PATTERN,
                     prefix="ssdbench-pts-") as (dev, image):
        code = main(["run", dev, "--destroy", Path(dev).name, "--plan", "wsat",
                     "--erase-fallback", "discard", "--quiet", "--no-svg", "--no-pin",
                     "--results", str(tmp_path / "results"),
                     "--set", "wsat_capacity_multiple=30", "--set", "steady_round_s=1"])
        assert code == ExitCode.OK
        tail = image.read_bytes()[size // 4096 * 4096:]
    (run_dir,) = (tmp_path / "results").glob("*/wsat")
    record = json.loads((run_dir / "run.json").read_text())
    goal = 30 * size // 4096 * 4096
    assert record["goal"]["wsat"]["goal_bytes"] == goal
    assert record["goal"]["wsat"]["moved_bytes"] == goal and record["goal"]["wsat"]["reached"]
    assert [s["name"] for s in record["stages"]] == ["erase", "partition", "wsat"]
    # random 4 KiB writes stay inside the span: a partial last 4 KiB is never written (the
    # erase's discard left it zeros; fio writes random bytes)
    assert tail == bytes(len(tail))
    w = record["analysis"]["wsat"]
    assert w["ended_by"] == "capacity" and w["written_gb"] == goal / 1e9
    assert w["capacity_written"] == pytest.approx(goal / size)
    with (run_dir / "wsat.csv").open(newline="") as f:
        rows = list(csv.DictReader(f))
    assert len(rows) == w["seconds"] and rows
    assert float(rows[-1]["written_gb"]) == pytest.approx(
        goal / 1e9, rel=0.02)
    assert (run_dir / "wsat-tgbw.png").is_file() and (run_dir / "wsat-rounds.csv").is_file()
    page = (run_dir.parent / "report.html").read_text()
    assert "Write saturation (SNIA PTS WSAT)" in page and "the goal: 30 × the capacity" in page
