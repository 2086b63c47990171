"""Whole-span discard (the TRIM stage, with the zero read-back on drives that promise zeros
after TRIM) and the erase stage with its discard fallback."""

from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench import jsonfile
from ssdbench.stages.base import RunContext, StageCancelled, StageFailed, Target
from ssdbench.system import CommandError, Host

DISCARD_TIMEOUT_S = 4 * 3600.0
ZERO_READBACK_SAMPLES = 64
ZERO_READBACK_BLOCK = 4096
ZERO_READBACK_TIMEOUT_S = 60.0


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
    """TRIM the whole span, then idle ``trim_idle_seconds``; run.json "trim" gets the
    /proc/diskstats discard counters and the idle time."""

    name: str = "trim"

    def execute(self, ctx: RunContext) -> None:
        result = discard_span(ctx, self.name)
        if result["discard_sectors"] == 0:
            ctx.emit(self.name, "running", "warning: the kernel counted no discarded sectors")
        promised = zero_promise(ctx.run_dir.parent / "drive.json")
        result["zero_readback"] = None
        ctx.record.set("trim", result)
        if promised is not None and ctx.target.kind == "block":
            ctx.emit(self.name, "running", f"reading back {ZERO_READBACK_SAMPLES} sampled "
                     f"blocks: the drive promises zeros after TRIM ({promised})")
            result["zero_readback"] = zero_readback(ctx, promised)
            rb = result["zero_readback"]
            if rb["zero"] < rb["checked"]:
                ctx.emit(self.name, "running", f"warning: {rb['checked'] - rb['zero']} of "
                         f"{rb['checked']} blocks read back non-zero after TRIM although the "
                         f"drive promises zeros ({promised})")
        ctx.record.set("trim", result)
        result.update(idle(ctx, self.name, ctx.params.trim_idle_seconds, after="TRIM",
                           why="the drive gets time to act on the TRIM before the after-TRIM "
                               "probe"))
        ctx.record.set("trim", result)


@dataclass
class SettleStage:
    """The same idle as after the TRIM (``trim_idle_seconds``), between the torture and the
    after-torture probe: background garbage collection gets the same time before both later
    probes, so what the after-TRIM probe gains is TRIM's (analysis/trim.py "basis").
    run.json "settle" gets the idle time."""

    name: str = "settle"

    def execute(self, ctx: RunContext) -> None:
        ctx.record.set("settle", idle(
            ctx, self.name, ctx.params.trim_idle_seconds, after="the torture",
            why="the same idle as after the TRIM, so idle time alone cannot pass for TRIM"))


def idle(ctx: RunContext, stage: str, seconds: int, *, after: str, why: str
         ) -> dict[str, Any]:
    """Leave the drive idle for ``seconds`` after ``after`` (``why``: for the log line), with
    progress every second; a cancel ends it at once."""
    if seconds <= 0:
        return {"idle_s": 0, "idle_measured_s": 0.0}
    ctx.emit(stage, "running", f"idle {seconds} s: {why}")
    t0 = time.monotonic()
    while (left := t0 + seconds - time.monotonic()) > 0:
        if ctx.cancel.wait(min(1.0, left)):
            raise StageCancelled(f"cancelled during the idle after {after}")
        elapsed = time.monotonic() - t0
        ctx.emit(stage, "running", fraction=min(1.0, elapsed / seconds), elapsed_s=elapsed,
                 eta_s=max(0.0, seconds - elapsed))
    measured = time.monotonic() - t0
    ctx.emit(stage, "running", f"idle of {seconds} s over", fraction=1.0, elapsed_s=measured,
             eta_s=0.0)
    return {"idle_s": seconds, "idle_measured_s": round(measured, 3)}


def zero_promise(drive_json: Path) -> str | None:
    """What the drive promises about reads after TRIM, from its drive.json (discovery's
    identity): "dlfeat" (NVMe DLFEAT bits 2:0 == 1), "rzat" (ATA deterministic read zeros
    after TRIM), or None (no promise, or no identity to go by)."""
    try:
        data = jsonfile.read(drive_json)
    except (OSError, ValueError):
        return None
    drive = data.get("drive") if isinstance(data, dict) else None
    if not isinstance(drive, dict):
        return None
    nvme = drive.get("nvme")
    if drive.get("transport") == "nvme" or isinstance(nvme, dict):
        dlfeat = nvme.get("dlfeat") if isinstance(nvme, dict) else None
        return "dlfeat" if isinstance(dlfeat, int) and dlfeat & 0x7 == 1 else None
    return "rzat" if drive.get("rzat") is True else None


def sample_blocks(span_bytes: int, samples: int = ZERO_READBACK_SAMPLES,
                  block: int = ZERO_READBACK_BLOCK) -> list[int]:
    """``samples`` block numbers (units of ``block`` bytes) spread evenly over the span,
    each in the middle of its slice; fewer when the span has fewer blocks."""
    blocks = span_bytes // block
    n = min(samples, blocks)
    return [(2 * i + 1) * blocks // (2 * n) for i in range(n)]


def zero_readback(ctx: RunContext, promised: str) -> dict[str, Any]:
    """Read sampled 4 KiB blocks of the span with O_DIRECT (no page cache) and count the
    all-zero ones."""
    zero = checked = 0
    nonzero: list[int] = []
    for blk in sample_blocks(ctx.target.span_bytes):
        argv = ["dd", f"if={ctx.target.path}", f"bs={ZERO_READBACK_BLOCK}", f"skip={blk}",
                "count=1", "iflag=direct", "status=none"]
        try:
            data = ctx.host.runner.run(argv, timeout=ZERO_READBACK_TIMEOUT_S).stdout
        except CommandError as exc:
            raise StageFailed(f"zero read-back after TRIM failed: {exc}") from exc
        if len(data) != ZERO_READBACK_BLOCK:
            raise StageFailed(f"zero read-back after TRIM: {' '.join(argv)} returned "
                              f"{len(data)} bytes, not {ZERO_READBACK_BLOCK}")
        checked += 1
        if data.count(0) == len(data):
            zero += 1
        elif len(nonzero) < 8:
            nonzero.append(blk * ZERO_READBACK_BLOCK)
    return {"checked": checked, "zero": zero, "promised": promised,
            "block_bytes": ZERO_READBACK_BLOCK, "nonzero_offsets": nonzero}


@dataclass
class EraseStage:
    """Secure erase through the erase room's hook; without one, fail or (with
    ``erase_fallback = "discard"``) discard the span and mark the run not secure-erased."""

    name: str = "erase"

    def execute(self, ctx: RunContext) -> None:
        from ssdbench.stages.secure_erase import serves

        if ctx.secure_erase is not None and serves(ctx.secure_erase, ctx):
            record = dict(ctx.secure_erase(ctx))
            ctx.record.set("erase", record)
            return
        if ctx.params.erase_fallback != "discard":
            raise StageFailed(
                f"no secure-erase method for {ctx.drive_name}; use --erase-fallback overwrite "
                "(or erase_fallback=overwrite) to Clear it by overwriting every block, or "
                "--erase-fallback discard to discard the span instead: the result is then "
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
