"""The authenticity stage: the quick fake-capacity check (grade/capacity.py) on the whole
claimed span, run.json ``authenticity``; with ``capacity_check = "full"`` then the full
check (every block written and read back), run.json ``capacity_full``; the drive's one
verdict of the two (``drive_capacity``: the stronger evidence wins), run.json
``capacity``. Destructive (tagged blocks across the drive): a plan with it needs consent
like any erase. A fake fails the run with what it holds.
"""

from __future__ import annotations

from dataclasses import dataclass

from ssdbench.grade.capacity import DirectIO, check_capacity, check_full, drive_capacity
from ssdbench.stages.base import RunContext, StageFailed, sysfs_logical_block

BLOCK = 4096


@dataclass
class AuthenticityStage:
    name: str = "authenticity"

    def execute(self, ctx: RunContext) -> None:
        name = ctx.target.kernel_name
        logical = (sysfs_logical_block(ctx.host, name) if name else None) or 512
        block = max(BLOCK, logical)
        try:
            io = DirectIO(ctx.target.path, block)
        except OSError as exc:
            raise StageFailed(f"{ctx.target.path}: cannot open for the check: "
                              f"{exc.strerror or exc}") from None
        full = str(getattr(ctx.params, "capacity_check", "quick")) == "full"
        whole = None
        try:
            result = check_capacity(io, ctx.target.span_bytes, block, lba=logical,
                                    progress=lambda line: ctx.emit(self.name, "running", line))
            ctx.record.set("authenticity", {**result.to_json(), "summary": result.summary})
            ctx.emit(self.name, "running", result.summary)
            if full:  # asked for: run even on a fake (its first bad LBA and speed)
                whole = check_full(
                    io, ctx.target.span_bytes, block, logical,
                    progress=lambda line, f: ctx.emit(self.name, "running",
                                                      f"full check: {line}", fraction=f))
                ctx.record.set("capacity_full", {**whole.to_json(), "summary": whole.summary})
                ctx.emit(self.name, "running", f"full check: {whole.summary}")
        finally:
            io.close()
        verdict = drive_capacity(ctx.record.data) or {}
        ctx.record.set("capacity", verdict)
        if whole is not None:
            ctx.emit(self.name, "running", f"the drive ({verdict.get('by')}): "
                                           f"{verdict.get('summary')}")
        if verdict.get("fake"):
            raise StageFailed(f"fake capacity: {verdict.get('summary')}")
        if verdict.get("verdict") == "unreadable":
            raise StageFailed(f"unreadable blocks: {verdict.get('summary')}")
