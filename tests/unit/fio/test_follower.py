"""The live status's elapsed time and ETA come from the stage's own clock (#24 item 1)."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

from ssdbench.fio.jobs import JobFile
from ssdbench.fio.runner import LiveStatus, _Follower
from ssdbench.fio.status import FioReport, JsonStreamSplitter, parse_report


def first_fill_dump(fio_data: Path) -> FioReport:
    splitter = JsonStreamSplitter()
    splitter.feed((fio_data / "fill-2pass" / "stdout.txt").read_bytes())
    splitter.finish()
    return parse_report(json.loads(splitter.texts[0]))


def fill_job(total_bytes: int) -> JobFile:
    return JobFile(stage="fill", text="", direction="write", runtime_s=None,
                   total_bytes=total_bytes)


def test_a_runtime_past_the_stages_own_clock_is_not_shown(fio_data: Path) -> None:
    real = first_fill_dump(fio_data)
    # what fio printed on a simulated drive's fill (the machine's uptime, 2h32m)
    wrong = dataclasses.replace(
        real, jobs=tuple(dataclasses.replace(j, job_runtime_ms=9_120_000) for j in real.jobs))
    nbytes, _ = wrong.total("write")
    seen: list[LiveStatus] = []
    follower = _Follower(fill_job(nbytes * 100), seen.append)
    follower.handle(wrong)
    status = seen[0]
    assert status.elapsed_s < 60  # the stage has just started
    assert status.eta_s is not None and status.eta_s < 3600
    assert status.fio_epoch_ms is None  # no wall-clock zero from a wrong runtime


def test_fios_own_runtime_is_kept_when_it_is_sane(fio_data: Path) -> None:
    real = first_fill_dump(fio_data)
    seen: list[LiveStatus] = []
    follower = _Follower(fill_job(10**12), seen.append)
    follower.t0 -= 5.0  # fio started 5 s ago
    follower.handle(real)
    assert seen[0].elapsed_s == real.runtime_ms / 1000


def test_a_rate_over_a_moment_is_no_rate(fio_data: Path) -> None:
    """fio's last dump comes moments after the one before it: the rate over that sliver is
    noise ("0 IOPS 186 MiB/s" in a speed run's log), so it is None, and the next rate is
    measured from the last dump kept."""
    real = first_fill_dump(fio_data)
    nbytes, ios = real.total("write")

    def later(report: FioReport, ms: int, scale: int) -> FioReport:
        jobs = tuple(dataclasses.replace(j, write=dataclasses.replace(
            j.write, io_bytes=j.write.io_bytes * scale, total_ios=j.write.total_ios * scale))
            for j in report.jobs)
        return dataclasses.replace(report, timestamp_ms=report.timestamp_ms + ms, jobs=jobs)

    seen: list[LiveStatus] = []
    follower = _Follower(fill_job(10**15), seen.append)
    follower.handle(real)
    follower.handle(later(real, 1000, 2))  # a second later, twice the bytes: a rate
    follower.handle(later(real, 1040, 2))  # 40 ms later, nothing new: no rate, not 0
    follower.handle(later(real, 2000, 3))  # measured from the dump at 1000 ms
    rates = [s.mib_s for s in seen]
    assert rates[0] is None and rates[2] is None
    assert rates[1] is not None and rates[3] is not None
    assert abs(rates[3] - rates[1]) < 1e-6 * rates[1]  # one more fill's worth a second
    assert abs(seen[1].iops - ios) < 1e-6 * ios  # type: ignore[operator]
    assert nbytes > 0
