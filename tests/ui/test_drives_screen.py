"""The drives screen (#24 item 8): one unit for capacities, here and in `ssdbench list`;
every column a few Right presses away with the selection column kept; the plan form keeps
what was typed, and the preset text says when a value was changed."""

from __future__ import annotations

from pathlib import Path

from textual.widgets import Input, Static

from ssdbench.commands.list import human_size
from ssdbench.ui import fmt
from ssdbench.ui.drives import DrivesScreen
from ssdbench.ui.plan import PlanScreen
from ssdbench.untrusted import shown
from tests.hostile import EVIL_MODEL, EVIL_SERIAL, hostile_bundle
from tests.ui.conftest import make_app, replay_host, wait_for
from tests.ui.test_flow import drives_table, to_plan


def test_capacities_in_one_unit_on_screen_and_in_list() -> None:
    for n in (64 * 2**20, 894 * 2**20, 274_877_906_944, 2_000_398_934_016, 33_554_432):
        assert fmt.size(n) == human_size(n)
    assert fmt.size(64 * 2**20) == "67.1 MB"  # as the drive label would say it


async def test_the_protected_column_is_a_few_right_presses_away() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        _screen, table = await drives_table(pilot, app)
        assert table.fixed_columns >= 1  # sel / PROT never scrolls away
        last = table.ordered_columns[-1]
        assert str(last.label) == "protected"
        for _ in range(12):
            await pilot.press("right")
        await pilot.pause()
        assert table.scroll_x >= table.max_scroll_x > 0, (table.scroll_x, table.max_scroll_x)
        for _ in range(12):
            await pilot.press("left")
        await pilot.pause()
        assert table.scroll_x == 0


async def test_the_plan_form_keeps_what_was_typed_and_says_it_changed() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        screen.query_one("#torture_seconds", Input).value = "30"
        await pilot.pause()
        help_text = str(screen.query_one("#preset-help", Static).content)
        assert "60 s tortures" not in help_text and "changed torture" in help_text, help_text
        await pilot.press("escape")
        await wait_for(pilot, lambda: isinstance(app.screen, DrivesScreen), what="drives")
        await pilot.press("p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan again")
        again = app.screen
        assert isinstance(again, PlanScreen)
        assert again.query_one("#torture_seconds", Input).value == "30"


async def test_drive_strings_with_markup_and_control_characters_show_as_typed(
        tmp_path: Path) -> None:
    # #28 item 6: a model "[/]" exited the TUI with MarkupError; a serial "[i]SSDBNVME0001[/i]"
    # showed the NVMe drive's serial; ESC and BEL reached the terminal
    app = make_app(host=replay_host(hostile_bundle(tmp_path / "bundle")))
    async with app.run_test(size=(80, 25)) as pilot:
        _screen, table = await drives_table(pilot, app)
        rows = [[str(c) for c in table.get_row(key)] for key in table.rows]
        sda = next(r for r in rows if r[1] == "sda")
        # the parsers keep the model up to the CR; what is left shows as typed, ESC and BEL
        # as "?"
        assert sda[2] == shown(EVIL_MODEL.split("\r")[0]) == '=HYPERLINK("x")[/]?[2J?', sda
        assert sda[5] == EVIL_SERIAL  # the brackets, as the drive reported them
        nvme = next(r for r in rows if r[1] == "nvme0n1")
        assert nvme[5] == "SSDBNVME0001"
        await pilot.press("down")
        await pilot.pause()
        assert app.is_running
