"""The erase plan's form (#22 items 4, 5 and the people on the record): operator,
organisation, customer and asset tag typed in the TUI reach the plan parameters (and so the
record); the native max restore is a checkbox; a locked self-encrypting drive needs its PSID
typed twice; a snapshot at 80x25."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from textual.widgets import Checkbox, Input, Select, Static

from ssdbench.devices import Drive, discover
from ssdbench.devices.sed import parse_sedutil_query
from ssdbench.ui.app import SsdbenchApp
from ssdbench.ui.plan import PlanScreen
from tests.ui.conftest import make_app, replay_host, wait_for
from tests.ui.test_flow import text_of, to_plan
from tests.unit.devices.test_sed import capture

PSID = "00215A9C0AA61EDA8F92DE7A9E30D969"


async def erase_form(pilot: Any, app: SsdbenchApp) -> PlanScreen:
    screen = await to_plan(pilot, app)
    screen.query_one("#preset", Select).value = "erase"
    screen.query_one("#erase", Select).value = "discard"  # loop1 has no secure erase
    await pilot.pause()
    return screen


async def type_people(pilot: Any, screen: PlanScreen) -> None:
    for key, value in (("operator", "A. Tester"), ("organisation", "Lab 7"),
                       ("customer", "ACME"), ("asset_tag", "INV-0042"), ("lot", "LOT-7")):
        screen.query_one(f"#{key}", Input).value = value
    await pilot.pause()


async def test_people_typed_in_the_form_reach_the_plan_and_stay_for_the_next_plan() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await erase_form(pilot, app)
        assert not screen.query_one("#run-fields").display
        assert screen.query_one("#erase-fields").display
        await type_people(pilot, screen)
        assert screen.plan is not None
        p = screen.plan.params
        assert (p.operator, p.organisation, p.customer, p.asset_tag, p.lot) == (
            "A. Tester", "Lab 7", "ACME", "INV-0042", "LOT-7")
        assert not p.restore_native_max
        assert "Record: operator A. Tester, organisation Lab 7" in text_of(
            screen.query_one("#plan-summary", Static))
        await pilot.press("escape")
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan again")
        again = app.screen
        assert isinstance(again, PlanScreen)
        assert again.query_one("#operator", Input).value == "A. Tester"
        assert again.plan is not None and again.plan.params.asset_tag == "INV-0042"
        assert again.plan.params.lot == "LOT-7"


async def test_measurement_plans_keep_their_fields_and_no_people() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        assert screen.query_one("#run-fields").display
        assert not screen.query_one("#erase-fields").display


async def test_restore_checkbox_is_the_consent() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await erase_form(pilot, app)
        screen.query_one("#restore", Checkbox).value = True
        await pilot.pause()
        assert screen.plan is not None and screen.plan.params.restore_native_max
        assert "Native max restored first" in text_of(screen.query_one("#plan-summary", Static))


def locked_loop1() -> Drive:
    drive = next(d for d in discover(replay_host()) if d.name == "loop1")
    sed = parse_sedutil_query(capture("sedutil-query_samsung-pm810_opal1-locked_sedutil-325.txt"))
    return replace(drive, sed=sed)


async def plan_for_locked(pilot: Any, app: SsdbenchApp) -> PlanScreen:
    await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
    screen = PlanScreen([locked_loop1()])
    await app.push_screen(screen)
    await pilot.pause()
    return screen


def psid_of(screen: PlanScreen) -> str | None:
    return None if screen.plan is None else screen.plan.params.psid


async def test_locked_drive_needs_the_psid_typed_twice() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await plan_for_locked(pilot, app)
        screen.query_one("#preset", Select).value = "erase"
        await pilot.pause()
        error = screen.query_one("#plan-error", Static)
        assert psid_of(screen) is None and "locked self-encrypting drive" in text_of(error)
        assert "type its PSID twice" in text_of(error)
        screen.query_one("#psid", Input).value = PSID
        screen.query_one("#psid2", Input).value = PSID[:-1] + "0"
        await pilot.pause()
        assert psid_of(screen) is None and "the two PSIDs differ" in text_of(error)
        screen.query_one("#psid2", Input).value = PSID.lower()[:8] + "-" + PSID[8:]
        await pilot.pause()
        assert psid_of(screen) == PSID
        assert "PSID revert first" in text_of(screen.query_one("#plan-summary", Static))
        assert screen.form.values.get("psid") is None  # the PSID is not kept in the form


async def test_locked_drive_in_a_measurement_plan_is_refused() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await plan_for_locked(pilot, app)
        assert screen.plan is None
        assert "erase it with the erase plan and its PSID" in text_of(
            screen.query_one("#plan-error", Static))
        assert not screen.query("#psid") or not screen.query_one("#erase-fields").display


def test_snapshot_erase_form_80x25(snap_compare: Any) -> None:
    app = make_app()

    async def run_before(pilot: Any) -> None:
        screen = await erase_form(pilot, app)
        await type_people(pilot, screen)
        screen.query_one("#restore", Checkbox).value = True
        await pilot.pause()

    assert snap_compare(app, terminal_size=(80, 25), run_before=run_before)


# the form's fields each preset uses (#45): none of torture/OP/probe for these
NO_RUN_FIELDS = ("intake", "grade", "erase", "diagnose", "speed")


def field_shown(screen: Any, key: str) -> bool:
    """Whether the form's row of the field ``key`` is displayed."""
    parent = screen.query_one(f"#{key}", Input).parent
    assert parent is not None
    return bool(parent.display)


async def test_each_preset_shows_only_the_fields_it_uses() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        for preset in NO_RUN_FIELDS:
            screen.query_one("#preset", Select).value = preset
            await pilot.pause()
            for key in ("torture_seconds", "op_levels", "probe_gib", "trim_torture_seconds"):
                assert not field_shown(screen, key), (preset, key)
        screen.query_one("#preset", Select).value = "trim"
        await pilot.pause()
        assert field_shown(screen, "probe_gib")
        assert not field_shown(screen, "torture_seconds")
        screen.query_one("#preset", Select).value = "review"
        await pilot.pause()
        assert field_shown(screen, "op_levels")


async def test_intake_record_people_are_reachable_at_80x25() -> None:
    """The intake erases and writes a record: its operator and witness fields are on the
    form (Tab reaches them, the screen scrolls to them) and reach the plan."""
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        screen.query_one("#preset", Select).value = "intake"
        screen.query_one("#erase", Select).value = "discard"
        await pilot.pause()
        assert screen.query_one("#erase-fields").display
        operator = screen.query_one("#operator", Input)
        for _ in range(12):
            if operator.has_focus:
                break
            await pilot.press("tab")
        assert operator.has_focus, "Tab does not reach the operator field"
        await pilot.press(*"A. Tester")
        await pilot.pause()
        assert operator.region.height and operator.region.y < 25 - 1, operator.region
        assert screen.plan is not None and screen.plan.params.operator == "A. Tester"
        assert "Record: operator A. Tester" in text_of(screen.query_one("#plan-summary",
                                                                           Static))
