"""The stage lists of each kind of run. The "op-partition" stage (issue 5) slots in
between erase and fill: every stage after it targets ``ctx.target``, which it may replace."""

from __future__ import annotations

from ssdbench.stages.base import Stage
from ssdbench.stages.discard import EraseStage, TrimStage
from ssdbench.stages.measure import (
    fill_stage,
    probe_stage,
    randread_stage,
    readscan_stage,
    torture_stage,
)

KINDS = ("consistency", "trim", "diagnose")


def consistency_stages(*, erase: bool = True) -> list[Stage]:
    """erase → [op-partition] → fill → torture."""
    stages: list[Stage] = [EraseStage()] if erase else []
    return [*stages, fill_stage(), torture_stage("torture_seconds")]


def trim_stages(*, erase: bool = True) -> list[Stage]:
    """erase → probe clean → fill → torture → probe after_torture → TRIM → probe after_trim."""
    stages: list[Stage] = [EraseStage()] if erase else []
    return [
        *stages,
        probe_stage("clean"),
        fill_stage(),
        torture_stage("trim_torture_seconds"),
        probe_stage("after_torture"),
        TrimStage(),
        probe_stage("after_trim"),
    ]


def diagnose_stages() -> list[Stage]:
    """Non-destructive: full-span sequential read, then 4 KiB random read (read-only)."""
    return [readscan_stage(), randread_stage()]


def stages_for(kind: str, *, erase: bool = True) -> list[Stage]:
    if kind == "consistency":
        return consistency_stages(erase=erase)
    if kind == "trim":
        return trim_stages(erase=erase)
    if kind == "diagnose":
        return diagnose_stages()
    raise ValueError(f"unknown run kind {kind!r} (known: {', '.join(KINDS)})")
