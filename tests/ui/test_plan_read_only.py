"""A read-only plan's form (grade, diagnose, speed) has no erase method to choose and its
estimate line assumes no writes and no erase: it erases nothing."""

from __future__ import annotations

import pytest
from textual.widgets import Select, Static

from ssdbench.ui.plan import PlanScreen
from tests.ui.conftest import make_app, wait_for


def text_of(widget: Static) -> str:
    return str(widget.render())


@pytest.mark.parametrize(("preset", "erases", "says"), [
    ("grade", False, "a short self-test of 2 min assumed"),
    ("diagnose", False, "MiB/s reads assumed (loop)"),
    ("speed", False, "4 speed corners of"),
    ("quick", True, "MiB/s writes assumed (loop), erase by discard"),
])
async def test_the_erase_method_only_for_plans_that_erase(preset: str, erases: bool,
                                                          says: str) -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        loop1 = next(d for d in app.drives if d.name == "loop1")
        screen = PlanScreen([loop1])
        await app.push_screen(screen)
        await pilot.pause()
        screen.query_one("#preset", Select).value = preset
        await wait_for(pilot, lambda: screen.preset == preset, what="preset")
        if erases:  # a loop device has no secure erase: the plan discards instead
            screen.query_one("#erase", Select).value = "discard"
        await pilot.pause()
        assert screen.query_one("#row-erase").display is erases
        summary = text_of(screen.query_one("#plan-summary", Static))
        assert says in summary, summary
        assert ("erase" in summary.split("Estimate:")[1]) is erases, summary
