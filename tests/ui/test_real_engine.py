"""The real engine through the TUI: a quick plan on a loop device this test creates,
from the drives screen to the results screen (root; fio, blkdiscard)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from textual.widgets import DataTable, Input, Select

from ssdbench.system import live_host
from ssdbench.ui.dialogs import ConsentScreen
from ssdbench.ui.engine import LiveEngine
from ssdbench.ui.plan import PlanScreen
from ssdbench.ui.results import ResultsScreen
from ssdbench.ui.run import RunScreen
from tests.conftest import loop_device as make_loop_device
from tests.ui.conftest import make_app, wait_for


@pytest.fixture
def loop_device() -> Iterator[str]:
    with make_loop_device(32, prefix="ssdbench-ui-") as (dev, _image):
        yield dev


@pytest.mark.root
async def test_quick_plan_on_a_loop_device_reaches_results(loop_device: str,
                                                           tmp_path: Path) -> None:
    name = Path(loop_device).name
    results = tmp_path / "ssdbench"
    app = make_app(LiveEngine(), host=live_host(), results_root=results)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: any(d.name == name for d in app.drives),
                       what=f"{name} discovered")
        table = app.screen.query_one("#drives", DataTable)
        table.move_cursor(row=[d.name for d in app.drives].index(name))
        await pilot.press("space", "p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan")
        plan = app.screen
        plan.query_one("#erase", Select).value = "discard"
        for field, value in (("op_levels", "0"), ("torture_seconds", "5"),
                             ("trim_torture_seconds", "3"), ("probe_gib", "0.004")):
            plan.query_one(f"#{field}", Input).value = value
        await pilot.pause()
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        await pilot.press(*name[-4:], "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.finished, timeout=240, what="plan finished")
        state = app.run_states[name]
        assert state.state == "done", list(state.log)
        assert any(line.startswith("$ fio") for line in state.log)
        assert any(s.name == "torture" and s.state == "done" for s in state.stages)
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen), what="results")
        res = app.screen
        assert isinstance(res, ResultsScreen)
        await wait_for(pilot, lambda: bool(res.summaries), timeout=60, what="analysis")
        by_run = {s.run: s for s in res.summaries}
        assert set(by_run) == {"consistency-default", "trim"}
        cons = by_run["consistency-default"]
        assert cons.state == "done" and cons.iops and len(cons.iops) == 5
        assert cons.steady_mean is not None and cons.steady_mean > 0
        assert by_run["trim"].trim_verdict is not None
        assert (results / "index.html").is_file()
