"""fio job files: the exact jobs behind every number, written to the run's ``jobs/`` folder.

Every measurement stage is one fio job file. ssdbench starts fio on that file from the run
folder (``fio --output-format=json --status-interval=1 jobs/<stage>.fio``) and the log
prefixes inside it are relative (``fio/<stage>``), so a user can re-run exactly what produced
a number with ``cd <run folder> && fio jobs/<stage>.fio``.

The fill and the read scan cover every byte of the span, also when the span is not a
multiple of their block size (real capacities rarely are a multiple of 128 KiB or 1 MiB):
fio moves whole blocks only, so the job file gets a second job, ``[<stage>-tail]``, after a
``stonewall``: one I/O of the remaining bytes (``offset=<aligned end>``, ``size=bs=<tail>``),
without logs of its own. fio reports it as a second job of the same JSON; its bytes count
in the totals and the strict coverage check (docs/engine.md "Odd spans").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path

from ssdbench import __version__
from ssdbench.results import atomic

IOENGINES = ("libaio", "io_uring")
# fio's latency histogram has 1856 bins (FIO_IO_U_PLAT_NR); coarseness c sums 2**c of them.
HIST_BINS = 1856
_SIZE_RE = re.compile(r"^(\d+)([kmg]?)$", re.IGNORECASE)
_UNITS = {"": 1, "k": 1024, "m": 1024**2, "g": 1024**3}


def parse_block_size(text: str) -> int:
    """``4k`` → 4096 (fio's binary units); raise ValueError for anything else."""
    match = _SIZE_RE.match(text.strip())
    if not match:
        raise ValueError(f"expected a size like 4k, 128k or 1m, got {text!r}")
    value = int(match.group(1)) * _UNITS[match.group(2).lower()]
    if value < 512 or value % 512:
        raise ValueError(f"a block size must be a multiple of 512 bytes, got {text!r}")
    return value


@dataclass(frozen=True)
class JobTarget:
    """Where and how a job does its I/O."""

    path: str  # block device, partition, or a regular file (tests)
    span_bytes: int  # the test span: the whole target
    ioengine: str = "libaio"
    iodepth: int = 32
    direct: bool = True  # False only for regular files on filesystems without O_DIRECT


@dataclass(frozen=True)
class JobFile:
    """One fio job for one stage, and what the runner needs to know to follow it."""

    stage: str  # jobs/<stage>.fio, fio/<stage>.json, fio/<stage>_<kind>.1.log
    text: str
    direction: str  # "write" or "read": which counters progress follows
    runtime_s: int | None  # time_based jobs: the duration
    total_bytes: int | None  # size-based jobs: bytes the job moves in all
    read_only: bool = False  # started with fio --readonly: fio itself refuses any write
    io_size: int | None = None  # time-based IOPS jobs: the constant bytes per I/O
    bytes_goal: int | None = None  # a job that ends at this many bytes or runtime_s (WSAT)

    @property
    def relpath(self) -> str:
        return f"jobs/{self.stage}.fio"

    def write(self, run_dir: Path) -> Path:
        """Write jobs/<stage>.fio atomically and make sure fio/ exists for the logs."""
        (run_dir / "fio").mkdir(parents=True, exist_ok=True)
        path = run_dir / self.relpath
        atomic.write_text(path, self.text)
        return path


def _render(
    stage: str, target: JobTarget, options: list[tuple[str, object]], purpose: str,
    destructive: bool,
) -> str:
    # `readonly` is a command-line switch of fio, not a job option (fio 3.33 rejects it in
    # a job file): read-only jobs are started with --readonly (see fio_argv).
    readonly = "" if destructive else " --readonly"
    lines = [
        f"# ssdbench {__version__}: stage {stage!r} ({purpose})",
        "# Re-run by hand from the run folder (logs go to fio/):",
        f"#   fio --output-format=json{readonly} jobs/{stage}.fio",
    ]
    if destructive:
        lines.append(f"# WARNING: this job overwrites data on {target.path}")
    else:
        lines.append("# Read-only: this job never writes (fio --readonly refuses writes).")
    lines += [
        "",
        "[global]",
        f"filename={target.path}",
        f"ioengine={target.ioengine}",
        f"iodepth={target.iodepth}",
        f"direct={int(target.direct)}",
        "thread=1",  # one process: if fio dies, its I/O stops with it
        "group_reporting=1",
        "",
        f"[{stage}]",
    ]
    for key, value in options:
        lines.append(key if value is None else f"{key}={value}")
    return "\n".join(lines) + "\n"


# New incompressible bytes in every I/O of every pass. fio's default randrepeat=1 seeds the
# buffer generator from the job number, so two runs of the same job (the three TRIM probes,
# two fills) would write byte-identical data that a deduplicating controller could skip.
FRESH_DATA: tuple[tuple[str, object], ...] = (("randrepeat", 0), ("refill_buffers", 1))


def _bw_log(stage: str) -> list[tuple[str, object]]:
    return [
        ("write_bw_log", f"fio/{stage}"),
        ("write_iops_log", f"fio/{stage}"),
        ("log_avg_msec", 1000),
        ("per_job_logs", 1),
    ]


def split_span(span_bytes: int, block_bytes: int) -> tuple[int, int]:
    """(whole-block bytes, tail bytes) of a span for sequential jobs of ``block_bytes``."""
    tail = span_bytes % block_bytes
    return span_bytes - tail, tail


def _sequential(
    stage: str, target: JobTarget, block_size: str, rw: str, extra: list[tuple[str, object]],
) -> tuple[list[tuple[str, object]], str]:
    """Options of a whole-span sequential job, and the tail job text it needs (or "")."""
    bs = parse_block_size(block_size)
    whole, tail = split_span(target.span_bytes, bs)
    if whole == 0:  # a span smaller than one block (tests): one job of one short block
        block_size, tail = str(tail), 0
    head: list[tuple[str, object]] = [
        ("rw", rw), ("bs", block_size), ("size", "100%" if not tail else whole)]
    if not tail:
        return head, ""
    loops = [(k, v) for k, v in extra if k in ("loops", "refill_buffers", "randrepeat")]
    lines = [
        "",
        f"# The last {tail} bytes of the span: not a whole {bs}-byte block, so one I/O of",
        "# their size, after the job above (stonewall). No logs: it takes milliseconds.",
        f"[{stage}-tail]",
        "stonewall",
        f"rw={rw}",
        f"bs={tail}",
        f"offset={whole}",
        f"size={tail}",
        *(f"{k}={v}" for k, v in loops),
    ]
    return head, "\n".join(lines) + "\n"


def fill_job(target: JobTarget, *, block_size: str = "128k", passes: int = 1,
             stage: str = "fill") -> JobFile:
    """Sequential incompressible writes over every byte of the span, ``passes`` times
    (a span that is not a multiple of ``block_size`` gets a tail job, see above)."""
    if passes < 1:
        raise ValueError("a fill writes the span at least once")
    extra: list[tuple[str, object]] = [("loops", passes), *FRESH_DATA]
    head, tail = _sequential(stage, target, block_size, "write", extra)
    options = [*head, *extra, *_bw_log(stage)]
    text = _render(stage, target, options, f"sequential fill, {passes} pass(es)", True)
    return JobFile(stage, text + tail, "write", None, target.span_bytes * passes)


def _random_writes(block_size: str) -> list[tuple[str, object]]:
    """Incompressible random writes over the whole span, offsets drawn afresh (no random
    map: the same block may come twice, as a host's writes do)."""
    return [("rw", "randwrite"), ("bs", block_size), ("numjobs", 1), ("size", "100%"),
            ("norandommap", 1), ("randrepeat", 0), ("refill_buffers", 1)]


def _second_logs(stage: str, hist_coarseness: int) -> list[tuple[str, object]]:
    """The per-second IOPS, bandwidth and latency logs and the latency histograms of an IOPS
    stage (fio/<stage>_*.1.log)."""
    if not 0 <= hist_coarseness <= 6:
        raise ValueError("hist_coarseness must be 0..6")
    return [
        ("write_iops_log", f"fio/{stage}"),
        ("write_bw_log", f"fio/{stage}"),
        ("write_lat_log", f"fio/{stage}"),
        ("log_avg_msec", 1000),
        ("write_hist_log", f"fio/{stage}"),
        ("log_hist_msec", 1000),
        ("log_hist_coarseness", hist_coarseness),
        ("per_job_logs", 1),
    ]


def torture_job(
    target: JobTarget, *, seconds: int, block_size: str = "4k", hist_coarseness: int = 3,
    stage: str = "torture",
) -> JobFile:
    """4 KiB random writes at QD32 for ``seconds``, with per-second logs and histograms."""
    io_size = parse_block_size(block_size)
    options: list[tuple[str, object]] = [
        *_random_writes(block_size),
        ("time_based", 1),
        ("runtime", f"{seconds}s"),
        *_second_logs(stage, hist_coarseness),
    ]
    text = _render(stage, target, options, f"random-write torture, {seconds} s", True)
    return JobFile(stage, text, "write", seconds, None, io_size=io_size)


def wsat_job(
    target: JobTarget, *, capacity_multiple: float, max_seconds: int, block_size: str = "4k",
    hist_coarseness: int = 3, stage: str = "wsat",
) -> JobFile:
    """SNIA PTS write saturation: random writes at the target's queue depth from the purge
    on, until ``capacity_multiple`` times the span is written (fio's io_size: random offsets
    over the whole span, wrapping) or ``max_seconds`` pass, whichever comes first; the same
    per-second logs and histograms as the torture."""
    io_size = parse_block_size(block_size)
    goal = int(capacity_multiple * target.span_bytes) // io_size * io_size
    if goal < io_size:
        raise ValueError(f"WSAT writes {capacity_multiple:g} × the span: less than one block")
    options: list[tuple[str, object]] = [
        *_random_writes(block_size),
        ("io_size", goal),
        ("runtime", f"{max_seconds}s"),
        *_second_logs(stage, hist_coarseness),
    ]
    text = _render(stage, target, options,
                   f"write saturation: {capacity_multiple:g} × the span or {max_seconds} s",
                   True)
    return JobFile(stage, text, "write", max_seconds, None, io_size=io_size, bytes_goal=goal)


def hir_idle_job(
    target: JobTarget, *, burst_s: int, wait_s: int, bursts: int, block_size: str = "4k",
    hist_coarseness: int = 3,
) -> JobFile:
    """SNIA PTS host idle recovery, one idle period: random writes in bursts of ``burst_s``
    with ``wait_s`` of idle after each (fio thinktime_iotime / thinktime: fio waits for the
    writes in flight, then idles), ``bursts`` + 1 of them (fio's first burst also runs
    through the first idle period: the analysis leaves the first burst out)."""
    io_size = parse_block_size(block_size)
    if burst_s < 1 or wait_s < 1 or bursts < 1:
        raise ValueError("HIR needs bursts and idle periods of at least a second")
    stage = f"hir-idle-{wait_s}"
    seconds = (bursts + 1) * (burst_s + wait_s)
    options: list[tuple[str, object]] = [
        *_random_writes(block_size),
        ("time_based", 1),
        ("runtime", f"{seconds}s"),
        ("thinktime", f"{wait_s}s"),
        ("thinktime_iotime", f"{burst_s}s"),
        *_second_logs(stage, hist_coarseness),
    ]
    text = _render(stage, target, options, f"host idle recovery: {bursts} + 1 bursts of "
                   f"{burst_s} s, {wait_s} s idle after each", True)
    return JobFile(stage, text, "write", seconds, None, io_size=io_size)


def probe_job(target: JobTarget, *, phase: str, probe_bytes: int,
              block_size: str = "128k", offset: int = 0) -> JobFile:
    """Sequential incompressible write of ``probe_bytes`` from ``offset`` of the span."""
    bs = parse_block_size(block_size)
    if not 0 <= offset < target.span_bytes:
        raise ValueError(f"probe offset {offset} B is outside the span ({target.span_bytes} B)")
    size = min(probe_bytes, target.span_bytes - offset)
    size -= size % bs
    if size <= 0:
        raise ValueError(f"probe size {probe_bytes} B is smaller than one block ({bs} B)")
    stage = f"probe-{phase}"
    options: list[tuple[str, object]] = [
        ("rw", "write"),
        ("bs", block_size),
        ("offset", offset),
        ("size", size),
        *FRESH_DATA,
        *_bw_log(stage),
    ]
    text = _render(stage, target, options,
                   f"TRIM probe {phase}, {size} bytes at offset {offset}", True)
    return JobFile(stage, text, "write", None, size)


def readscan_job(target: JobTarget, *, block_size: str = "1m") -> JobFile:
    """Full-span sequential read, MiB/s per second; opened read-only (a tail job reads the
    last partial block)."""
    head, tail = _sequential("readscan", target, block_size, "read", [])
    options = [*head, *_bw_log("readscan")]
    text = _render("readscan", target, options, "full-span sequential read scan", False)
    return JobFile("readscan", text + tail, "read", None, target.span_bytes, read_only=True)


def randread_job(
    target: JobTarget, *, seconds: int = 60, block_size: str = "4k", hist_coarseness: int = 3,
) -> JobFile:
    """4 KiB random reads at the target's queue depth for ``seconds``; read-only."""
    io_size = parse_block_size(block_size)
    options: list[tuple[str, object]] = [
        ("rw", "randread"),
        ("bs", block_size),
        ("size", "100%"),
        ("norandommap", 1),
        ("randrepeat", 0),
        ("time_based", 1),
        ("runtime", f"{seconds}s"),
        ("write_lat_log", "fio/randread"),
        ("write_hist_log", "fio/randread"),
        ("log_hist_msec", 1000),
        ("log_hist_coarseness", hist_coarseness),
        *_bw_log("randread"),
    ]
    text = _render("randread", target, options, f"random read, {seconds} s", False)
    return JobFile("randread", text, "read", seconds, None, read_only=True, io_size=io_size)


@dataclass(frozen=True)
class Workload:
    """One workload of a SNIA PTS round: a read share, a block size, random or sequential,
    and its queue depth (None: the target's)."""

    read_percent: int  # 100: reads only, 0: writes only
    block_size: str  # fio's form: 4k, 1m, 512
    sequential: bool = False
    iodepth: int | None = None

    @property
    def mix(self) -> str:
        """The PTS's R/W mix label, e.g. ``65/35``."""
        return f"{self.read_percent}/{100 - self.read_percent}"

    @property
    def name(self) -> str:
        """fio's job name and the record's key, e.g. ``rnd-4k-65_35``."""
        kind = "seq" if self.sequential else "rnd"
        return f"{kind}-{self.block_size}-{self.read_percent}_{100 - self.read_percent}"

    def options(self) -> list[tuple[str, object]]:
        if not 0 <= self.read_percent <= 100:
            raise ValueError(f"a read share is 0..100 %, got {self.read_percent}")
        prefix = "" if self.sequential else "rand"
        if self.read_percent == 100:
            rw: list[tuple[str, object]] = [("rw", f"{prefix}read")]
        elif self.read_percent == 0:
            rw = [("rw", f"{prefix}write")]
        else:
            rw = [("rw", f"{prefix}rw"), ("rwmixread", self.read_percent)]
        depth = [] if self.iodepth is None else [("iodepth", self.iodepth)]
        spread = [] if self.sequential else [("norandommap", 1)]
        return [*rw, ("bs", self.block_size), *depth, ("size", "100%"), *spread]


def rounds_job(target: JobTarget, *, stage: str, workloads: Sequence[Workload],
               seconds: int) -> JobFile:
    """One round of a SNIA PTS test: each workload for ``seconds``, one after the other
    (fio ``stonewall``: a group each, so fio's JSON has one entry per workload, in order),
    with fresh incompressible data and fio's five-nines completion latency, per direction
    and of all the workload's I/Os (``unified_rw_reporting=both``: fio's "mixed")."""
    if not workloads:
        raise ValueError("a round needs at least one workload")
    if seconds < 1:
        raise ValueError("a round's workload lasts at least one second")
    names = [w.name for w in workloads]
    if len(set(names)) != len(names):
        raise ValueError(f"a workload appears twice in a round: {names}")
    writes = any(w.read_percent < 100 for w in workloads)
    head = _render(stage, target, [], f"SNIA PTS round: {len(workloads)} workloads of "
                   f"{seconds} s", writes)
    # _render ends with the stage's own (empty) section: the workloads are the sections
    lines = head.rstrip("\n").splitlines()[:-1]
    while lines and not lines[-1]:
        lines.pop()
    common: list[tuple[str, object]] = [*FRESH_DATA, ("time_based", 1),
                                        ("runtime", f"{seconds}s"),
                                        ("percentile_list", "99:99.99:99.999"),
                                        # reads and writes also as one "mixed" direction:
                                        # the five-nines of a mix is of all its I/Os
                                        ("unified_rw_reporting", "both")]
    for w in workloads:
        lines += ["", f"[{w.name}]", "stonewall"]
        lines += [f"{k}={v}" for k, v in (*w.options(), *common)]
    direction = "write" if writes else "read"
    return JobFile(stage, "\n".join(lines) + "\n", direction, seconds * len(workloads), None,
                   read_only=not writes)


def speed_job(
    target: JobTarget, *, stage: str, block_size: str, sequential: bool, iodepth: int,
    numjobs: int, seconds: int, ramp_seconds: int, size_bytes: int, write: bool = False,
) -> JobFile:
    """One corner of the speed plan (CrystalDiskMark's: SEQ1M Q8T1, SEQ1M Q1T1, RND4K
    Q32T16, RND4K Q1T1): ``numjobs`` threads at ``iodepth`` each, over the first
    ``size_bytes`` of the span (each thread its own copy of the region, as CrystalDiskMark's
    threads share its one test file), ``ramp_seconds`` not counted, then ``seconds``
    measured. Reads are started with fio --readonly (fio refuses any write); writes
    (``write``) write fresh incompressible data."""
    bs = parse_block_size(block_size)
    size = min(size_bytes, target.span_bytes)
    size -= size % bs
    if size <= 0:
        raise ValueError(f"the speed region ({size_bytes} B) is smaller than one block "
                         f"({bs} B)")
    if seconds < 1 or ramp_seconds < 0 or iodepth < 1 or numjobs < 1:
        raise ValueError("a speed corner needs a runtime of at least 1 s, a ramp of at "
                         "least 0 s, and a queue depth and thread count of at least 1")
    prefix = "" if sequential else "rand"
    rw = f"{prefix}{'write' if write else 'read'}"
    options: list[tuple[str, object]] = [
        ("rw", rw),
        ("bs", block_size),
        ("iodepth", iodepth),
        ("numjobs", numjobs),
        ("size", size),
        *([] if sequential else [("norandommap", 1)]),
        ("randrepeat", 0),
        *([("refill_buffers", 1)] if write else []),
        ("time_based", 1),
        ("ramp_time", f"{ramp_seconds}s"),
        ("runtime", f"{seconds}s"),
    ]
    text = _render(stage, target, options,
                   f"speed corner: {rw} {block_size} Q{iodepth}T{numjobs}, {ramp_seconds} s "
                   f"ramp + {seconds} s", write)
    direction = "write" if write else "read"
    return JobFile(stage, text, direction, ramp_seconds + seconds, None, read_only=not write)
