"""The fio stages: fill, torture, read-scan, random read (the TRIM probes: stages/probe.py)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

from ssdbench.fio import jobs
from ssdbench.fio.blockstat import BlockStatSampler, stat_path
from ssdbench.fio.jobs import JobFile, JobTarget
from ssdbench.fio.runner import FioOutcome, LiveStatus, run_fio
from ssdbench.fio.status import FioReport
from ssdbench.stages.base import RunContext, StageCancelled, StageFailed, with_drive_state
from ssdbench.system import LiveFS


def job_target(ctx: RunContext) -> JobTarget:
    # O_DIRECT is a block-device matter; a regular file (tests on tmpfs) is buffered.
    return JobTarget(
        path=ctx.target.path,
        span_bytes=ctx.target.span_bytes,
        ioengine=ctx.params.ioengine,
        iodepth=ctx.params.iodepth,
        direct=ctx.target.kind == "block",
    )


@dataclass
class FioStage:
    """One fio job: write jobs/<stage>.fio, run it, keep fio/<stage>.*, refresh the CSVs."""

    name: str
    make_job: Callable[[RunContext], JobFile]
    # False: a further job of a stage that has started (a TRIM probe's extension,
    # stages/probe.py): run.json keeps the stage's start and its first job
    record_start: bool = True

    def execute(self, ctx: RunContext) -> None:
        job = self.make_job(ctx)
        if self.record_start:
            ctx.record.stage_started(self.name, job.relpath)
        sampler = block_trace(ctx, job)

        def on_status(status: LiveStatus) -> None:
            if sampler is not None and status.fio_epoch_ms is not None:
                sampler.offer_epoch(status.fio_epoch_ms)
            ctx.emit(
                self.name, "running", fraction=status.fraction, elapsed_s=status.elapsed_s,
                eta_s=status.eta_s, bytes_done=status.bytes_done, iops=status.iops,
                mib_s=status.mib_s,
            )

        try:
            outcome = run_fio(
                ctx.host.runner, ctx.run_dir, job, on_status=on_status, cancel=ctx.cancel,
                status_timeout_s=float(ctx.params.status_timeout_s),
            )
        finally:
            if sampler is not None:
                sampler.stop()
                record_block_trace(ctx, job.stage, sampler)
        # imported here: numpy is only loaded once a stage has logs to turn into CSV, so
        # `ssdbench list`, `--help` and kiosk start quickly (seconds under emulation)
        from ssdbench.fio.logs import write_run_csvs

        try:
            checks = write_run_csvs(ctx.run_dir)  # keep what was logged, whatever the outcome
        except Exception as exc:
            if outcome.state == "done":
                raise StageFailed(f"cannot turn fio's logs into CSV: {exc}") from exc
            checks = {}
        if (check := checks.get(job.stage)) is not None:
            record_reconciliation(ctx, job.stage, check.to_dict(), check.warning())
        if job.total_bytes is not None and outcome.report is not None:
            record_coverage(ctx, job, outcome.report)
        if job.bytes_goal is not None and outcome.report is not None:
            record_goal(ctx, job, outcome.report)
        report = finished_report(ctx, outcome)
        if report.runtime_ms > 0:
            seconds = report.runtime_ms / 1000
            moved = [report.total(d) for d in ("read", "write", "trim")]
            nbytes, ios = max(moved, key=lambda t: t[0])
            # the stage's mean over its whole runtime (front ends print it with "done")
            ctx.emit(self.name, "running", "result", fraction=1.0, elapsed_s=seconds,
                     bytes_done=nbytes, iops=ios / seconds, mib_s=nbytes / seconds / 2**20)


def finished_report(ctx: RunContext, outcome: FioOutcome) -> FioReport:
    """fio's final report of a job that ended by itself; StageCancelled when the user
    stopped it, StageFailed (naming a drive that went away) when it failed."""
    if outcome.state == "cancelled":
        raise StageCancelled(outcome.reason or "cancelled")
    if outcome.state != "done" or outcome.report is None:
        raise StageFailed(with_drive_state(ctx, outcome.reason or "fio failed"))
    return outcome.report


def block_trace(ctx: RunContext, job: JobFile) -> BlockStatSampler | None:
    """A started block-layer trace for a time-based IOPS stage on a block device (the
    exact per-second series, fio/blockstat.py); None for other stages and targets."""
    name = ctx.target.kernel_name
    if job.io_size is None or job.runtime_s is None or ctx.target.kind != "block" or not name:
        return None
    stat = stat_path(name)
    # the sampler reads this machine's /sys: only for the live host, not a replayed one
    if not isinstance(ctx.host.fs, LiveFS) or not ctx.host.fs.exists(stat):
        return None
    sampler = BlockStatSampler(ctx.host.runner, stat, ctx.run_dir / "fio", job.stage, device=name,
                               direction=job.direction, io_size=job.io_size)
    if not sampler.start():
        record_block_trace(ctx, job.stage, sampler)
        return None
    return sampler


def record_block_trace(ctx: RunContext, stage: str, sampler: BlockStatSampler) -> None:
    """run.json ``block_trace.<stage>``: how many times the counters were read, fio's
    epoch, and why the trace ended early (``error``) if it did."""
    ctx.record.set_entry("block_trace", stage, {
        "stat_path": sampler.stat, "samples": sampler.samples,
        "fio_epoch_ns": sampler.meta.fio_epoch_ns, "error": sampler.error})


def record_coverage(ctx: RunContext, job: JobFile, report: FioReport) -> None:
    """run.json ``coverage.<stage>``: the bytes a size-based job had to move (the span
    times the passes; a probe's window) against what fio says it moved, per fio job (the
    ``-tail`` job writes the last partial block of an odd span)."""
    moved, _ = report.total(job.direction)
    expected = job.total_bytes or 0
    entry = {
        "span_bytes": ctx.target.span_bytes,
        "expected_bytes": expected,
        "moved_bytes": moved,
        "covered": moved >= expected,
        "jobs": {j.name: j.direction(job.direction).io_bytes for j in report.jobs},
    }
    ctx.record.set_entry("coverage", job.stage, entry)


def record_goal(ctx: RunContext, job: JobFile, report: FioReport) -> None:
    """run.json ``goal.<stage>``: a job that ends at a byte goal or its runtime (WSAT): the
    goal, what fio says it moved, whether that reached the goal, fio's runtime."""
    moved, _ = report.total(job.direction)
    goal = job.bytes_goal or 0
    ctx.record.set_entry("goal", job.stage, {
        "goal_bytes": goal, "moved_bytes": moved, "reached": moved >= goal,
        "runtime_s": report.runtime_ms / 1000, "max_seconds": job.runtime_s})


def record_reconciliation(ctx: RunContext, stage: str, entry: dict[str, Any],
                          warning: str | None) -> None:
    """run.json ``reconciliation.<stage>`` (the per-second series against fio's totals) and,
    for a gap beyond the tolerance, a ``warnings`` entry the report shows."""
    ctx.record.set_entry("reconciliation", stage, entry)
    if warning is not None:
        warnings = [w for w in ctx.record.data.get("warnings") or []
                    if not (isinstance(w, dict) and w.get("kind") == "reconciliation"
                            and w.get("stage") == stage)]
        warnings.append({"kind": "reconciliation", "stage": stage, "message": warning})
        ctx.record.set("warnings", warnings)


def fill_stage() -> FioStage:
    return FioStage("fill", lambda ctx: jobs.fill_job(
        job_target(ctx), block_size=ctx.params.block_size_fill, passes=ctx.params.fill_passes))


def torture_stage(seconds_key: str = "torture_seconds") -> FioStage:
    def make(ctx: RunContext) -> JobFile:
        seconds = int(getattr(ctx.params, seconds_key))
        return jobs.torture_job(
            job_target(ctx), seconds=seconds, block_size=ctx.params.block_size_torture,
            hist_coarseness=ctx.params.hist_coarseness)

    return FioStage("torture", make)


def wsat_stage() -> FioStage:
    """SNIA PTS write saturation (fio/jobs.wsat_job): plan parameters
    wsat_capacity_multiple, wsat_seconds, block_size_torture, iodepth."""
    return FioStage("wsat", lambda ctx: jobs.wsat_job(
        job_target(ctx), capacity_multiple=ctx.params.wsat_capacity_multiple,
        max_seconds=ctx.params.wsat_seconds, block_size=ctx.params.block_size_torture,
        hist_coarseness=ctx.params.hist_coarseness))


@dataclass
class HirStage:
    """SNIA PTS host idle recovery after the WSAT preconditioning: for each idle period of
    ``hir_waits``, ``hir_repetitions`` bursts of ``hir_burst_seconds`` of random writes with
    that idle after each (fio/jobs.hir_idle_job), then as many bursts' worth of writes without
    a pause, back to the baseline (the torture's job, stage hir-base-<s>). One stage for the
    journal and the front ends; a fio job (jobs/, fio/, a CSV) per part."""

    name: str = "hir"

    def execute(self, ctx: RunContext) -> None:
        for wait in ctx.params.hir_wait_list:
            FioStage(self.name, partial(_hir_idle, wait=wait)).execute(ctx)
            FioStage(self.name, partial(_hir_base, wait=wait)).execute(ctx)


def _hir_idle(ctx: RunContext, *, wait: int) -> JobFile:
    p = ctx.params
    return jobs.hir_idle_job(job_target(ctx), burst_s=p.hir_burst_seconds, wait_s=wait,
                             bursts=p.hir_repetitions, block_size=p.block_size_torture,
                             hist_coarseness=p.hist_coarseness)


def _hir_base(ctx: RunContext, *, wait: int) -> JobFile:
    p = ctx.params
    return jobs.torture_job(job_target(ctx), seconds=p.hir_repetitions * p.hir_burst_seconds,
                            block_size=p.block_size_torture, hist_coarseness=p.hist_coarseness,
                            stage=f"hir-base-{wait}")


def readscan_stage() -> FioStage:
    return FioStage("readscan", lambda ctx: jobs.readscan_job(job_target(ctx)))


def randread_stage() -> FioStage:
    return FioStage("randread", lambda ctx: jobs.randread_job(
        job_target(ctx), seconds=ctx.params.random_read_seconds,
        hist_coarseness=ctx.params.hist_coarseness))
