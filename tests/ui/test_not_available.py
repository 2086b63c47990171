"""A health stage on a drive without SMART is "not available" on the run screen: its own
mark and words, not "failed", and it counts as finished (#45)."""

from __future__ import annotations

from ssdbench.progress import Progress
from ssdbench.ui.run import progress_row
from ssdbench.ui.state import DriveRunState
from ssdbench.ui.widgets import STATE_MARK, STATE_STYLE, stage_list


def test_not_available_stage_is_shown_so() -> None:
    st = DriveRunState("loop1")
    why = "smartctl could not read: /dev/loop1: Unable to detect device type"
    for stage, state, message in (("health-before", "running", "started"),
                                  ("health-before", "not available", why),
                                  ("readscan", "running", "started")):
        st.apply(Progress("loop1", "diagnose", stage, state, message=message))
    text = stage_list(st).plain
    line = next(x for x in text.splitlines() if "health-before" in x)
    assert "not available" in line and "failed" not in line, line
    assert STATE_MARK["not available"] != STATE_MARK["failed"]
    assert STATE_STYLE["not available"] != STATE_STYLE["failed"]
    st.apply(Progress("loop1", "diagnose", "readscan", "done", message="done"))
    assert "2/2 stages done" in str(progress_row(st)[1])
