from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.fio import jobs
from ssdbench.fio.runner import fio_argv

T = jobs.JobTarget("/dev/loop7", 64 * 2**20)


def options(text: str) -> dict[str, str]:
    out = {}
    for line in text.splitlines():
        if line and not line.startswith(("#", "[")):
            key, _, value = line.partition("=")
            out[key] = value
    return out


def test_fill_job_is_the_spec() -> None:
    job = jobs.fill_job(T, passes=2)
    o = options(job.text)
    assert {k: o[k] for k in ("rw", "bs", "iodepth", "direct", "refill_buffers", "size", "loops")} == {
        "rw": "write", "bs": "128k", "iodepth": "32", "direct": "1", "refill_buffers": "1",
        "size": "100%", "loops": "2"}
    assert job.total_bytes == 2 * T.span_bytes and job.runtime_s is None
    assert o["write_bw_log"] == "fio/fill" and o["log_avg_msec"] == "1000"


def test_torture_job_is_the_spec() -> None:
    job = jobs.torture_job(T, seconds=2000)
    o = options(job.text)
    want = {"rw": "randwrite", "bs": "4k", "iodepth": "32", "numjobs": "1", "direct": "1",
            "norandommap": "1", "randrepeat": "0", "refill_buffers": "1", "time_based": "1",
            "runtime": "2000s", "log_avg_msec": "1000", "log_hist_msec": "1000",
            "write_iops_log": "fio/torture", "write_bw_log": "fio/torture",
            "write_lat_log": "fio/torture", "write_hist_log": "fio/torture",
            "ioengine": "libaio", "filename": "/dev/loop7"}
    assert {k: o.get(k) for k in want} == want
    assert job.runtime_s == 2000


def test_wsat_job_ends_at_its_byte_goal_or_its_runtime() -> None:
    """SNIA PTS WSAT: random writes over the whole span until 4 capacities (whole blocks)
    are written or the runtime cap, never time-based (fio would ignore io_size)."""
    job = jobs.wsat_job(T, capacity_multiple=4, max_seconds=86400)
    o = options(job.text)
    goal = 4 * T.span_bytes // 4096 * 4096
    want = {"rw": "randwrite", "bs": "4k", "iodepth": "32", "size": "100%",
            "io_size": str(goal), "runtime": "86400s", "norandommap": "1",
            "write_iops_log": "fio/wsat", "log_avg_msec": "1000"}
    assert {k: o.get(k) for k in want} == want
    assert "time_based" not in o
    assert (job.stage, job.runtime_s, job.bytes_goal, job.io_size) == ("wsat", 86400, goal, 4096)
    with pytest.raises(ValueError, match="less than one block"):
        jobs.wsat_job(T, capacity_multiple=1e-12, max_seconds=60)


def test_hir_idle_job_bursts_with_idle_after_each() -> None:
    """SNIA PTS HIR: fio thinktime_iotime (the burst) and thinktime (the idle), one burst
    more than the repetitions (fio's first runs on through the first idle)."""
    job = jobs.hir_idle_job(T, burst_s=5, wait_s=10, bursts=360)
    o = options(job.text)
    want = {"rw": "randwrite", "bs": "4k", "iodepth": "32", "time_based": "1",
            "runtime": f"{361 * 15}s", "thinktime": "10s", "thinktime_iotime": "5s",
            "write_iops_log": "fio/hir-idle-10"}
    assert {k: o.get(k) for k in want} == want
    assert (job.stage, job.runtime_s, job.io_size) == ("hir-idle-10", 361 * 15, 4096)
    with pytest.raises(ValueError, match="at least a second"):
        jobs.hir_idle_job(T, burst_s=5, wait_s=0, bursts=3)


def test_probe_is_clamped_to_the_span_and_whole_blocks() -> None:
    job = jobs.probe_job(T, phase="clean", probe_bytes=8 * 2**30)
    assert job.stage == "probe-clean" and job.total_bytes == T.span_bytes
    o = options(job.text)
    assert o["offset"] == "0" and o["size"] == str(T.span_bytes) and o["rw"] == "write"
    with pytest.raises(ValueError):
        jobs.probe_job(T, phase="clean", probe_bytes=1000)


def test_read_jobs_never_write() -> None:
    for job in (jobs.readscan_job(T), jobs.randread_job(T, seconds=60)):
        o = options(job.text)
        # fio takes --readonly on its command line only (a job option is an error)
        assert "readonly" not in o and o["rw"] in ("read", "randread")
        assert job.read_only and "--readonly" in fio_argv(job)
        assert "WARNING" not in job.text
    assert "--readonly" not in fio_argv(jobs.fill_job(T))


def test_block_sizes_are_validated() -> None:
    assert jobs.parse_block_size("128k") == 131072
    for bad in ("4x", "100", "", "1.5k"):
        with pytest.raises(ValueError):
            jobs.parse_block_size(bad)


def test_job_file_is_written_where_the_run_expects_it(tmp_path: Path) -> None:
    job = jobs.torture_job(jobs.JobTarget("/dev/x", 2**20, ioengine="io_uring"), seconds=5)
    path = job.write(tmp_path)
    assert path == tmp_path / "jobs" / "torture.fio" and (tmp_path / "fio").is_dir()
    assert "ioengine=io_uring" in path.read_text()


def sections(text: str) -> dict[str, dict[str, str]]:
    """Every job section of a job file and its options (``[global]`` included)."""
    out: dict[str, dict[str, str]] = {}
    current = ""
    for line in text.splitlines():
        if line.startswith("["):
            current = line.strip("[]")
            out[current] = {}
        elif line and not line.startswith("#") and current:
            key, _, value = line.partition("=")
            out[current][key] = value
    return out


# real capacities: IDEMA 240 GB (468862128 sectors) and 500 GB (976773168) scaled down with
# their remainder modulo 1 MiB, an odd sector count (512e), a 4Kn span of 3 x 4 KiB extra
ODD_SPANS = [200 * 2**20 + (468862128 * 512) % 2**20, 300 * 2**20 + (976773168 * 512) % 2**20,
             65 * 2**20 + 7 * 512, 48 * 2**20 + 3 * 4096]


@pytest.mark.parametrize("span", ODD_SPANS)
def test_fill_and_readscan_of_an_odd_span_cover_its_tail(span: int) -> None:
    t = jobs.JobTarget("/dev/loop7", span)
    for job, bs in ((jobs.fill_job(t, passes=2), 128 * 1024), (jobs.readscan_job(t), 2**20)):
        s = sections(job.text)
        main, tail = s[job.stage], s[f"{job.stage}-tail"]
        whole = span - span % bs
        assert main["size"] == str(whole) and main["bs"] in ("128k", "1m")
        assert tail == {"stonewall": "", "rw": main["rw"], "bs": str(span - whole),
                        "offset": str(whole), "size": str(span - whole),
                        **({"loops": "2", "randrepeat": "0", "refill_buffers": "1"} if job.stage == "fill" else {})}
        # only the main job logs: fio/<stage>_bw.1.log stays the one per-second log
        assert "write_bw_log" not in tail and main["write_bw_log"] == f"fio/{job.stage}"
        assert job.total_bytes == span * (2 if job.stage == "fill" else 1)


def test_an_aligned_span_has_no_tail_job_and_a_tiny_span_one_short_block() -> None:
    assert list(sections(jobs.fill_job(T).text)) == ["global", "fill"]
    assert options(jobs.fill_job(T).text)["size"] == "100%"
    tiny = sections(jobs.readscan_job(jobs.JobTarget("/f", 6144)).text)
    assert list(tiny) == ["global", "readscan"] and tiny["readscan"]["bs"] == "6144"
    assert jobs.split_span(468862128 * 512, 128 * 1024) == (240057319424, 90112)
