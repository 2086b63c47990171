"""The grade stage: the drive's own counters (``smartctl -j -x``) graded by the rules of
grade/rules.py with the plan's thresholds; run.json ``grade`` (docs/grading.md).

Read-only. A drive smartctl cannot read is "not gradable" with the reason, never a pass.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from ssdbench.devices.model import ParseError
from ssdbench.devices.smart import SMARTCTL_OK_CODES
from ssdbench.grade.counters import GradeInputs, SelfTest, parse_smartctl_grade
from ssdbench.grade.rules import Thresholds, grade_drive
from ssdbench.stages.base import RunContext, sysfs_size_bytes
from ssdbench.system import CommandError


def kernel_bytes(ctx: RunContext) -> int | None:
    """The kernel's size of the device now (sysfs, 512-byte units): after an HPA's native
    max is restored and the disk rescanned it is not the size the run started with (that
    stale size made a restored drive's identity "not add up")."""
    if ctx.target.kind != "block":
        return None
    name = ctx.target.kernel_name
    size = sysfs_size_bytes(ctx.host, name) if name else None
    return ctx.target.span_bytes if size is None else size


def grade_now(ctx: RunContext) -> dict[str, Any]:
    """Read the drive's counters now and grade them: run.json's ``grade`` member."""
    try:
        result = ctx.host.runner.run(["smartctl", "-j", "-x", ctx.target.path],
                                     ok_codes=SMARTCTL_OK_CODES, timeout=120)
        inputs = parse_smartctl_grade(result.text)
    except CommandError as exc:
        inputs = GradeInputs(False, f"smartctl failed: {exc}")
    except ParseError as exc:
        inputs = GradeInputs(False, f"smartctl's output not understood: {exc}")
    # the self-test this run started (stages/selftest.py) over whatever the log said before
    ran = ctx.record.data.get("self_test")
    fresh = ran.get("result") if isinstance(ran, dict) and ran.get("ran") else None
    missing = str(ran.get("reason")) if isinstance(ran, dict) and not ran.get("ran") else ""
    if inputs.available and isinstance(fresh, dict):
        inputs = dataclasses.replace(inputs, self_test=SelfTest(
            str(fresh.get("kind")), fresh.get("passed"), str(fresh.get("status")),
            fresh.get("power_on_hours")))
    params = ctx.params
    limits = params.grade_thresholds() if hasattr(params, "grade_thresholds") else Thresholds()
    grade = grade_drive(inputs, limits, kernel_bytes=kernel_bytes(ctx),
                        self_test_missing=missing)
    return {**grade.to_json(), "summary": grade.summary, "thresholds": limits.__dict__,
            "inputs": inputs.to_json()}


@dataclass
class GradeStage:
    name: str = "grade"

    def execute(self, ctx: RunContext) -> None:
        graded = grade_now(ctx)
        ctx.record.set("grade", graded)
        ctx.emit(self.name, "running", f"grade: {graded['summary']}")
