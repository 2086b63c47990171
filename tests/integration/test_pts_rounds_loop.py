"""The SNIA PTS round loops (IOPS, latency, throughput) with real fio on loop devices (root)
of real shapes, in short variants (1-s rounds, five rounds at most, fewer block sizes): the
purge, the WIPC, each round's fio job and JSON, run.json's rounds and measurement window,
the report's tables, charts and CSVs (docs/pts.md)."""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.cli import main
from ssdbench.exitcodes import ExitCode
from tests.conftest import MIB, loop_device

pytestmark = [pytest.mark.root]


def _run(tmp_path: Path, plan: str, *sets: str, size: int, sector: int = 512
         ) -> tuple[Path, dict[str, Any]]:
    with loop_device(size_bytes=size, sector_size=sector, prefix="ssdbench-ptsr-") as (dev, _):
        args = ["run", dev, "--destroy", Path(dev).name, "--plan", plan,
                "--erase-fallback", "discard", "--quiet", "--no-svg", "--no-pin",
                "--results", str(tmp_path / "results"), "--set", "steady_round_s=1",
                "--set", "pts_max_rounds=5", "--set", "pts_wipc_passes=1"]
        for s in sets:
            args += ["--set", s]
        assert main(args) == ExitCode.OK
    (run_dir,) = (tmp_path / "results").glob(f"*/{plan}")
    return run_dir, json.loads((run_dir / "run.json").read_text())


def _rows(path: Path) -> list[dict[str, str]]:
    with path.open(newline="") as f:
        return list(csv.DictReader(f))


def test_iops_matrix_rounds_until_steady_or_five(tmp_path: Path) -> None:
    # an odd 512e sector count; 4 KiB only: the seven mixes of the tracking block size
    run_dir, record = _run(tmp_path, "iops", "pts_block_sizes=4k",
                           size=24 * MIB + 7 * 512)
    assert [s["name"] for s in record["stages"]] == ["erase", "partition", "fill", "iops"]
    assert record["wipc"]["fill"] == {"passes": 1, "block_size": "128k"}
    loop = record["pts"]["iops"]
    assert loop["tracking"] == "rnd-4k-0_100" and loop["metric"] == "iops"
    assert [w["name"] for w in loop["workloads"]] == [
        f"rnd-4k-{r}_{100 - r}" for r in (100, 95, 65, 50, 35, 5, 0)]
    n = len(loop["rounds"])
    assert 5 == n == loop["steady"]["last_round"]  # five rounds: the window needs five
    assert loop["state"] == "done"
    for r in range(1, n + 1):  # one fio job file and JSON a round
        assert (run_dir / "jobs" / f"iops-r{r:02d}.fio").is_file()
        fio = json.loads((run_dir / "fio" / f"iops-r{r:02d}.json").read_text())
        # fio's groups are the workloads, in order, each with its reads and writes as asked
        groups = fio["jobs"]
        assert [g["jobname"] for g in groups] == [w["name"] for w in loop["workloads"]]
        assert groups[0]["write"]["total_ios"] == 0 < groups[0]["read"]["total_ios"]
        assert groups[-1]["read"]["total_ios"] == 0 < groups[-1]["write"]["total_ios"]
        mixed = groups[2]  # 65/35: both
        share = mixed["read"]["total_ios"] / (mixed["read"]["total_ios"]
                                              + mixed["write"]["total_ios"])
        assert 0.55 < share < 0.75
        assert record["pts"]["iops"]["rounds"][r - 1]["workloads"]["rnd-4k-0_100"]["iops"] \
            == pytest.approx(groups[-1]["write"]["iops"])
    a = record["analysis"]["pts"][0]
    assert a["window"] == [1, 5] and a["reached"] == loop["steady"]["reached"]
    rows = _rows(run_dir / "pts-iops.csv")
    assert [r["workload"] for r in rows] == [w["name"] for w in loop["workloads"]]
    want = sum(rd["workloads"]["rnd-4k-0_100"]["iops"] for rd in loop["rounds"]) / 5
    assert float(rows[-1]["iops"]) == pytest.approx(want, rel=1e-3)
    assert len(_rows(run_dir / "pts-iops-rounds.csv")) == 5 * 7
    assert (run_dir / "pts-iops-convergence.png").is_file()
    assert (run_dir / "pts-iops-matrix.png").is_file()
    page = (run_dir.parent / "report.html").read_text()
    assert "IOPS (SNIA PTS): R/W mix × block size" in page and "65/35 R/W" in page
    index = (run_dir.parent.parent / "index.html").read_text()  # beside other drives'
    assert "SNIA PTS tests" in index and "4 KiB random read" in index


def test_latency_on_4kn_leaves_512_out_and_reads_fios_five_nines(tmp_path: Path) -> None:
    run_dir, record = _run(tmp_path, "latency", "pts_block_sizes=4k,512",
                           size=20 * MIB + 3 * 4096, sector=4096)
    loop = record["pts"]["latency"]
    assert [w["name"] for w in loop["workloads"]] == ["rnd-4k-100_0", "rnd-4k-65_35",
                                                      "rnd-4k-0_100"]
    assert all(w["iodepth"] == 1 for w in loop["workloads"])
    assert loop["skipped"] == ["512: smaller than the drive's 4096-byte logical block"]
    assert loop["metric"] == "lat_mean_us"
    fio = json.loads((run_dir / "fio" / "latency-r01.json").read_text())
    write = fio["jobs"][-1]["write"]
    got = loop["rounds"][0]["workloads"]["rnd-4k-0_100"]
    assert got["lat_mean_us"] == pytest.approx(write["lat_ns"]["mean"] / 1000)
    assert got["lat_max_us"] == pytest.approx(write["lat_ns"]["max"] / 1000)
    assert got["lat_p99999_us"] == pytest.approx(
        write["clat_ns"]["percentile"]["99.999000"] / 1000)
    assert got["lat_mean_us"] <= got["lat_p99999_us"] <= got["lat_max_us"] * 1.05
    page = (run_dir.parent / "report.html").read_text()
    assert "Latency at queue depth 1 (SNIA PTS)" in page and "five nines (ms)" in page
    assert "Left out: 512: smaller than the drive" in page


def test_throughput_purges_and_preconditions_again_for_128k(tmp_path: Path) -> None:
    run_dir, record = _run(tmp_path, "throughput", size=24 * MIB + 7 * 512)
    assert [s["name"] for s in record["stages"]] == [
        "erase", "partition", "fill", "throughput-1m", "erase-128k", "fill-128k",
        "throughput-128k"]
    for bs in ("1m", "128k"):
        loop = record["pts"][f"throughput-{bs}"]
        assert [w["name"] for w in loop["workloads"]] == [f"seq-{bs}-100_0", f"seq-{bs}-0_100"]
        assert loop["tracking"] == f"seq-{bs}-0_100" and loop["metric"] == "mib_s"
        rows = _rows(run_dir / f"pts-throughput-{bs}.csv")
        assert [float(r["mb_s"]) > 0 for r in rows] == [True, True]
    page = (run_dir.parent / "report.html").read_text()
    assert "Throughput, 1 MiB sequential (SNIA PTS)" in page
    assert "Throughput, 128 KiB sequential (SNIA PTS)" in page
