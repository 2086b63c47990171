"""The stage lists of each kind of run. The "partition" stage (OP) sits between erase and
fill: every stage after it targets ``ctx.target``, which it may replace."""

from __future__ import annotations

from ssdbench.record.stage import CertifiedEraseStage
from ssdbench.stages.authenticity import AuthenticityStage
from ssdbench.stages.base import Stage
from ssdbench.stages.discard import EraseStage, SettleStage, TrimStage
from ssdbench.stages.grade import GradeStage
from ssdbench.stages.health import HealthStage
from ssdbench.stages.measure import (
    HirStage,
    fill_stage,
    randread_stage,
    readscan_stage,
    torture_stage,
    wsat_stage,
)
from ssdbench.stages.partition import PartitionStage
from ssdbench.stages.probe import probe_stage
from ssdbench.stages.pts import THROUGHPUT_BLOCK_SIZES, PtsRoundsStage, WipcStage
from ssdbench.stages.selftest import SelfTestStage
from ssdbench.stages.speed import SpeedStage
from ssdbench.stages.surface import SurfaceStage

KINDS = ("consistency", "trim", "diagnose", "erase", "grade", "authenticity", "wsat", "hir",
         "iops", "throughput", "latency", "speed", "surface")


def consistency_stages(*, erase: bool = True, op_percent: int = 0) -> list[Stage]:
    """erase → partition (OP table, or wipe a leftover one at 0%) → fill → torture."""
    stages: list[Stage] = [EraseStage()] if erase else []
    return [*stages, PartitionStage(op_percent), fill_stage(), torture_stage("torture_seconds")]


def trim_stages(*, erase: bool = True) -> list[Stage]:
    """erase → probe clean → fill → torture → idle (settle) → probe after_torture → TRIM
    and the same idle → probe after_trim; each probe in its own window of the span
    (stages/probe.py)."""
    stages: list[Stage] = [EraseStage()] if erase else []
    return [
        *stages,
        probe_stage("clean"),
        fill_stage(),
        torture_stage("trim_torture_seconds"),
        SettleStage(),
        probe_stage("after_torture"),
        TrimStage(),
        probe_stage("after_trim"),
    ]


def diagnose_stages() -> list[Stage]:
    """Non-destructive: health, full-span sequential read, 4 KiB random read, health."""
    return [HealthStage("before"), readscan_stage(), randread_stage(), HealthStage("after")]


def stages_for(kind: str, *, erase: bool = True, op_percent: int = 0) -> list[Stage]:
    if kind == "consistency":
        return consistency_stages(erase=erase, op_percent=op_percent)
    if kind == "trim":
        return trim_stages(erase=erase)
    if kind == "diagnose":
        return diagnose_stages()
    if kind in ("wsat", "hir"):  # SNIA PTS write saturation from the purge; host idle
        # recovery after it (the WSAT is its preconditioning)
        stages: list[Stage] = [EraseStage()] if erase else []
        stages += [PartitionStage(0), wsat_stage()]
        return [*stages, HirStage()] if kind == "hir" else stages
    if kind in ("iops", "latency"):  # SNIA PTS: purge, WIPC, rounds until steady
        stages = [EraseStage()] if erase else []
        return [*stages, PartitionStage(0), WipcStage(), PtsRoundsStage(kind, kind)]
    if kind == "throughput":  # the PTS purges and preconditions again for each block size
        stages = [EraseStage()] if erase else []
        stages += [PartitionStage(0)]
        for i, bs in enumerate(THROUGHPUT_BLOCK_SIZES):
            again = f"-{bs}" if i else ""
            if i and erase:
                stages.append(EraseStage(f"erase{again}"))
            stages += [WipcStage(f"fill{again}"), PtsRoundsStage(f"throughput-{bs}", kind, bs)]
        return stages
    if kind == "authenticity":  # destructive: tagged blocks across the claimed span
        return [AuthenticityStage()]
    if kind == "grade":  # read-only: the drive's own counters graded (grade/rules.py)
        return [HealthStage("before"), SelfTestStage(), GradeStage()]
    if kind == "speed":  # CrystalDiskMark's four corners; reads only unless speed_writes
        return [SpeedStage()]
    if kind == "surface":  # read-only: every block read once, timed (a hard disk's view)
        return [SurfaceStage()]
    if kind == "erase":  # purge and verify only; writes the erase record (ssdbench.record)
        return [CertifiedEraseStage()]
    raise ValueError(f"unknown run kind {kind!r} (known: {', '.join(KINDS)})")
