"""Diagnose: a health snapshot (``smartctl -j -x``) before and after the read tests.

Read-only. A drive smartctl cannot read (a loop device, a USB bridge without SAT) is
recorded as unavailable with the reason, and the stage is "not available" (its own state in
the stage list, never "failed"); that never fails the diagnosis. smartctl's exit bit 2 alone
(one of its commands failed) is not that when the health figures were read
(``smartctl_unreadable``): a SAS drive without one optional log page sets it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ssdbench.devices.smart import SMARTCTL_OK_CODES, parse_smartctl_json, smartctl_unreadable
from ssdbench.stages.base import RunContext, StageNotAvailable
from ssdbench.system import CommandError


@dataclass
class HealthStage:
    phase: str  # "before" | "after"
    name: str = ""

    def __post_init__(self) -> None:
        self.name = self.name or f"health-{self.phase}"

    def execute(self, ctx: RunContext) -> None:
        snapshot: dict[str, Any]
        try:
            result = ctx.host.runner.run(["smartctl", "-j", "-x", ctx.target.path],
                                         ok_codes=SMARTCTL_OK_CODES, timeout=120)
            smart, _identity = parse_smartctl_json(result.text)
            if smartctl_unreadable(smart.exit_status, smart.read_nothing):
                why = "; ".join(smart.messages) or f"exit status {smart.exit_status}"
                snapshot = {"available": False, "reason": f"smartctl could not read: {why}"}
            else:
                snapshot = {"available": True, **smart.to_json()}
        except CommandError as exc:
            snapshot = {"available": False, "reason": f"smartctl failed: {exc}"}
        except ValueError as exc:
            snapshot = {"available": False, "reason": f"smartctl output not understood: {exc}"}
        ctx.record.set_entry("health", self.phase, snapshot)
        if not snapshot["available"]:
            raise StageNotAvailable(str(snapshot["reason"]))
