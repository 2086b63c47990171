"""Whole-span discard (the TRIM stage) and the erase stage with its discard fallback."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ssdbench.stages.base import RunContext, StageFailed, Target
from ssdbench.system import CommandError, Host

DISCARD_TIMEOUT_S = 4 * 3600.0


@dataclass(frozen=True)
class DiscardCounters:
    """/proc/diskstats fields 15-18 of one block device (kernel >= 4.18)."""

    discards: int
    merged: int
    sectors: int
    ms: int


def read_discard_counters(host: Host, kernel_name: str | None) -> DiscardCounters | None:
    if kernel_name is None:
        return None
    text = host.fs.read_text("/proc/diskstats") or ""
    for line in text.splitlines():
        parts = line.split()
        if len(parts) >= 18 and parts[2] == kernel_name:
            try:
                return DiscardCounters(*(int(p) for p in parts[14:18]))
            except ValueError:
                return None
    return None


def discard_argv(target: Target) -> list[str]:
    """blkdiscard for a device or partition; a hole punch for a regular file (tests)."""
    if target.kind == "block":
        return ["blkdiscard", "--offset", "0", "--length", str(target.span_bytes), target.path]
    return ["fallocate", "--punch-hole", "--keep-size", "--offset", "0",
            "--length", str(target.span_bytes), target.path]


def discard_span(ctx: RunContext, stage: str) -> dict[str, Any]:
    """Discard the whole span; return what the kernel says it sent (diskstats delta)."""
    before = read_discard_counters(ctx.host, ctx.target.kernel_name)
    argv = discard_argv(ctx.target)
    ctx.emit(stage, "running", f"discarding {ctx.target.span_bytes} bytes of {ctx.target.path}")
    t0 = time.monotonic()
    try:
        ctx.host.runner.run(argv, timeout=DISCARD_TIMEOUT_S)
    except CommandError as exc:
        raise StageFailed(f"discard failed: {exc}") from exc
    after = read_discard_counters(ctx.host, ctx.target.kernel_name)
    result: dict[str, Any] = {
        "method": argv[0], "argv": argv, "duration_s": round(time.monotonic() - t0, 3),
        "discards": None, "discard_sectors": None,
    }
    if before is not None and after is not None:
        result["discards"] = after.discards - before.discards
        result["discard_sectors"] = after.sectors - before.sectors
    return result


@dataclass
class TrimStage:
    """TRIM the whole span; run.json "trim" gets the /proc/diskstats discard counters."""

    name: str = "trim"

    def execute(self, ctx: RunContext) -> None:
        result = discard_span(ctx, self.name)
        result["zero_readback"] = None  # RZAT/DLFEAT read-back: needs the drive's identity
        ctx.record.set("trim", result)
        if result["discard_sectors"] == 0:
            ctx.emit(self.name, "running", "warning: the kernel counted no discarded sectors")


@dataclass
class EraseStage:
    """Secure erase through the erase room's hook; without one, fail or (with
    ``erase_fallback = "discard"``) discard the span and mark the run not secure-erased."""

    name: str = "erase"

    def execute(self, ctx: RunContext) -> None:
        if ctx.secure_erase is not None:
            record = dict(ctx.secure_erase(ctx))
            ctx.record.set("erase", record)
            return
        if ctx.params.erase_fallback != "discard":
            raise StageFailed(
                f"no secure-erase method for {ctx.drive_name}; use --erase-fallback discard "
                "(or erase_fallback=discard) to discard the span instead: the result is then "
                "marked not secure-erased"
            )
        t0 = time.monotonic()
        result = discard_span(ctx, self.name)
        ctx.record.set("erase", {
            "method": "discard", "secure": False, "verified": False,
            "duration_s": round(time.monotonic() - t0, 3),
            "detail": f"not secure-erased: {' '.join(result['argv'])} "
                      f"(kernel counted {result['discard_sectors']} discarded sectors)",
        })
