"""Cancel, quit and resume say what happened and what state the drive is in (#24 item 7)."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import Static

from ssdbench.exitcodes import ExitCode
from ssdbench.ui.dialogs import ConfirmScreen, ConsentScreen
from ssdbench.ui.run import RunScreen
from tests.ui.conftest import make_app, wait_for
from tests.ui.scripted import scripted_engine
from tests.ui.test_flow import discovered, fill_plan, to_plan


async def start_held_run(pilot, app) -> None:
    screen = await to_plan(pilot, app)
    await fill_plan(pilot, screen)
    await pilot.press("ctrl+s", *"oop1", "enter")
    await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
    await wait_for(pilot, lambda: len(app.run_states["loop1"].iops) == 30, what="torture")


def toasts(app) -> list[str]:
    return [str(n.message) for n in app._notifications]


async def test_a_cancelled_run_is_not_called_finished(tmp_path: Path) -> None:
    app = make_app(scripted_engine(tmp_path, hold=threading.Event()), results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await start_held_run(pilot, app)
        await pilot.press("c")
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert "partly written" in dialog.question and str(tmp_path) in dialog.question
        await pilot.press("y")
        run = app.run_screen
        assert run is not None
        await wait_for(pilot, lambda: run.finished, what="finished")
        await pilot.pause()
        said = " | ".join(toasts(app))
        assert "Plan finished" not in said and "cancelled" in said, said


async def test_quit_in_a_run_says_where_the_results_are(tmp_path: Path) -> None:
    app = make_app(scripted_engine(tmp_path, hold=threading.Event()), results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await start_held_run(pilot, app)
        await pilot.press("ctrl+c")  # as q: asks, never Textual's "Press q to quit"
        dialog = app.screen
        assert isinstance(dialog, ConfirmScreen)
        assert "partly written" in dialog.question
        await pilot.press("y")
        await pilot.pause()
    assert app.return_code == ExitCode.INTERRUPTED
    assert "cancelled" in app.farewell and str(tmp_path) in app.farewell, app.farewell


async def test_resume_is_in_the_footer_and_its_consent_names_the_plan(tmp_path: Path) -> None:
    from ssdbench.devices import discover
    from ssdbench.plan.journal import Journal
    from ssdbench.plan.plans import preset
    from tests.ui.conftest import replay_host

    loop1 = next(d for d in discover(replay_host()) if d.name == "loop1")
    journal = Journal.open(tmp_path)  # known by its identity (#42)
    journal.start_drive("loop1", drive="loop1", model="", serial="",
                        drive_dir="20261121T145300Z_unknown_loop1",
                        plan=preset("quick").to_json(), identity=loop1.identity.to_json())
    journal.run_state("loop1", "consistency-default", "done")
    app = make_app(scripted_engine(tmp_path), results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await discovered(pilot, app)
        await wait_for(pilot, lambda: "loop1" in app.drives_screen.status and
                       "R" in app.drives_screen.status, what="journal checked")
        status = app.drives_screen.status
        assert len(status) <= 78, status  # one line of the 80-column screen, not clipped
        active = app.screen.active_bindings
        assert "R" in active and active["R"].binding.show
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        text = str(app.screen.query_one("#consent-text", Static).content)
        assert "Resumes plan quick" in text, text
        assert "consistency-default done" in text and "consistency-op25" in text, text
