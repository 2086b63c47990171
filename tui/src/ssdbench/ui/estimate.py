"""How long a plan takes on a drive, before it runs (documented in docs/tui.md).

    total = Σ over the plan's runs of  erase + fill + torture + probes + trim  (destructive)
          | read scan + random read                                          (diagnose)
          | 4 (8 with speed_writes) × (speed_ramp_seconds + speed_seconds)    (speed)

    span       = size × (100 − op) / 100
    erase      = no secure method: 10 s (discard); ATA: the drive's own erase estimate
                 (enhanced when supported); else 60 s (NVMe sanitize/format)
    fill       = span × fill_passes / write speed
    torture    = torture_seconds (consistency) or trim_torture_seconds (trim)
    probe      = min(probe size, span) / write speed, three probes in a TRIM run
    trim       = 10 s (blkdiscard of the span)
    read scan  = size / read speed;  random read = random_read_seconds
    wsat       = min(wsat_capacity_multiple × span / (random-write IOPS × block size),
                     wsat_seconds)
    hir        = wsat + Σ over hir_waits w of (hir_repetitions + 1) × (burst + w)
                 + hir_repetitions × burst   (burst = hir_burst_seconds)

Expected sequential speeds by transport (MiB/s, write / read) are conservative
steady-state figures (after the SLC cache), not the box numbers.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ssdbench.devices import Drive
from ssdbench.fio.jobs import parse_block_size
from ssdbench.plan.plans import READ_ONLY_KINDS, Plan
from ssdbench.stages.params import PTS_LOOP_KINDS, RunParams

MIB = 1024 * 1024

# transport → (sequential write MiB/s, sequential read MiB/s)
EXPECTED_SPEED: dict[str, tuple[float, float]] = {
    "nvme": (1000.0, 2000.0),
    "sata": (400.0, 500.0),
    "ata": (400.0, 500.0),
    "sas": (400.0, 500.0),
    "scsi": (300.0, 400.0),
    "usb": (100.0, 200.0),
    "mmc": (30.0, 80.0),
}
DEFAULT_SPEED = (300.0, 400.0)
# transport → 4 KiB random writes per second at QD32 after the spare runs out: what a WSAT
# spends most of its writes at (the fresh-out-of-box rate is several times higher)
EXPECTED_RANDOM_WRITE_IOPS: dict[str, float] = {
    "nvme": 25_000.0, "sata": 8_000.0, "ata": 8_000.0, "sas": 8_000.0, "scsi": 5_000.0,
    "usb": 1_000.0, "mmc": 200.0,
}
DEFAULT_RANDOM_WRITE_IOPS = 5_000.0
NVME_ERASE_S = 60.0
DISCARD_S = 10.0
TRIM_S = 10.0
GRADE_S = 10.0  # two smartctl -x reads
AUTHENTICITY_S = 60.0  # the quick capacity check: "about a minute"
SELF_TEST_SHORT_S = 120.0  # ATA and NVMe short self-tests: about two minutes
SELF_TEST_EXTENDED_S = 3600.0  # an hour assumed; the drive's own estimate shows once started


@dataclass(frozen=True)
class Estimate:
    seconds: float
    parts: tuple[tuple[str, float], ...]  # (run/stage, seconds)


def expected_speed(drive: Drive) -> tuple[float, float]:
    return EXPECTED_SPEED.get(drive.transport, DEFAULT_SPEED)


def erase_seconds(drive: Drive, erase_fallback: str) -> float:
    """The engine uses the best secure method the drive has; without one, discard, or with
    erase_fallback "overwrite" one pass over the drive at its write speed."""
    if not drive.erase_methods:
        if erase_fallback == "overwrite" and drive.size_bytes:
            return drive.size_bytes / (expected_speed(drive)[0] * MIB)
        return DISCARD_S
    sec = drive.ata_security
    if sec is not None and drive.nvme is None:
        enhanced = sec.enhanced_supported
        minutes = sec.enhanced_erase_minutes if enhanced else sec.erase_minutes
        if minutes is None:
            minutes = sec.erase_minutes or sec.enhanced_erase_minutes
        if minutes is not None:
            return minutes * 60.0
    return NVME_ERASE_S if drive.nvme is not None else DISCARD_S


def estimate(drive: Drive, runs: list[tuple[str, int]], params: RunParams,
             erase_fallback: str = "fail") -> Estimate:
    """``runs`` is [(kind, op_percent)] in plan order."""
    write, read = expected_speed(drive)
    parts: list[tuple[str, float]] = []
    for kind, op in runs:
        label = kind if not op else f"{kind}-op{op}"
        if kind == "diagnose":
            parts.append((f"{label}/readscan", drive.size_bytes / MIB / read))
            parts.append((f"{label}/randread", float(params.random_read_seconds)))
            continue
        if kind == "surface":  # every block read once, at the drive's sequential read
            parts.append((f"{label}/surface", drive.size_bytes / MIB / read))
            continue
        if kind == "speed":  # four corners (eight with the writes), each ramp + measured
            corners = 8 if params.speed_writes else 4
            parts.append((f"{label}/speed", float(corners * (params.speed_ramp_seconds
                                                             + params.speed_seconds))))
            continue
        if kind == "grade":  # the drive's self-test (its own estimate is read when it
            # starts), then two smartctl reads
            test = {"short": SELF_TEST_SHORT_S, "extended": SELF_TEST_EXTENDED_S}.get(
                str(getattr(params, "self_test", "none")), 0.0)
            if test:
                parts.append((f"{label}/self-test", test))
            parts.append((f"{label}/grade", GRADE_S))
            continue
        if kind == "authenticity":  # at most 65,536 tagged blocks written and read
            parts.append((f"{label}/authenticity", AUTHENTICITY_S))
            if str(getattr(params, "capacity_check", "quick")) == "full":
                # then every block written and read back
                parts.append((f"{label}/full-check", drive.size_bytes / MIB / write
                              + drive.size_bytes / MIB / read))
            continue
        parts.append((f"{label}/erase", erase_seconds(drive, erase_fallback)))
        if kind == "erase":  # purge and verify only: the read-back is a few blocks
            continue
        span = drive.size_bytes * (100 - op) / 100
        if kind in ("wsat", "hir"):
            parts.append((f"{label}/wsat", wsat_seconds(drive, span, params)))
            if kind == "hir":
                parts.append((f"{label}/hir", float(hir_seconds(params))))
            continue
        if kind in PTS_LOOP_KINDS:
            parts += pts_parts(label, kind, span / MIB / write, params,
                               erase_s=erase_seconds(drive, erase_fallback))
            continue
        fill = span * params.fill_passes / MIB / write
        probe = min(params.probe_bytes, span / 3) / MIB / write  # three windows
        if kind == "trim":
            parts += [(f"{label}/probe-clean", probe), (f"{label}/fill", fill),
                      (f"{label}/torture", float(params.trim_torture_seconds)),
                      (f"{label}/settle", float(params.trim_idle_seconds)),
                      (f"{label}/probe-after_torture", probe),
                      (f"{label}/trim", TRIM_S + params.trim_idle_seconds),
                      (f"{label}/probe-after_trim", probe)]
        else:
            parts += [(f"{label}/fill", fill),
                      (f"{label}/torture", float(params.torture_seconds))]
    return Estimate(sum(s for _, s in parts), tuple(parts))


def pts_parts(label: str, kind: str, span_write_s: float, params: RunParams, *,
              erase_s: float) -> list[tuple[str, float]]:
    """A SNIA PTS round loop at its longest: the WIPC (``pts_wipc_passes`` writes of the
    span, ``span_write_s`` each), then ``pts_max_rounds`` rounds of every workload for
    ``steady_round_s`` (a drive steady after five rounds takes a fifth of that); throughput
    does both for each of its two block sizes, with an erase (``erase_s``) before the
    second."""
    from ssdbench.stages.pts import THROUGHPUT_BLOCK_SIZES, loop_for

    def workloads(block: str | None = None) -> int:
        # the stage's own workload list (a 512-byte logical block: every size counted)
        return len(loop_for(kind, params.pts_block_size_list, 512, params.iodepth,
                            block).workloads)

    wipc = params.pts_wipc_passes * span_write_s
    rounds = params.pts_max_rounds * params.steady_round_s
    if kind != "throughput":
        return [(f"{label}/wipc", wipc), (f"{label}/rounds", float(workloads() * rounds))]
    out: list[tuple[str, float]] = []
    for i, bs in enumerate(THROUGHPUT_BLOCK_SIZES):
        out += [(f"{label}/erase-{bs}", erase_s)] if i else []
        out += [(f"{label}/wipc-{bs}", wipc), (f"{label}/rounds-{bs}",
                                               float(workloads(bs) * rounds))]
    return out


def random_write_iops(drive: Drive) -> float:
    """The transport's expected steady random-write rate (a WSAT's writes after the cliff)."""
    return EXPECTED_RANDOM_WRITE_IOPS.get(drive.transport, DEFAULT_RANDOM_WRITE_IOPS)


def wsat_seconds(drive: Drive, span: float, params: RunParams,
                 iops: float | None = None) -> float:
    """WSAT: the goal's writes at ``iops`` (default: the transport's expected steady random
    write rate), or wsat_seconds when that is sooner."""
    rate = iops or random_write_iops(drive)
    block = parse_block_size(params.block_size_torture)
    return min(params.wsat_capacity_multiple * span / (rate * block),
               float(params.wsat_seconds))


def hir_seconds(params: RunParams) -> int:
    """HIR after its WSAT: each idle period's bursts (one more than the repetitions: fio's
    first runs on through the first idle) and its return to the baseline."""
    b, n = params.hir_burst_seconds, params.hir_repetitions
    return sum((n + 1) * (b + w) + n * b for w in params.hir_wait_list)


def stage_estimates(drive: Drive, plan: Plan) -> dict[tuple[str, str], float]:
    """The estimate of each (run name, stage) of ``plan`` (the run screen's plan ETA starts
    from these; stages the formula has no term for, e.g. partition, count 0)."""
    out: dict[tuple[str, str], float] = {}
    for run in plan.runs:
        est = estimate(drive, [(run.kind, run.op_percent)], plan.params_for(run),
                       plan.params.erase_fallback)
        for label, seconds in est.parts:
            out[(run.name, label.rsplit("/", 1)[1])] = seconds
    return out


def basis(drive: Drive, kinds: Sequence[str] = (), params: RunParams | None = None) -> str:
    """How the estimate was made, in one line of words (the plan screen prints it); with the
    plan's run kinds, also the random-write rate a WSAT assumes and the PTS round loops'
    most rounds."""
    write, read = expected_speed(drive)
    p = params or RunParams()
    if kinds and all(k in READ_ONLY_KINDS for k in kinds):
        # nothing erased (the speed plan's write corners, if on, are timed, not a rate):
        # what these runs' minutes rest on
        said = []
        if {"diagnose", "surface"} & set(kinds):
            said.append(f"{read:.0f} MiB/s reads assumed ({drive.transport or '?'})")
        if "grade" in kinds:
            test = str(getattr(p, "self_test", "none"))
            said.append("no self-test" if test == "none" else
                        f"a {test} self-test of {fmt_minutes(test)} assumed (the drive's "
                        "own estimate once it starts)")
        if "speed" in kinds:
            said.append(f"{8 if p.speed_writes else 4} speed corners of "
                        f"{p.speed_ramp_seconds} s ramp + {p.speed_seconds} s measured"
                        + (" (reads and writes)" if p.speed_writes else ""))
        return ", ".join(said) or "read-only runs"
    sec = drive.ata_security
    if not drive.erase_methods:
        erase = f"erase by discard {DISCARD_S:.0f} s"
    elif sec is not None and drive.nvme is None and (sec.erase_minutes
                                                      or sec.enhanced_erase_minutes):
        erase = "erase time from the drive's IDENTIFY"
    else:
        erase = f"erase {NVME_ERASE_S:.0f} s assumed"
    out = f"{write:.0f} MiB/s writes assumed ({drive.transport or '?'}), {erase}"
    if {"wsat", "hir"} & set(kinds):
        out += f", WSAT at {random_write_iops(drive):,.0f} random-write IOPS"
    if set(PTS_LOOP_KINDS) & set(kinds):
        most = (params or RunParams()).pts_max_rounds
        out += f", PTS rounds at their most ({most}; steady after 5 takes a fifth)"
    return out


def fmt_minutes(test: str) -> str:
    seconds = SELF_TEST_SHORT_S if test == "short" else SELF_TEST_EXTENDED_S
    return f"{seconds / 60:.0f} min"
