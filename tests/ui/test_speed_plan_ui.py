"""The speed preset in the TUI: listed, read-only, estimated as its corners' time; its write
corners only with the plan screen's switch and the consent an erase asks."""

from __future__ import annotations

from typing import Any

from textual.widgets import Checkbox, Select, Static

from ssdbench.plan.plans import PRESETS, Plan
from ssdbench.stages.params import RunParams
from ssdbench.ui.app import SsdbenchApp
from ssdbench.ui.dialogs import ConsentScreen
from ssdbench.ui.engine import preset_plan
from ssdbench.ui.estimate import estimate
from ssdbench.ui.plan import PlanScreen, build_plan, form_values, plan_summary
from tests.ui.conftest import make_app, wait_for
from tests.ui.test_flow import text_of, to_plan
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


# ---- the write corners from the plan screen (#45): a switch, off by default, that makes
# the plan destructive and so asks the same consent as an erase ----

async def choose(pilot: Any, screen: PlanScreen, preset: str) -> None:
    screen.query_one("#preset", Select).value = preset
    await wait_for(pilot, lambda: screen.preset == preset, what=f"preset {preset}")
    await pilot.pause()


async def speed_form(pilot: Any, app: SsdbenchApp) -> PlanScreen:
    screen = await to_plan(pilot, app)
    await choose(pilot, screen, "speed")
    return screen


def summary(screen: PlanScreen) -> str:
    return text_of(screen.query_one("#plan-summary", Static))


async def test_the_writes_switch_is_shown_for_speed_only_and_is_off_by_default() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        for preset in PRESETS:
            await choose(pilot, screen, preset)
            assert screen.query_one("#row-speed-writes").display is (preset == "speed"), preset
        await choose(pilot, screen, "speed")
        switch = screen.query_one("#speed-writes", Checkbox)
        assert not switch.value  # off: read-only, no consent
        assert screen.plan is not None and not screen.plan.params.speed_writes
        assert not screen.plan.destructive and "Read-only" in summary(screen)
        assert text_of(screen.query_one("#preset-help", Static)).startswith("read-only: ")
        assert not screen.query_one("#row-erase").display  # the writes erase nothing
        switch.value = True
        await pilot.pause()
        await choose(pilot, screen, "grade")  # another preset turns it off
        await choose(pilot, screen, "speed")
        assert not switch.value and screen.plan is not None and not screen.plan.destructive
        switch.value = True
        await pilot.pause()
        await pilot.press("escape")  # a new plan screen asks again
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen) and app.screen
                       is not screen, what="plan again")
        again = app.screen
        assert isinstance(again, PlanScreen)
        assert not again.query_one("#speed-writes", Checkbox).value


async def test_writes_on_carry_speed_writes_and_ask_the_erase_consent() -> None:
    app = make_app()
    started: list[tuple[list[str], Plan]] = []
    app.start_plan = lambda drives, plan: started.append(  # type: ignore[method-assign]
        ([d.name for d in drives], plan))
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await speed_form(pilot, app)
        await pilot.click("#speed-writes")
        await pilot.pause()
        assert screen.query_one("#speed-writes", Checkbox).value
        plan = screen.plan
        assert plan is not None and plan.params.speed_writes and plan.destructive
        said = summary(screen)
        assert "DESTROYS ALL DATA" in said and "1 GiB of each drive (all of a smaller one) is overwritten" in said
        assert "8 speed corners" in said and "erase" not in said.split("Estimate:")[1]
        help_text = text_of(screen.query_one("#preset-help", Static))
        assert help_text.startswith("reads and writes: ") and "read-only" not in help_text
        assert text_of(screen.query_one("#plan-error", Static)) == ""  # no erase to choose
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        await pilot.press(*"abcd", "enter")  # the wrong end of the name: still asking
        assert isinstance(app.screen, ConsentScreen) and started == []
        await pilot.press("escape")  # cancelled: nothing started
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="back")
        assert started == []
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        await pilot.press(*"oop1", "enter")  # loop1 has no serial: its kernel name
        await wait_for(pilot, lambda: bool(started), what="start")
        (names, run_plan), = started
        assert names == ["loop1"] and run_plan.params.speed_writes
        assert [r.kind for r in run_plan.runs] == ["speed"]


async def test_writes_off_start_without_consent_and_a_protected_drive_never() -> None:
    app = make_app()
    started: list[Plan] = []
    app.start_plan = lambda drives, plan: started.append(plan)  # type: ignore[method-assign]
    async with app.run_test(size=(80, 25)) as pilot:
        await speed_form(pilot, app)
        await pilot.press("ctrl+s")  # read-only: no consent asked
        await wait_for(pilot, lambda: bool(started), what="start")
        assert not started[0].params.speed_writes and not isinstance(app.screen,
                                                                     ConsentScreen)
        vda = next(d for d in app.drives if d.name == "vda")  # the boot medium
        assert vda.protected
        protected = PlanScreen([vda])
        await app.push_screen(protected)
        await pilot.pause()
        await choose(pilot, protected, "speed")
        protected.query_one("#speed-writes", Checkbox).value = True
        await pilot.pause()
        await pilot.press("ctrl+s")
        await pilot.pause()
        assert not isinstance(app.screen, ConsentScreen) and len(started) == 1
        assert any("protected drives cannot be run: vda" in n.message
                   for n in app._notifications)


def test_snapshot_speed_writes_on_80x25(snap_compare: Any) -> None:
    app = make_app()

    async def run_before(pilot: Any) -> None:
        screen = await speed_form(pilot, app)
        screen.query_one("#speed-writes", Checkbox).value = True
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 25), run_before=run_before)
