"""The speed plan: its job files (read-only, CrystalDiskMark's four corners), the lab's class
table (config parsing, the record) and the verdict against it."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.fio.jobs import JobTarget, speed_job
from ssdbench.plan.plans import PlanError, build_plan, plan_from_json, preset
from ssdbench.stages.params import ParamError, RunParams, load_config
from ssdbench.stages.plans import stages_for
from ssdbench.stages.speed import SpeedStage
from ssdbench.stages.speedclass import (
    CORNERS,
    SpeedClass,
    corner_verdict,
    find_class,
    overall_verdict,
    parse_classes,
)

TARGET = JobTarget(path="/dev/sdz", span_bytes=10 * 2**30 + 4096)
READS = {"seq1m_q8t1_read": 560, "seq1m_q1t1_read": 540, "rnd4k_q32t16_read": 390,
         "rnd4k_q1t1_read": 45}


def _options(text: str, section: str) -> dict[str, str]:
    lines = text.split(f"[{section}]\n", 1)[1].splitlines()
    return dict(line.split("=", 1) for line in lines if "=" in line)


@pytest.mark.parametrize("corner", CORNERS, ids=[c.key for c in CORNERS])
def test_read_corner_job_is_read_only_with_crystaldiskmarks_options(corner) -> None:
    job = speed_job(TARGET, stage=f"speed-{corner.key}-read", block_size=corner.block_size,
                    sequential=corner.sequential, iodepth=corner.iodepth,
                    numjobs=corner.numjobs, seconds=12, ramp_seconds=3, size_bytes=2**30)
    assert job.read_only and job.direction == "read"
    assert "--readonly" in job.text and "WARNING" not in job.text
    opts = _options(job.text, f"speed-{corner.key}-read")
    assert opts["rw"] == ("read" if corner.sequential else "randread")
    assert (opts["bs"], opts["iodepth"], opts["numjobs"]) == (
        corner.block_size, str(corner.iodepth), str(corner.numjobs))
    assert (opts["size"], opts["runtime"], opts["ramp_time"], opts["time_based"]) == (
        str(2**30), "12s", "3s", "1")
    assert "refill_buffers" not in opts
    assert job.runtime_s == 15


def test_the_four_corners_are_crystaldiskmarks_defaults() -> None:
    assert [(c.label, c.block_size, c.iodepth, c.numjobs) for c in CORNERS] == [
        ("SEQ1M Q8T1", "1m", 8, 1), ("SEQ1M Q1T1", "1m", 1, 1),
        ("RND4K Q32T16", "4k", 32, 16), ("RND4K Q1T1", "4k", 1, 1)]


def test_write_corner_is_a_destructive_job_and_the_region_is_capped_by_the_span() -> None:
    small = JobTarget(path="/dev/sdz", span_bytes=3 * 2**20 + 512)
    job = speed_job(small, stage="speed-seq1m_q8t1-write", block_size="1m", sequential=True,
                    iodepth=8, numjobs=1, seconds=5, ramp_seconds=0, size_bytes=2**30,
                    write=True)
    assert not job.read_only and job.direction == "write"
    assert "--readonly" not in job.text and "WARNING" in job.text
    opts = _options(job.text, "speed-seq1m_q8t1-write")
    assert (opts["rw"], opts["size"], opts["refill_buffers"]) == ("write", str(3 * 2**20), "1")
    with pytest.raises(ValueError):
        speed_job(JobTarget("/dev/sdz", 2048), stage="x", block_size="4k", sequential=False,
                  iodepth=1, numjobs=1, seconds=1, ramp_seconds=0, size_bytes=2**30)


def test_speed_plan_is_read_only_unless_writes_are_asked_for() -> None:
    plan = preset("speed")
    assert [r.kind for r in plan.runs] == ["speed"]
    assert not plan.destructive
    assert plan.params.speed_writes is False
    assert build_plan("speed", sets=["speed_writes=true"]).destructive
    assert [type(s) for s in stages_for("speed")] == [SpeedStage]


def test_speed_cannot_share_a_plan_with_destructive_runs(tmp_path: Path) -> None:
    path = tmp_path / "mixed.toml"
    path.write_text('name = "m"\n[[runs]]\nkind = "speed"\n[[runs]]\nkind = "trim"\n')
    with pytest.raises(PlanError, match="read-only"):
        build_plan(str(path))


def test_speed_parameters_are_checked() -> None:
    for bad in ("speed_seconds=0", "speed_ramp_seconds=-1", "speed_tolerance_percent=95",
                "speed_gib=0", "speed_writes=maybe"):
        with pytest.raises(PlanError):
            build_plan("speed", sets=[bad])


def test_class_table_from_a_config_file(tmp_path: Path) -> None:
    path = tmp_path / "lab.toml"
    path.write_text('torture_seconds = 60\n[speed.class."Samsung SSD 870 EVO.*"]\n'
                    + "".join(f"{k} = {v}\n" for k, v in READS.items())
                    + "seq1m_q8t1_write = 530.5\n"
                    + '[speed.class."WDC WDS.*"]\n'
                    + "".join(f"{k} = {v}\n" for k, v in READS.items()))
    plan = build_plan("speed", config=path)
    classes = plan.params.speed_classes
    assert [c.pattern for c in classes] == ["Samsung SSD 870 EVO.*", "WDC WDS.*"]
    assert classes[0].reference("seq1m_q8t1_write") == 530.5
    assert classes[1].reference("seq1m_q8t1_write") is None
    # the record (run.json, the journal) is the table again and reads back the same
    again = plan_from_json(plan.to_json())
    assert again.params.speed_classes == classes
    assert plan.params.as_record()["speed_classes"]["WDC WDS.*"]["rnd4k_q1t1_read"] == 45


@pytest.mark.parametrize(("text", "message"), [
    ('[speed.class."A.*"]\nseq1m_q8t1_read = 1\n', "missing"),
    ('[speed.class."A.*"]\n' + "".join(f"{k} = {v}\n" for k, v in READS.items())
     + "seq9_read = 3\n", "unknown figure"),
    ('[speed.class."A(["]\n' + "".join(f"{k} = {v}\n" for k, v in READS.items()),
     "not a regular expression"),
    ('[speed.class."A.*"]\n' + "".join(f"{k} = {-v}\n" for k, v in READS.items()),
     "MB/s > 0"),
    ('[speed.class."A.*"]\n' + "".join(f'{k} = "{v}"\n' for k, v in READS.items()),
     "MB/s > 0"),
    ('[speed]\nclasses = 3\n', "speed"),
    ('speed = 3\n', "speed"),
])
def test_bad_class_tables_are_refused_naming_the_key(tmp_path: Path, text: str,
                                                    message: str) -> None:
    path = tmp_path / "lab.toml"
    path.write_text(text)
    with pytest.raises((ParamError, PlanError), match=message):
        RunParams().with_values(load_config(path), source=str(path))


def test_class_is_the_first_whose_pattern_matches_the_whole_model() -> None:
    classes = parse_classes({"Samsung SSD 870.*": READS, ".*870.*": READS}, "t")
    assert find_class(classes, "samsung ssd 870 EVO 1TB") is classes[0]
    assert find_class(classes, "Crucial 870") is classes[1]
    assert find_class(classes, "Samsung SSD 860 EVO") is None
    assert find_class(classes, None) is None
    assert find_class(classes, "870" + "x" * 500) is None  # untrusted text: too long


def test_verdict_within_the_tolerance_is_as_fast_below_it_says_by_how_much() -> None:
    klass = SpeedClass("X", tuple((k, float(v)) for k, v in READS.items()))
    assert corner_verdict(480.0, 560.0, 15)["verdict"] == "as fast"  # 14.3% below
    below = corner_verdict(448.0, 560.0, 15)  # 20% below
    assert (below["verdict"], below["below_percent"]) == ("below", 20.0)
    assert corner_verdict(600.0, 560.0, 15)["below_percent"] == 0.0
    assert corner_verdict(10.0, None, 15)["verdict"] == "no reference"
    corners = [{"key": c.key, "label": c.label, "direction": "read",
                **corner_verdict(m, klass.reference(f"{c.key}_read"), 15)}
               for c, m in zip(CORNERS, (550.0, 530.0, 300.0, 44.0), strict=True)]
    verdict = overall_verdict(corners, klass, 15)
    assert verdict["verdict"] == "below"
    assert verdict["text"].startswith("below its class by 23% (RND4K Q32T16 read)")
    fine = [{**c, **corner_verdict(c.get("reference_mb_s") or 1.0, c["reference_mb_s"], 15)}
            for c in corners]
    assert overall_verdict(fine, klass, 15)["text"] == "as fast as its class"
    assert overall_verdict(corners, None, 15)["text"] == "no reference for this model"


def test_corner_progress_never_goes_back_nor_negative_and_names_the_corner() -> None:
    """#45 A: fio resets its runtime and counts when a corner's ramp ends; the lines showed
    "18.4%" then "6.7%" and "-12,281 IOPS" and never said which corner ran."""
    import io

    from ssdbench.commands.run import StderrProgress
    from ssdbench.progress import Progress
    from ssdbench.stages.speed import CornerProgress

    now = [0.0]
    seen: list[Progress] = []
    corner = CornerProgress(seen.append, "speed", "SEQ1M Q8T1 read", 15.0, clock=lambda: now[0])

    def status(t: float, fio_fraction: float, nbytes: int, iops: float) -> None:
        now[0] = t
        corner(Progress("loop3", "speed", "speed", "running", fraction=fio_fraction,
                        elapsed_s=t, bytes_done=nbytes, iops=iops, mib_s=iops))

    status(1.0, 1 / 15, 8_000 * 2**20, 8_000.0)
    status(2.8, 2.8 / 15, 16_000 * 2**20, 8_371.0)
    status(3.8, 1 / 15, 4_000 * 2**20, -12_281.0)  # the ramp ended: fio starts again
    status(4.8, 2 / 15, 12_000 * 2**20, 8_000.0)
    fractions = [ev.fraction or 0.0 for ev in seen]
    assert fractions == sorted(fractions) and fractions[2] == pytest.approx(3.8 / 15)
    assert [ev.iops for ev in seen] == [8_000.0, 8_371.0, None, 8_000.0]
    assert seen[2].mib_s is None
    assert {ev.message for ev in seen} == {"SEQ1M Q8T1 read"}
    corner(Progress("loop3", "speed", "speed", "running", fraction=1.0, message="result"))
    assert seen[-1].message == "result"  # the marker kiosk mode looks for

    out = io.StringIO()
    StderrProgress(out)(seen[2])
    line = out.getvalue()
    assert "25.3%" in line and "SEQ1M Q8T1 read" in line and "-" not in line.split("%")[1]
    # the corner's mean is printed even within a second of the last line, named
    printer = StderrProgress(out := io.StringIO())
    printer(seen[3])
    printer(Progress("loop3", "speed", "speed", "running", fraction=1.0, iops=8_100.0,
                     message="result"))
    assert out.getvalue().splitlines()[-1].endswith("8,100 IOPS mean of SEQ1M Q8T1 read")
