"""The SNIA PTS round loops' pieces without a drive: the workloads of each test, fio's job
file for a round, the figures read from fio's real JSON (a latency round of fio 3.33 on a
4Kn loop device, tests/data/fio/pts-latency-round), the record's loop read back (and
refused when damaged), the measurement window, the parameter and the estimate."""

from __future__ import annotations

import copy
import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.analysis.pts import LoopRecordError, pts_loop
from ssdbench.fio.jobs import JobTarget, Workload, rounds_job
from ssdbench.fio.status import parse_report
from ssdbench.stages.base import StageFailed
from ssdbench.stages.params import ParamError, RunParams, parse_pts_block_sizes
from ssdbench.stages.pts import figures, loop_for, round_figures, steady_together

DATA = Path(__file__).resolve().parents[2] / "data" / "fio" / "pts-latency-round"
TARGET = JobTarget("/dev/loop7", 20 * 2**20 + 3 * 4096)


def _report() -> Any:
    return parse_report(json.loads((DATA / "latency-r01.json").read_text()))


def test_the_matrix_is_mixes_by_block_sizes_and_the_drive_decides_the_smallest() -> None:
    loop = loop_for("iops", ("1m", "4k", "512"), 512, 32)
    assert [w.name for w in loop.workloads][:3] == ["rnd-1m-100_0", "rnd-4k-100_0",
                                                    "rnd-512-100_0"]
    assert len(loop.workloads) == 7 * 3 and loop.tracking == "rnd-4k-0_100"
    assert {w.iodepth for w in loop.workloads} == {32} and loop.skipped == ()
    kn = loop_for("iops", ("1m", "4k", "512"), 4096, 32)  # a 4Kn drive refuses 512-B I/O
    assert len(kn.workloads) == 7 * 2
    assert kn.skipped == ("512: smaller than the drive's 4096-byte logical block",)
    lat = loop_for("latency", ("128k", "8k", "4k", "512"), 512, 32)
    assert [w.name for w in lat.workloads] == [
        f"rnd-{bs}-{r}_{100 - r}" for r in (100, 65, 0) for bs in ("8k", "4k", "512")]
    assert {w.iodepth for w in lat.workloads} == {1} and lat.metric == "lat_mean_us"
    tp = loop_for("throughput", ("4k",), 512, 32, "1m")
    assert [w.name for w in tp.workloads] == ["seq-1m-100_0", "seq-1m-0_100"]
    assert tp.tracking == "seq-1m-0_100" and tp.metric == "mib_s"
    with pytest.raises(ValueError, match="unknown PTS round loop"):
        loop_for("xsr", ("4k",), 512, 32)


def test_a_rounds_job_runs_each_workload_in_its_own_group_for_the_round() -> None:
    wl = [Workload(100, "4k", iodepth=1), Workload(65, "8k", iodepth=1),
          Workload(0, "1m", sequential=True)]
    job = rounds_job(TARGET, stage="latency-r03", workloads=wl, seconds=60)
    text = job.text
    assert job.relpath == "jobs/latency-r03.fio" and job.runtime_s == 180
    assert job.direction == "write" and not job.read_only
    sections = text.split("\n[")[1:]
    assert [s.split("]")[0] for s in sections] == [
        "global", "rnd-4k-100_0", "rnd-8k-65_35", "seq-1m-0_100"]
    assert "[latency-r03]" not in text  # the stage's own empty section is not left behind
    for s in sections[1:]:
        assert "\nstonewall\n" in s and "runtime=60s" in s and "time_based=1" in s
        assert "percentile_list=99:99.99:99.999" in s and "refill_buffers=1" in s
    assert "rw=randread" in sections[1] and "iodepth=1" in sections[1]
    assert "rw=randrw" in sections[2] and "rwmixread=65" in sections[2]
    assert "rw=write" in sections[3] and "norandommap" not in sections[3]
    reads = rounds_job(TARGET, stage="r", workloads=[Workload(100, "4k")], seconds=1)
    assert reads.read_only and reads.direction == "read"
    with pytest.raises(ValueError, match="twice"):
        rounds_job(TARGET, stage="r", workloads=[wl[0], wl[0]], seconds=1)
    with pytest.raises(ValueError, match="at least one second"):
        rounds_job(TARGET, stage="r", workloads=wl, seconds=0)


def test_figures_come_from_fios_own_json_of_each_group() -> None:
    raw = json.loads((DATA / "latency-r01.json").read_text())
    report = _report()
    wl = [Workload(100, "4k", iodepth=1), Workload(65, "4k", iodepth=1),
          Workload(0, "4k", iodepth=1)]
    got = round_figures(report, wl)
    write = raw["jobs"][2]["write"]
    w = got["rnd-4k-0_100"]
    assert w["iops"] == pytest.approx(write["iops"])
    assert w["lat_mean_us"] == pytest.approx(write["lat_ns"]["mean"] / 1000)
    assert w["lat_max_us"] == pytest.approx(write["lat_ns"]["max"] / 1000)
    assert w["lat_p99999_us"] == pytest.approx(write["clat_ns"]["percentile"]["99.999000"]
                                               / 1000)
    mixed, job = got["rnd-4k-65_35"], raw["jobs"][1]
    r, wr = job["read"], job["write"]
    assert mixed["iops"] == pytest.approx(r["iops"] + wr["iops"])
    assert mixed["lat_mean_us"] == pytest.approx(  # weighted by each direction's I/Os
        (r["lat_ns"]["mean"] * r["total_ios"] + wr["lat_ns"]["mean"] * wr["total_ios"])
        / (r["total_ios"] + wr["total_ios"]) / 1000)
    assert mixed["lat_max_us"] == pytest.approx(max(r["lat_ns"]["max"],
                                                    wr["lat_ns"]["max"]) / 1000)
    # a read-only group has no write latency: the write side is not averaged in as zeros
    reads = got["rnd-4k-100_0"]
    assert reads["lat_mean_us"] == pytest.approx(raw["jobs"][0]["read"]["lat_ns"]["mean"] / 1000)
    assert report.jobs[0].write.lat_mean_us is None
    with pytest.raises(StageFailed, match="no group 'rnd-8k-0_100'"):
        round_figures(report, [Workload(0, "8k")])
    assert figures(report.jobs[2])["ios"] == write["total_ios"]


def _entry(values: list[float], steady: dict[str, Any] | None) -> dict[str, Any]:
    wl = [{"name": "rnd-4k-100_0", "read_percent": 100, "block_size": "4k",
           "sequential": False, "iodepth": 32},
          {"name": "rnd-4k-0_100", "read_percent": 0, "block_size": "4k",
           "sequential": False, "iodepth": 32}]
    rounds = [{"round": i + 1, "workloads": {
        "rnd-4k-100_0": {"iops": 5000.0 + i, "mib_s": 20.0, "ios": 1.0, "lat_mean_us": 100.0,
                         "lat_max_us": 1000.0 + i, "lat_p99999_us": 900.0},
        "rnd-4k-0_100": {"iops": v, "mib_s": v / 256, "ios": 1.0, "lat_mean_us": 200.0,
                         "lat_max_us": 2000.0 * (i + 1), "lat_p99999_us": 1500.0}}}
              for i, v in enumerate(values)]
    return {"test": "iops", "block_size": None, "round_s": 60, "max_rounds": 25,
            "tracking": "rnd-4k-0_100", "metric": "iops", "workloads": wl, "skipped": [],
            "rounds": rounds, "steady": steady, "state": "done" if steady else "running"}


def test_the_window_is_the_steady_rounds_or_the_last_five_marked_not_steady() -> None:
    values = [9000.0, 5000, 3000, 2050, 2000, 1990, 2010, 2000]
    loop = pts_loop("iops", _entry(values, {"reached": True, "first_round": 4,
                                            "last_round": 8, "mean": 2010.0, "range": 60.0,
                                            "slope_excursion": 10.0}))
    assert loop.reached and loop.window == (4, 8) and loop.tracked() == values
    figs = loop.window_figures
    assert figs["rnd-4k-0_100"]["iops"] == pytest.approx(sum(values[3:]) / 5)
    assert figs["rnd-4k-0_100"]["lat_max_us"] == 2000.0 * 8  # the maximum, not a mean
    assert figs["rnd-4k-100_0"]["iops"] == pytest.approx(5000 + (3 + 4 + 5 + 6 + 7) / 5)
    never = pts_loop("iops", _entry(values, {"reached": False, "first_round": 4,
                                             "last_round": 8}))
    assert never.reached is False and never.window == (4, 8) and never.window_mean is None
    cut = pts_loop("iops", _entry(values[:6], None))  # the run stopped mid-loop
    assert cut.reached is None and cut.window == (2, 6)
    assert pts_loop("iops", _entry(values[:3], None)).window is None


@pytest.mark.parametrize("damage, says", [
    (lambda e: e.update(test="xsr"), "pts.iops.test"),
    (lambda e: e.update(round_s=0), "pts.iops.round_s"),
    (lambda e: e.update(tracking="rnd-8k-0_100"), "not one of its workloads"),
    (lambda e: e["rounds"][1]["workloads"].pop("rnd-4k-100_0"), "every workload once"),
    (lambda e: e["rounds"][0]["workloads"]["rnd-4k-0_100"].update(iops="fast"),
     "rounds[0].rnd-4k-0_100.iops"),
    (lambda e: e["rounds"][0]["workloads"]["rnd-4k-0_100"].update(iops=-5.0), "below zero"),
    (lambda e: e["rounds"][0]["workloads"]["rnd-4k-0_100"].update(iops=float("inf")),
     "not a number"),
    (lambda e: e.update(steady={"reached": True, "first_round": 4, "last_round": 9}),
     "last_round"),
    (lambda e: e.update(steady=[1]), "steady is not an object"),
    (lambda e: e.update(workloads="all"), "workloads is not a list"),
    (lambda e: e.update(also_tracking=["rnd-64k-65_35"]), "also_tracking"),
    (lambda e: e.update(also_tracking="rnd-4k-100_0"), "also_tracking"),
])
def test_a_damaged_record_is_refused_naming_the_field(damage: Any, says: str) -> None:
    entry = copy.deepcopy(_entry([1.0] * 8, {"reached": False, "first_round": 4,
                                             "last_round": 8}))
    damage(entry)
    with pytest.raises(LoopRecordError, match=says.replace("[", r"\[").replace("]", r"\]")):
        pts_loop("iops", entry)


def test_the_block_sizes_parameter() -> None:
    assert parse_pts_block_sizes("4K, 1024k,512b") == ("1m", "4k", "512")
    assert RunParams().pts_block_size_list == ("1m", "128k", "64k", "32k", "16k", "8k", "4k",
                                              "512")
    p = RunParams().with_values({"pts_block_sizes": "128k,4k", "pts_max_rounds": 5,
                                 "pts_wipc_passes": 0})
    assert p.pts_block_sizes == "128k,4k" and p.pts_wipc_passes == 0
    for bad, why in (("128k", "4k is the tracking"), ("4k,3k", "'3k' is not one"),
                     ("4k,4K", "twice")):
        with pytest.raises(ParamError, match=why):
            RunParams().with_values({"pts_block_sizes": bad})
    for key, value in (("pts_max_rounds", 4), ("pts_max_rounds", 101),
                       ("pts_wipc_passes", 11), ("pts_wipc_passes", -1)):
        with pytest.raises(ParamError, match=key):
            RunParams().with_values({key: value})


def test_the_iops_test_tracks_pts_e_2_0s_three_variables_where_their_blocks_run() -> None:
    """PTS-E 2.0's IOPS test is steady when 4 KiB 0/100, 64 KiB 65/35 and 1 MiB 100/0 are
    all steady in the same five rounds (#43: the doc named three, the loop tracked one)."""
    full = loop_for("iops", ("1m", "128k", "64k", "32k", "16k", "8k", "4k", "512"), 512, 32)
    assert full.tracking == "rnd-4k-0_100"
    assert full.also == ("rnd-64k-65_35", "rnd-1m-100_0")
    assert {w.name for w in full.workloads} >= {full.tracking, *full.also}
    assert loop_for("iops", ("64k", "4k"), 512, 32).also == ("rnd-64k-65_35",)
    assert loop_for("iops", ("4k",), 512, 32).also == ()  # pts_block_sizes=4k: one, as before
    assert loop_for("latency", ("8k", "4k", "512"), 512, 32).also == ()


def test_the_loop_is_steady_only_when_every_tracking_variable_is_in_the_same_window() -> None:
    flat = [2000.0, 2010, 1990, 2005, 1995, 2000]
    falling = [9000.0, 8000, 7000, 6000, 5000, 4000]  # 64 KiB 65/35 still on its way down
    assert steady_together({"rnd-4k-0_100": flat}, 60) is not None
    assert steady_together({"rnd-4k-0_100": flat, "rnd-64k-65_35": falling}, 60) is None
    both = steady_together({"rnd-4k-0_100": flat, "rnd-64k-65_35": [v * 3 for v in flat]}, 60)
    assert both is not None and set(both) == {"rnd-4k-0_100", "rnd-64k-65_35"}
    assert both["rnd-64k-65_35"].window_mean == pytest.approx(3 * sum(flat[1:]) / 5)
    assert steady_together({"rnd-4k-0_100": flat[:4]}, 60) is None  # fewer than five rounds
