"""The speed plan's one stage: CrystalDiskMark's four corners, each a fio job, the drive's
temperature beside each figure, and the comparison with the lab's class table.

Each corner is ``jobs/speed-<corner>-<read|write>.fio`` (fio/jobs.speed_job), run by a
:class:`FioStage` of this stage's name; its temperature is sampled once a second while it
runs (``sensors-speed-<corner>-<direction>.csv``, stages/sensors.py). Reads are started with
fio --readonly; the write corners run only with ``speed_writes`` (the plan is then
destructive: plan/plans.py). run.json ``speed`` and ``speed.csv`` hold the figures and the
verdict (docs/plans.md "Speed").
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import io
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from functools import partial
from typing import Any

from ssdbench.fio import jobs
from ssdbench.fio.jobs import JobFile, parse_block_size
from ssdbench.fio.status import FioOutputError, parse_report
from ssdbench.jsonfile import read as read_json
from ssdbench.progress import Progress, ProgressCallback
from ssdbench.results import atomic
from ssdbench.stages.base import RunContext, StageFailed
from ssdbench.stages.measure import FioStage, job_target
from ssdbench.stages.speedclass import (
    CORNERS,
    Corner,
    corner_verdict,
    find_class,
    overall_verdict,
)

MB = 1_000_000  # CrystalDiskMark's MB/s: decimal
CSV_COLUMNS = ("corner", "direction", "block_size", "queue_depth", "threads", "mb_s", "iops",
               "mean_latency_us", "temperature_start_c", "temperature_end_c", "reference_mb_s",
               "verdict", "below_percent")


def stage_name(corner: Corner, direction: str) -> str:
    """fio's stage (jobs/<it>.fio, fio/<it>.json): ``speed-seq1m_q8t1-read``."""
    return f"speed-{corner.key}-{direction}"


def corner_job(ctx: RunContext, corner: Corner, direction: str) -> JobFile:
    p = ctx.params
    return jobs.speed_job(
        job_target(ctx), stage=stage_name(corner, direction), block_size=corner.block_size,
        sequential=corner.sequential, iodepth=corner.iodepth, numjobs=corner.numjobs,
        seconds=p.speed_seconds, ramp_seconds=p.speed_ramp_seconds,
        size_bytes=int(p.speed_gib * 1024**3), write=direction == "write")


def directions(ctx: RunContext) -> tuple[str, ...]:
    return ("read", "write") if ctx.params.speed_writes else ("read",)


@contextlib.contextmanager
def _temperatures(ctx: RunContext, stage: str) -> Iterator[list[tuple[int, int | None]]]:
    """The sensors sampler around one corner (its rows as they are read); no rows when the
    drive's temperature cannot be read (a loop device)."""
    if ctx.watch is None:
        yield []
        return
    with ctx.watch(stage) as rows:
        yield rows if isinstance(rows, list) else []


def _ends(rows: list[tuple[int, int | None]]) -> tuple[int | None, int | None]:
    temps = [t for _s, t in rows if t is not None]
    return (temps[0], temps[-1]) if temps else (None, None)


def corner_figures(ctx: RunContext, stage: str, direction: str,
                   block_bytes: int) -> dict[str, Any]:
    """MB/s, IOPS and mean latency of one corner from fio/<stage>.json (the measured
    seconds only: fio leaves the ramp out). IOPS are the bytes over the block size, as
    CrystalDiskMark's: fio's ``total_ios`` leaves out the I/Os in flight when the ramp
    ended, its ``io_bytes`` counts them (kept as ``ios``)."""
    path = ctx.run_dir / "fio" / f"{stage}.json"
    try:
        data = read_json(path)
        if not isinstance(data, dict):
            raise FioOutputError("not a JSON object")
        report = parse_report(data)
    except (OSError, ValueError, FioOutputError) as exc:
        raise StageFailed(f"cannot read {path.name}: {exc}") from None
    stats = [j.direction(direction) for j in report.jobs]
    runtime_ms = max((s.runtime_ms for s in stats), default=0)
    if not stats or runtime_ms <= 0:
        raise StageFailed(f"{path.name}: fio measured no time")
    nbytes = sum(s.io_bytes for s in stats)
    ios = sum(s.total_ios for s in stats)
    weighted = [(s.lat_mean_us, s.total_ios) for s in stats if s.lat_mean_us is not None]
    lat = (sum(m * n for m, n in weighted) / max(1, sum(n for _m, n in weighted))
           if weighted else None)
    seconds = runtime_ms / 1000
    return {"mb_s": round(nbytes / seconds / MB, 3),
            "iops": round(nbytes / block_bytes / seconds, 1),
            "mean_latency_us": None if lat is None else round(lat, 1), "bytes": nbytes,
            "ios": ios, "runtime_s": seconds}


class CornerProgress:
    """The progress of one corner, on its own counters: fio resets its runtime and byte
    counts when the ramp ends, so its figures go backwards there (a fraction from 18 % back
    to 7 %, a negative IOPS over the second across the reset: #45 A). The fraction is the
    corner's own clock over its ramp and measured seconds; a rate over an interval in which
    fio's counts went back is unknown (None); every running line names the corner."""

    def __init__(self, forward: ProgressCallback, stage: str, name: str, seconds: float,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.forward = forward
        self.stage = stage
        self.name = name
        self.seconds = max(seconds, 1e-9)
        self.clock = clock
        self.t0 = clock()
        self.fraction = 0.0
        self.bytes_done: int | None = None

    def __call__(self, ev: Progress) -> None:
        if ev.stage != self.stage or ev.state != "running":
            self.forward(ev)
            return
        iops, mib_s = ev.iops, ev.mib_s
        went_back = (ev.bytes_done is not None and self.bytes_done is not None
                     and ev.bytes_done < self.bytes_done)
        if ev.bytes_done is not None:
            self.bytes_done = ev.bytes_done
        if went_back or (iops is not None and iops < 0) or (mib_s is not None and mib_s < 0):
            iops = mib_s = None
        fraction, eta = ev.fraction, ev.eta_s
        if ev.fraction is not None:
            elapsed = self.clock() - self.t0
            own = 1.0 if ev.message == "result" else min(elapsed / self.seconds, 1.0)
            self.fraction = max(self.fraction, own)
            fraction = self.fraction
            eta = max(self.seconds - elapsed, 0.0) if ev.message != "result" else 0.0
        # "result" (the corner's mean, measure.py) is a marker front ends look for: kept
        message = ev.message if ev.message == "result" else (
            f"{self.name}: {ev.message}" if ev.message else self.name)
        self.forward(dataclasses.replace(ev, fraction=fraction, eta_s=eta, iops=iops,
                                         mib_s=mib_s, message=message))


@dataclass
class SpeedStage:
    name: str = "speed"

    def execute(self, ctx: RunContext) -> None:
        p = ctx.params
        klass = find_class(p.speed_classes, _model(ctx))
        corners: list[dict[str, Any]] = []
        for direction in directions(ctx):
            for corner in CORNERS:
                stage = stage_name(corner, direction)
                name = f"{corner.label} {direction}"
                ctx.emit(self.name, "running", name)
                own = dataclasses.replace(ctx, progress=CornerProgress(
                    ctx.progress, self.name, name, p.speed_seconds + p.speed_ramp_seconds))
                with _temperatures(ctx, stage) as rows:
                    # run.json keeps the stage's start (and its first job)
                    FioStage(self.name, partial(corner_job, corner=corner, direction=direction),
                             record_start=not corners).execute(own)
                start, end = _ends(rows)
                entry = {"key": corner.key, "label": corner.label, "direction": direction,
                         "block_size": corner.block_size, "queue_depth": corner.iodepth,
                         "threads": corner.numjobs, "job": f"jobs/{stage}.fio",
                         **corner_figures(ctx, stage, direction,
                                          parse_block_size(corner.block_size)),
                         "temperature_start_c": start, "temperature_end_c": end}
                reference = klass.reference(f"{corner.key}_{direction}") if klass else None
                entry.update(corner_verdict(entry["mb_s"], reference,
                                            p.speed_tolerance_percent))
                corners.append(entry)
                record(ctx, corners, klass, partial=True)
        record(ctx, corners, klass, partial=False)


def _model(ctx: RunContext) -> str | None:
    drive = ctx.record.data.get("drive")
    model = drive.get("model") if isinstance(drive, dict) else None
    return model if isinstance(model, str) else None


def record(ctx: RunContext, corners: list[dict[str, Any]], klass: Any, *,
           partial: bool) -> None:
    """run.json ``speed`` and speed.csv (each corner as it finishes; the verdict at the
    end)."""
    p = ctx.params
    speed: dict[str, Any] = {
        "unit": "MB/s (10^6 bytes a second)", "seconds": p.speed_seconds,
        "ramp_seconds": p.speed_ramp_seconds, "region_bytes": min(
            int(p.speed_gib * 1024**3), ctx.target.span_bytes),
        "writes": p.speed_writes, "corners": corners,
        "verdict": None if partial else overall_verdict(corners, klass,
                                                        p.speed_tolerance_percent)}
    ctx.record.set("speed", speed)
    out = io.StringIO()
    writer = csv.writer(out, lineterminator="\n")
    writer.writerow(CSV_COLUMNS)
    for c in corners:
        writer.writerow(["" if c.get(k) is None else c.get(k) for k in (
            "label", "direction", "block_size", "queue_depth", "threads", "mb_s", "iops",
            "mean_latency_us", "temperature_start_c", "temperature_end_c", "reference_mb_s",
            "verdict", "below_percent")])
    atomic.write_text(ctx.run_dir / "speed.csv", out.getvalue())
