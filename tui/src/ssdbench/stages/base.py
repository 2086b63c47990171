"""What every stage shares: the target, the run context, the pipeline that runs stages."""

from __future__ import annotations

import os
import stat
import threading
from collections.abc import Callable, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

from ssdbench.progress import Progress, ProgressCallback, ignore_progress
from ssdbench.results.layout import RunRecord
from ssdbench.stages.params import RunParams
from ssdbench.system import Host


class StageFailed(Exception):
    """The stage did not do what it must; the message is the reason."""


class StageCancelled(Exception):
    """The user cancelled the run during this stage."""


NOT_AVAILABLE = "not available"


class StageNotAvailable(Exception):
    """What the stage reads is not there on this drive (no SMART): the stage is "not
    available", not failed, and the run goes on; the message is the reason."""


@dataclass(frozen=True)
class Target:
    """The test span: a whole device, a partition, or (tests) a regular file."""

    path: str
    kind: str  # "block" or "file"
    kernel_name: str | None  # e.g. "loop3", "nvme0n1p1"; None for a file
    span_bytes: int

    def record(self, op_percent: int) -> dict[str, Any]:
        return {"path": self.path, "kind": self.kind, "span_bytes": self.span_bytes,
                "op_percent": op_percent}


def sysfs_size_bytes(host: Host, name: str) -> int | None:
    """The kernel's size of block device ``name`` now (sysfs counts 512-byte units)."""
    text = host.fs.read_text(f"/sys/class/block/{name}/size")
    return int(text.strip()) * 512 if text and text.strip().isdigit() else None


def sysfs_logical_block(host: Host, name: str) -> int | None:
    """The kernel's logical block size of block device ``name`` (a partition has no
    queue/ of its own: its disk's); None when sysfs has no number for it."""
    text = host.fs.read_text(f"/sys/class/block/{name}/queue/logical_block_size")
    if text is None:
        real = os.path.realpath(f"/sys/class/block/{name}")
        text = host.fs.read_text(os.path.join(os.path.dirname(real), "queue",
                                              "logical_block_size"))
    return int(text.strip()) if text and text.strip().isdigit() else None


def resolve_target(host: Host, path: str) -> Target:
    """Look at ``path``: a block device (size from sysfs) or a regular file (its size)."""
    try:
        st = os.stat(path)
    except OSError as exc:
        raise StageFailed(f"target {path}: {exc.strerror}") from None
    if stat.S_ISBLK(st.st_mode):
        name = os.path.basename(os.path.realpath(path))
        size = sysfs_size_bytes(host, name)
        if size is None:
            raise StageFailed(f"target {path}: no size in /sys/class/block/{name}/size")
        return Target(path, "block", name, size)
    if stat.S_ISREG(st.st_mode):
        return Target(path, "file", None, st.st_size)
    raise StageFailed(f"target {path} is neither a block device nor a regular file")


# A secure-erase implementation (the erase room's): returns the run.json "erase" record.
SecureErase = Callable[["RunContext"], Mapping[str, Any]]


@dataclass
class RunContext:
    host: Host
    run_dir: Path
    drive_name: str
    run_name: str
    target: Target
    params: RunParams
    record: RunRecord
    progress: ProgressCallback = ignore_progress
    cancel: threading.Event = field(default_factory=threading.Event)
    secure_erase: SecureErase | None = None
    on_stage: Callable[[str, str], None] | None = None
    """Called with (stage, state) at every stage transition (the journal)."""
    watch: Callable[[str], AbstractContextManager[object]] | None = None
    """Around every stage (the drive's temperature during tortures and probes)."""
    twins: Callable[[], Sequence[str]] | None = None
    """The kernel names of the other drives that report this drive's serial, as known now
    (a station names a twin plugged in after this drive started: its record names it)."""

    def transition(self, stage: str, state: str) -> None:
        if self.on_stage is not None:
            self.on_stage(stage, state)

    def emit(self, stage: str, state: str, message: str = "", **values: Any) -> None:
        try:
            self.progress(Progress(self.drive_name, self.run_name, stage, state,
                                   message=message, **values))
        except Exception:  # front ends must not break a run
            pass


def with_drive_state(ctx: RunContext, reason: str, *, during: str = "") -> str:
    """A tool's reason, prefixed when the drive itself went away (pulled, dropped off the
    bus): the tool then says things that point elsewhere (fio "you need to specify size=",
    dd "No such file or directory")."""
    name = ctx.target.kernel_name
    if ctx.target.kind == "block" and name and not ctx.host.fs.exists(f"/sys/class/block/{name}"):
        return f"the drive disappeared{during} ({ctx.target.path} is gone); {reason}"
    return reason


class Stage(Protocol):
    name: str

    def execute(self, ctx: RunContext) -> None:
        """Do the stage; raise StageFailed / StageCancelled."""
        ...


def run_stages(ctx: RunContext, stages: Sequence[Stage]) -> str:
    """Run stages in order, recording each transition in run.json; returns the run state
    ("done", "failed", "cancelled")."""
    ctx.record.plan_stages([s.name for s in stages])
    for stage in stages:
        if ctx.cancel.is_set():
            ctx.record.finish("cancelled", "cancelled by the user")
            return "cancelled"
        ctx.record.stage_started(stage.name)
        ctx.transition(stage.name, "running")
        ctx.emit(stage.name, "running", "started")
        try:
            with ctx.watch(stage.name) if ctx.watch is not None else nullcontext():
                stage.execute(ctx)
        except StageCancelled as exc:
            ctx.record.stage_finished(stage.name, "cancelled", str(exc) or None)
            ctx.transition(stage.name, "cancelled")
            ctx.emit(stage.name, "cancelled", str(exc))
            ctx.record.finish("cancelled", "cancelled by the user")
            return "cancelled"
        except StageNotAvailable as exc:
            ctx.record.stage_finished(stage.name, NOT_AVAILABLE, str(exc))
            ctx.transition(stage.name, NOT_AVAILABLE)
            ctx.emit(stage.name, NOT_AVAILABLE, str(exc))
            continue
        except StageFailed as exc:
            ctx.record.stage_finished(stage.name, "failed", str(exc))
            ctx.transition(stage.name, "failed")
            ctx.emit(stage.name, "failed", str(exc))
            ctx.record.finish("failed", f"stage {stage.name}: {exc}")
            return "failed"
        except Exception as exc:  # a bug or an unexpected tool error: still a failed run
            reason = f"{type(exc).__name__}: {exc}"
            ctx.record.stage_finished(stage.name, "failed", reason)
            ctx.transition(stage.name, "failed")
            ctx.emit(stage.name, "failed", reason)
            ctx.record.finish("failed", f"stage {stage.name}: {reason}")
            return "failed"
        ctx.record.stage_finished(stage.name, "done")
        ctx.transition(stage.name, "done")
        ctx.emit(stage.name, "done", "done")
    ctx.record.finish("done")
    return "done"
