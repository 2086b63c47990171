"""Progress events: what a running stage tells the TUI, kiosk mode and the CLI.

Stages call a ``ProgressCallback`` at least once per second while they run.  The callback
must be quick and must not raise; front ends turn events into messages (TUI) or lines
(kiosk serial console, CLI stderr).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass


@dataclass(frozen=True)
class Progress:
    drive: str  # kernel name of the drive, e.g. "nvme0n1", "sda", "loop3"
    run: str  # run name, e.g. "consistency-default", "consistency-op25", "trim"
    stage: str  # "erase", "partition", "fill", "torture", "probe-clean", "trim", ...
    state: str  # "running", "done", "failed", "skipped", "cancelled"
    fraction: float | None = None  # 0..1 of the stage, None when unknown
    elapsed_s: float = 0.0
    eta_s: float | None = None
    bytes_done: int | None = None
    iops: float | None = None  # last second
    mib_s: float | None = None  # last second
    message: str = ""  # human text: the command running, or the failure reason


ProgressCallback = Callable[[Progress], None]


def ignore_progress(_event: Progress) -> None:
    """A callback that drops events (tests, batch runs)."""
