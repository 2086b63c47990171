"""Real fio on loop devices of real capacities (root): scaled IDEMA sizes, an odd sector
count (512e) and a 4Kn device whose span is not a multiple of 128 KiB. The fill and the read
scan cover every byte (a tail job moves the last partial block), the torture and the probes
stay inside the span, and run.json records the coverage (docs/engine.md "Odd spans")."""

from __future__ import annotations

import json
import os
from dataclasses import replace
from pathlib import Path

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from ssdbench.fio import jobs
from ssdbench.fio.logs import write_run_csvs
from ssdbench.fio.runner import run_fio
from ssdbench.stages.params import RunParams
from ssdbench.stages.probe import WINDOWS, fio_size, probe_layout
from ssdbench.system import SystemRunner
from tests.conftest import MIB, idema_scaled, loop_device

PATTERN = 0x5A  # the backing file starts as this byte: a sector fio never wrote keeps it
SHAPES = {
    # name: (bytes, logical sector size)
    "idema-240GB-scaled": (idema_scaled(468862128, 40), 512),  # tail 600 KiB mod 1 MiB
    "idema-500GB-scaled": (idema_scaled(976773168, 24), 512),  # tail 24 KiB
    "odd-sectors-512e": (24 * MIB + 7 * 512, 512),  # not even a 4 KiB multiple
    "4kn": (20 * MIB + 3 * 4096, 4096),  # 4Kn, a multiple of 4 KiB but not of 128 KiB
}


def unwritten_sectors(image: Path, sector: int) -> list[int]:
    """Sectors still holding nothing but the initial pattern."""
    data = image.read_bytes()
    blank = bytes([PATTERN]) * sector
    out, at = [], data.find(blank)
    while at >= 0:
        if at % sector == 0:
            out.append(at // sector)
        at = data.find(blank, at + 1)
    return out


@pytest.mark.parametrize("shape", list(SHAPES))
def test_every_stage_on_a_real_capacity(shape: str, tmp_path: Path) -> None:
    size, sector = SHAPES[shape]
    runner = SystemRunner()
    with loop_device(size_bytes=size, sector_size=sector, fill=PATTERN,
                     prefix="ssdbench-odd-") as (dev, image):
        logical = Path(f"/sys/class/block/{os.path.basename(dev)}/queue/logical_block_size")
        assert int(logical.read_text()) == sector
        target = jobs.JobTarget(dev, size)

        fill = run_fio(runner, tmp_path, jobs.fill_job(target))
        assert fill.state == "done", fill.reason
        assert fill.report is not None and fill.report.total("write")[0] == size
        names = [j.name for j in fill.report.jobs]
        assert names == (["fill", "fill-tail"] if size % (128 * 1024) else ["fill"])
        assert unwritten_sectors(image, sector) == []  # the last partial block included

        scan = run_fio(runner, tmp_path, jobs.readscan_job(target))
        assert scan.state == "done", scan.reason
        assert scan.report is not None and scan.report.total("read")[0] == size
        assert [j.name for j in scan.report.jobs] == ["readscan", "readscan-tail"]

        # random 4 KiB writes on a span that need not be a 4 KiB multiple: an I/O past the
        # end would fail the job (the block device ends there)
        torture = run_fio(runner, tmp_path, jobs.torture_job(target, seconds=2))
        assert torture.state == "done", torture.reason

        layout = probe_layout(size, RunParams(probe_gib=1.0))
        assert 3 * layout.probe_bytes <= size and layout.probe_bytes % sector == 0
        for phase in WINDOWS:
            probe = run_fio(runner, tmp_path, jobs.probe_job(
                replace(target, iodepth=layout.iodepth), phase=phase,
                probe_bytes=layout.probe_bytes, block_size=fio_size(layout.block_bytes),
                offset=layout.offset(phase)))
            assert probe.state == "done", probe.reason
            assert probe.report is not None
            assert probe.report.total("write")[0] == layout.probe_bytes
    write_run_csvs(tmp_path)
    for name in ("fill.csv", "readscan.csv", "iops.csv", "probes.csv"):
        assert (tmp_path / name).stat().st_size > 0


def test_consistency_run_on_an_odd_capacity_records_its_coverage(tmp_path: Path) -> None:
    """The issue's command on 256 MiB + 8 KiB, the torture shortened."""
    size = 256 * MIB + 8 * 1024
    results = tmp_path / "results"
    with loop_device(size_bytes=size, prefix="ssdbench-odd-") as (dev, _image):
        name = os.path.basename(dev)
        code = main(["run", dev, "--run", "consistency", "--erase-fallback", "discard",
                     "--destroy", name, "--quiet", "--no-svg", "--results", str(results),
                     "--set", "torture_seconds=3"])
    [drive_dir] = [p for p in results.iterdir() if p.is_dir()]
    record = json.loads((drive_dir / "consistency-default" / "run.json").read_text())
    assert code == ExitCode.OK, record.get("error")
    assert record["coverage"]["fill"] == {
        "span_bytes": size, "expected_bytes": size, "moved_bytes": size, "covered": True,
        "jobs": {"fill": 256 * MIB, "fill-tail": 8192}}
    # the per-second series against fio's own totals (docs/engine.md "Reconciliation")
    run_dir = drive_dir / "consistency-default"
    torture = json.loads((run_dir / "fio" / "torture.json").read_text())
    checks = record["reconciliation"]
    assert checks["torture"]["fio_total"] == torture["jobs"][0]["write"]["total_ios"]
    assert checks["fill"]["fio_total"] == size and checks["fill"]["within_tolerance"]
    iops = [line.split(",")[1] for line in (run_dir / "iops.csv").read_text().splitlines()[1:]]
    assert checks["torture"]["series_total"] == pytest.approx(
        sum(float(v) for v in iops if v), abs=1.0)
    assert checks["torture"]["missing_seconds"] == sum(1 for v in iops if not v)
    warned = [w for w in record.get("warnings", []) if w.get("kind") == "reconciliation"]
    assert bool(warned) == (not checks["torture"]["within_tolerance"])
    # the IOPS series comes from the block layer's trace: every second, the last one too,
    # adding up to fio's own count (two independent counts) within the tolerance
    assert checks["torture"]["source"] == "block-layer", checks["torture"]
    assert len(iops) == 3 and all(iops), iops
    assert checks["torture"]["within_tolerance"], checks["torture"]
    trace = record["block_trace"]["torture"]
    assert trace["error"] is None and trace["samples"] > 20, trace
    assert trace["stat_path"] == f"/sys/class/block/{name}/stat"
