"""The speed preset in the TUI: listed, read-only, estimated as its corners' time."""

from __future__ import annotations

from ssdbench.plan.plans import PRESETS
from ssdbench.stages.params import RunParams
from ssdbench.ui.engine import preset_plan
from ssdbench.ui.estimate import estimate
from ssdbench.ui.plan import build_plan, form_values, plan_summary
from tests.ui.test_models import loop_drive


def test_speed_preset_is_listed_read_only_and_estimated_from_its_corners() -> None:
    assert "speed" in PRESETS
    drive = loop_drive()
    plan = build_plan("speed", form_values("speed"), "discard", [drive])
    assert [r.kind for r in plan.runs] == ["speed"] and not plan.destructive
    assert "Read-only" in plan_summary(plan, [drive]).plain
    parts = dict(estimate(drive, [("speed", 0)], preset_plan("speed").params, "discard").parts)
    assert parts == {"speed/speed": 4 * (3 + 12)}  # no erase, no fill
    writes = RunParams().with_values({"speed_writes": True, "speed_seconds": 5})
    assert dict(estimate(drive, [("speed", 0)], writes, "discard").parts) == {
        "speed/speed": 8 * (3 + 5)}
