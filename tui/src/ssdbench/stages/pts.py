"""The SNIA PTS round loops (IOPS, throughput, latency): rounds of fio workloads, each
``steady_round_s`` long, until the tracking variable is steady over the last five rounds by
the PTS rule or ``pts_max_rounds`` rounds are done (docs/pts.md).

Each round is one fio job file (jobs/<stage>-rNN.fio: the workloads one after the other,
a stonewalled group each) and its JSON (fio/<stage>-rNN.json); every round's figures and the
loop's state are in run.json ``pts.<stage>`` as soon as the round ends, so a run cut short
keeps what it measured."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ssdbench.fio import jobs
from ssdbench.fio.jobs import Workload, parse_block_size
from ssdbench.fio.runner import LiveStatus, run_fio
from ssdbench.fio.status import FioJob, FioReport
from ssdbench.stages.base import RunContext, StageFailed, sysfs_logical_block
from ssdbench.stages.measure import FioStage, finished_report, job_target
from ssdbench.stages.params import PTS_BLOCK_SIZES

# The PTS-E 2.0 matrix: R/W mixes (read %) by block sizes, largest first as the PTS lists them
IOPS_MIXES = (100, 95, 65, 50, 35, 5, 0)
IOPS_BLOCK_SIZES = PTS_BLOCK_SIZES
LATENCY_MIXES = (100, 65, 0)
LATENCY_BLOCK_SIZES = ("8k", "4k", "512")
THROUGHPUT_BLOCK_SIZES = ("1m", "128k")
TRACKED_BLOCK = "4k"  # IOPS and latency track 4 KiB random writes
# PTS-E 2.0's IOPS test tracks three variables, all steady in the same five rounds: 4 KiB
# 0/100, 64 KiB 65/35 and 1 MiB 100/0 (as its open implementation does, BlockStorageTestIops
# wdpc: "need all Steady State Tracking Variables"); the last two only where
# pts_block_sizes keeps their block size
IOPS_ALSO_TRACKED = ((65, "64k"), (100, "1m"))


@dataclass(frozen=True)
class Loop:
    """What one round loop runs and tracks."""

    workloads: tuple[Workload, ...]
    tracking: str  # the workload whose figure decides steady state (the convergence plot's)
    metric: str  # "iops", "mib_s" or "lat_mean_us"
    skipped: tuple[str, ...]  # block sizes left out, each with why
    also: tuple[str, ...] = ()  # other workloads that must be steady in the same window


def loop_for(test: str, block_sizes: Sequence[str], logical_block: int, iodepth: int,
             throughput_block: str | None = None) -> Loop:
    """The workloads of ``test`` ("iops", "latency", "throughput"), limited to
    ``block_sizes`` (plan parameter ``pts_block_sizes``) and to blocks the drive can take
    (not smaller than its logical block: 512 B on a 4Kn drive is refused by the kernel)."""
    skipped: list[str] = []

    def usable(sizes: Sequence[str]) -> list[str]:
        out = []
        for bs in sizes:
            if bs not in block_sizes:
                continue
            if parse_block_size(bs) < logical_block:
                skipped.append(f"{bs}: smaller than the drive's {logical_block}-byte "
                               "logical block")
                continue
            out.append(bs)
        return out

    if test == "iops":
        sizes = usable(IOPS_BLOCK_SIZES)
        wl = tuple(Workload(r, bs, iodepth=iodepth) for r in IOPS_MIXES for bs in sizes)
        also = tuple(Workload(r, bs).name for r, bs in IOPS_ALSO_TRACKED if bs in sizes)
        return Loop(wl, Workload(0, TRACKED_BLOCK).name, "iops", tuple(skipped), also)
    if test == "latency":
        sizes = usable(LATENCY_BLOCK_SIZES)
        wl = tuple(Workload(r, bs, iodepth=1) for r in LATENCY_MIXES for bs in sizes)
        return Loop(wl, Workload(0, TRACKED_BLOCK).name, "lat_mean_us", tuple(skipped))
    if test == "throughput" and throughput_block is not None:
        wl = tuple(Workload(r, throughput_block, sequential=True, iodepth=iodepth)
                   for r in (100, 0))
        return Loop(wl, wl[1].name, "mib_s", ())
    raise ValueError(f"unknown PTS round loop {test!r}")


def figures(job: FioJob) -> dict[str, float | None]:
    """One workload's figures from its fio group: IOPS and MiB/s of reads and writes
    together; the mean latency weighted by each direction's I/Os; the larger maximum of the
    two directions; the five-nines of all the I/Os (:func:`five_nines`)."""
    dirs = [d for d in (job.read, job.write) if d.total_ios > 0]
    ios = sum(d.total_ios for d in dirs)
    means = [(d.lat_mean_us, d.total_ios) for d in dirs if d.lat_mean_us is not None]
    mean = sum(m * n for m, n in means) / sum(n for _, n in means) if means else None

    def worst(values: list[float | None]) -> float | None:
        known = [v for v in values if v is not None]
        return max(known) if known else None

    return {
        "iops": sum(d.iops for d in dirs),
        "mib_s": sum(d.bw_kib_s for d in dirs) / 1024,
        "ios": float(ios),
        "lat_mean_us": mean,
        "lat_max_us": worst([d.lat_max_us for d in dirs]),
        "lat_p99999_us": five_nines(job),
    }


def five_nines(job: FioJob) -> float | None:
    """The five-nines completion latency of all a workload's I/Os: one direction's own; a
    mix's from fio's "mixed" direction (unified_rw_reporting=both), else from the two
    directions' json+ histograms merged (``analysis.latency.merged_percentile``); None when
    fio gave neither (never the larger of the two directions': 2 write stalls in 100,000
    writes would make a 65/35 mix's five-nines the stall)."""
    dirs = [d for d in (job.read, job.write) if d.total_ios > 0]
    if len(dirs) == 1:
        return dirs[0].clat_p99999_us
    if job.mixed is not None and job.mixed.clat_p99999_us is not None:
        return job.mixed.clat_p99999_us
    if dirs and all(d.clat_bins for d in dirs):
        # imported here: the command line starts without numpy (test_import_hygiene)
        from ssdbench.analysis.latency import merged_percentile
        return merged_percentile([d.clat_bins for d in dirs], 99.999)
    return None


def round_figures(report: FioReport, workloads: Sequence[Workload]) -> dict[str, Any]:
    """Each workload's figures, matched to fio's groups by name (fio's JSON is untrusted: a
    group missing or misnamed is an error, not a silent gap)."""
    by_name = {j.name: j for j in report.jobs}
    out: dict[str, Any] = {}
    for w in workloads:
        job = by_name.get(w.name)
        if job is None:
            raise StageFailed(f"fio's report has no group {w.name!r} (groups: "
                              f"{', '.join(sorted(by_name)) or 'none'})")
        out[w.name] = figures(job)
    return out


def logical_block_bytes(ctx: RunContext) -> int:
    """The target's logical block size (sysfs; a regular file: 512)."""
    name = ctx.target.kernel_name
    if ctx.target.kind != "block" or not name:
        return 512
    value = sysfs_logical_block(ctx.host, name)
    if value not in (512, 1024, 2048, 4096, 8192, 16384, 32768, 65536):
        raise StageFailed(f"{ctx.target.path}: the kernel's logical block size is "
                          f"{value if value is not None else 'not readable'!r}, not a power "
                          "of two from 512 to 64 KiB")
    return value


@dataclass
class PtsRoundsStage:
    """One PTS round loop: ``test`` (iops | latency | throughput), for throughput one block
    size. Plan parameters: steady_round_s, pts_max_rounds, pts_block_sizes, iodepth."""

    name: str
    test: str
    block_size: str | None = None

    def execute(self, ctx: RunContext) -> None:
        p = ctx.params
        loop = loop_for(self.test, p.pts_block_size_list, logical_block_bytes(ctx), p.iodepth,
                        self.block_size)
        if not any(w.name == loop.tracking for w in loop.workloads):
            raise StageFailed(f"the {self.test} loop has no {loop.tracking} workload to track "
                              f"(pts_block_sizes {p.pts_block_sizes!r})")
        round_s, max_rounds = p.steady_round_s, p.pts_max_rounds
        entry: dict[str, Any] = {
            "test": self.test, "block_size": self.block_size, "round_s": round_s,
            "max_rounds": max_rounds, "tracking": loop.tracking, "metric": loop.metric,
            "also_tracking": list(loop.also),
            "workloads": [{"name": w.name, "read_percent": w.read_percent,
                           "block_size": w.block_size, "sequential": w.sequential,
                           "iodepth": w.iodepth} for w in loop.workloads],
            "skipped": list(loop.skipped), "rounds": [], "steady": None, "state": "running"}
        ctx.record.set_entry("pts", self.name, entry)
        from ssdbench.analysis.iops import SNIA_WINDOW_ROUNDS

        names = (loop.tracking, *loop.also)
        tracked: dict[str, list[float]] = {n: [] for n in names}
        for x in range(1, max_rounds + 1):
            job = jobs.rounds_job(job_target(ctx), stage=f"{self.name}-r{x:02d}",
                                  workloads=loop.workloads, seconds=round_s)
            report = self._run(ctx, job, x, max_rounds)
            entry["rounds"].append({"round": x, "workloads": round_figures(report,
                                                                           loop.workloads)})
            for n in names:
                value = entry["rounds"][-1]["workloads"][n][loop.metric]
                tracked[n].append(float("nan") if value is None else float(value))
            windows = steady_together(tracked, round_s)
            if windows is not None:
                entry["steady"] = {"reached": True, "first_round": x - SNIA_WINDOW_ROUNDS + 1,
                                   "last_round": x, **_window(windows[loop.tracking]),
                                   "also": {n: _window(windows[n]) for n in loop.also}}
            elif x == max_rounds:
                entry["steady"] = {"reached": False,
                                   "first_round": max(1, x - SNIA_WINDOW_ROUNDS + 1),
                                   "last_round": x}
            entry["state"] = "done" if entry["steady"] else "running"
            ctx.record.set_entry("pts", self.name, entry)
            if entry["steady"]:
                return

    def _run(self, ctx: RunContext, job: jobs.JobFile, x: int, max_rounds: int) -> FioReport:
        ctx.record.stage_started(self.name, job.relpath)

        def on_status(status: LiveStatus) -> None:
            ctx.emit(self.name, "running", f"round {x} of at most {max_rounds}",
                     fraction=(x - 1 + (status.fraction or 0.0)) / max_rounds,
                     elapsed_s=status.elapsed_s, iops=status.iops, mib_s=status.mib_s)

        return finished_report(ctx, run_fio(
            ctx.host.runner, ctx.run_dir, job, on_status=on_status, cancel=ctx.cancel,
            status_timeout_s=float(ctx.params.status_timeout_s)))


def steady_together(tracked: dict[str, list[float]], round_s: int) -> dict[str, Any] | None:
    """Each tracking variable's steady window when every one of them is steady by the PTS
    rule over the same last five rounds (PTS-E 2.0: all the tracking variables), else None.
    ``tracked``: each variable's value per round so far, in round order."""
    # imported here: numpy is loaded once a stage needs it (`ssdbench list` and kiosk
    # start stay quick under emulation)
    import numpy as np

    from ssdbench.analysis.iops import SNIA_WINDOW_ROUNDS, first_steady_window

    windows: dict[str, Any] = {}
    for name, values in tracked.items():
        if len(values) < SNIA_WINDOW_ROUNDS:
            return None
        w = first_steady_window(np.asarray(values, dtype=np.float64),
                                first=len(values) - SNIA_WINDOW_ROUNDS, round_s=round_s)
        if w is None:
            return None
        windows[name] = w
    return windows


def _window(w: Any) -> dict[str, float]:
    return {"mean": w.window_mean, "range": w.window_range,
            "slope_excursion": w.window_slope_excursion}


@dataclass
class WipcStage:
    """SNIA PTS workload-independent preconditioning: ``pts_wipc_passes`` passes of 128 KiB
    sequential writes over the span (the fill's job; stage "fill" keeps fill.csv and the
    report's fill section). With 0 passes it writes nothing and run.json ``wipc`` says so."""

    name: str = "fill"

    def execute(self, ctx: RunContext) -> None:
        passes = ctx.params.pts_wipc_passes
        ctx.record.set_entry("wipc", self.name, {"passes": passes, "block_size": "128k"})
        if passes == 0:
            return
        FioStage(self.name, lambda c: jobs.fill_job(
            job_target(c), block_size="128k", passes=passes, stage=self.name)).execute(ctx)
