"""The TUI end to end with Pilot: replayed drives (a real support bundle), a scripted
engine emitting the Progress sequence the stages emit, the real results analysis."""

from __future__ import annotations

import threading
from pathlib import Path

from textual.widgets import DataTable, Input, Select, Static

from ssdbench.ui.dialogs import ConfirmScreen, ConsentScreen
from ssdbench.ui.drives import DrivesScreen
from ssdbench.ui.plan import PlanScreen
from ssdbench.ui.results import ResultsScreen
from ssdbench.ui.run import RunScreen
from tests.ui.conftest import make_app, wait_for
from tests.ui.scripted import RUN, scripted_engine


def text_of(widget: Static) -> str:
    return str(widget.render())


async def discovered(pilot, app) -> None:
    await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
    await pilot.pause()


async def drives_table(pilot, app) -> tuple[DrivesScreen, DataTable[object]]:
    """The drives screen once discovery has painted it, and its table."""
    await discovered(pilot, app)
    screen = app.screen
    assert isinstance(screen, DrivesScreen)
    return screen, screen.query_one("#drives", DataTable)


async def to_plan(pilot, app) -> PlanScreen:
    await discovered(pilot, app)
    await pilot.press("space")  # loop1 is the first row
    await pilot.press("p")
    await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan screen")
    screen = app.screen
    assert isinstance(screen, PlanScreen)
    return screen


async def fill_plan(pilot, screen: PlanScreen) -> None:
    screen.query_one("#erase", Select).value = "discard"
    screen.query_one("#op_levels", Input).value = "0"
    screen.query_one("#torture_seconds", Input).value = "60"
    await pilot.pause()


async def to_consent(pilot, app) -> None:
    """From the drives screen to the consent screen of a filled-in plan."""
    await fill_plan(pilot, await to_plan(pilot, app))
    await pilot.press("ctrl+s")
    await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")


async def test_drives_table_and_protected_drive_refused() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        screen, table = await drives_table(pilot, app)
        assert table.row_count == 2
        assert [d.name for d in screen.drives] == ["loop1", "vda"]
        await pilot.press("down", "space")  # vda: the boot medium
        assert screen.selected == set()
        messages = [n.message for n in app._notifications]
        assert any("vda is protected" in m and "boot-medium" in m for m in messages)
        assert "PROTECTED" in text_of(screen.query_one("#details", Static))
        await pilot.press("up", "space")
        assert screen.selected == {"loop1"}
        await pilot.press("space")
        assert screen.selected == set()
        await pilot.press("p")  # nothing selected: stays
        assert isinstance(app.screen, DrivesScreen)


async def test_plan_validation_and_estimate(tmp_path: Path) -> None:
    app = make_app(scripted_engine(tmp_path), results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        error = screen.query_one("#plan-error", Static)
        assert "no secure erase on loop1" in text_of(error)  # auto on a loop device
        await fill_plan(pilot, screen)
        assert text_of(error) == ""
        summary = text_of(screen.query_one("#plan-summary", Static))
        assert "consistency-default, trim" in summary and "about" in summary
        screen.query_one("#torture_seconds", Input).value = "1.5"
        await pilot.pause()
        assert "torture_seconds" in text_of(error) and "whole number" in text_of(error)
        await pilot.press("ctrl+s")
        assert isinstance(app.screen, PlanScreen)  # refused
        screen.query_one("#torture_seconds", Input).value = "60"
        screen.query_one("#op_levels", Input).value = "0,95"
        await pilot.pause()
        assert "percentage from 0 to 90" in text_of(error)


async def test_consent_then_run_then_results(tmp_path: Path) -> None:
    hold = threading.Event()
    engine = scripted_engine(tmp_path, hold=hold)
    app = make_app(engine, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await to_consent(pilot, app)
        await pilot.press(*"abcd", "enter")  # wrong: refused, still asking
        assert isinstance(app.screen, ConsentScreen)
        assert "does not match" in text_of(app.screen.query_one("#consent-error", Static))
        assert engine.started == []
        await pilot.press(*"oop1", "enter")  # loop1 has no serial: its kernel name
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
        await wait_for(pilot, lambda: app.run_states["loop1"].last_iops == 30000.0,
                       what="torture progress")
        run = app.screen
        assert isinstance(run, RunScreen)
        state = app.run_states["loop1"]
        states = {s.name: s.state for s in state.stages if s.run == RUN}
        assert (states["erase"], states["fill"], states["torture"]) == ("done", "done",
                                                                        "running")
        assert state.command.startswith("fio ") and "torture.fio" in state.command
        assert len(state.iops) == 30 and state.avg_iops == 59000.0
        panel = text_of(run.query_one("#panel", Static))
        assert "ETA 30s" in panel and "now 30,000" in panel and "avg 59,000" in panel
        hold.set()
        await wait_for(pilot, lambda: run.finished, what="plan finished")
        assert state.state == "done"
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen), what="results")
        results = app.screen
        assert isinstance(results, ResultsScreen)
        await wait_for(pilot, lambda: bool(results.summaries), what="analysis")
        s = results.summaries[0]
        assert s.run == RUN and s.state == "done"
        assert s.zero_seconds == 2 and s.longest_stall_s == 2
        assert s.steady_mean is not None and 18000 < s.steady_mean < 22000
        assert s.erase == "discard (not secure-erased)"
        assert str(tmp_path) in text_of(results.query_one("#results-where", Static))
        await pilot.press("escape")
        assert isinstance(app.screen, DrivesScreen)


class SlowIndexEngine:
    """A scripted engine whose results index (``finish``) takes until ``index_done``."""

    def __init__(self, inner, index_done: threading.Event) -> None:
        self.inner = inner
        self.index_done = index_done
        self.index_started = threading.Event()

    def __getattr__(self, name: str):
        return getattr(self.inner, name)

    def finish(self, results_root: Path) -> list[str]:
        self.index_started.set()
        self.index_done.wait(30)
        return []


async def test_v_while_the_index_is_written_opens_the_results_once_it_is(
        tmp_path: Path) -> None:
    """Every drive done, index.html still being drawn (minutes under TCG): v is not lost
    with "when every drive has finished"; the results open when the index is written."""
    index_done = threading.Event()
    engine = SlowIndexEngine(scripted_engine(tmp_path), index_done)
    app = make_app(engine, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await to_consent(pilot, app)
        await pilot.press(*"oop1", "enter")
        await wait_for(pilot, engine.index_started.is_set, what="index started")
        run = app.screen
        assert isinstance(run, RunScreen) and not run.finished
        await pilot.press("v")
        messages = [n.message for n in app._notifications]
        assert any("Writing the results index" in m for m in messages), messages
        assert isinstance(app.screen, RunScreen)
        index_done.set()
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen), what="results")


async def test_cancel_asks_then_stops_the_run(tmp_path: Path) -> None:
    hold = threading.Event()
    app = make_app(scripted_engine(tmp_path, hold=hold), results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        await fill_plan(pilot, screen)
        await pilot.press("ctrl+s", *"oop1", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
        await wait_for(pilot, lambda: len(app.run_states["loop1"].iops) == 30, what="torture")
        await pilot.press("c")
        assert isinstance(app.screen, ConfirmScreen)
        await pilot.press("n")
        assert not app.cancel_event.is_set()
        await pilot.press("c", "y")
        assert app.cancel_event.is_set()
        await wait_for(pilot, lambda: app.run_states["loop1"].state == "cancelled",
                       what="cancelled")
        state = app.run_states["loop1"]
        assert ("torture", "cancelled") in [(s.name, s.state) for s in state.stages]
        assert hold.is_set() is False


async def test_help_screen_opens_and_closes() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        await discovered(pilot, app)
        await pilot.press("f1")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("escape")
        assert isinstance(app.screen, DrivesScreen)
        await pilot.press("question_mark")
        assert type(app.screen).__name__ == "HelpScreen"
        await pilot.press("f1")
        assert isinstance(app.screen, DrivesScreen)


async def test_a_failed_stage_is_shown_with_its_reason(tmp_path: Path) -> None:
    from ssdbench.plan.engine import DriveOutcome, RunOutcome
    from ssdbench.progress import Progress
    from ssdbench.ui.engine import ScriptedEngine, Step

    reason = "secure erase failed: drive is frozen; suspend/resume did not unfreeze it"
    steps = [Step(event=Progress("loop1", RUN, "erase", "running", message="started")),
             Step(event=Progress("loop1", RUN, "erase", "failed", message=reason))]
    outcome = DriveOutcome("loop1", "loop1", None,
                           (RunOutcome(RUN, "failed", f"stage erase: {reason}", None),))
    app = make_app(ScriptedEngine({"loop1": steps}, {"loop1": outcome}),
                   results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        screen = await to_plan(pilot, app)
        await fill_plan(pilot, screen)
        await pilot.press("ctrl+s", *"oop1", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.finished, what="finished")
        state = app.run_states["loop1"]
        assert state.state == "failed"
        stages = {s.name: s.state for s in state.stages if s.run == RUN}
        assert stages["erase"] == "failed" and stages["torture"] == "skipped"
        assert any(reason in line for line in state.log)
        assert "Finished: failed" in text_of(run.query_one("#panel", Static))
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                       and bool(app.screen.summaries), what="results")
        detail = text_of(app.screen.query_one("#results-detail", Static))
        assert "failed" in detail and "frozen" in detail


async def test_unfinished_plan_in_the_journal_is_offered_and_resumed(tmp_path: Path) -> None:
    from ssdbench.devices import discover
    from ssdbench.plan.journal import Journal
    from ssdbench.plan.plans import preset
    from tests.ui.conftest import replay_host

    loop1 = next(d for d in discover(replay_host()) if d.name == "loop1")
    journal = Journal.open(tmp_path)  # the entry names the drive by its identity (#42)
    journal.start_drive("loop1", drive="loop1", model="", serial="",
                        drive_dir="20261121T145300Z_unknown_loop1",
                        plan=preset("quick").to_json(), identity=loop1.identity.to_json())
    engine = scripted_engine(tmp_path)
    app = make_app(engine, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await discovered(pilot, app)
        await wait_for(pilot, lambda: "Unfinished plan on loop1" in app.drives_screen.status,
                       what="journal checked")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        await pilot.press(*"oop1", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run screen")
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.finished, what="finished")
        assert engine.resumed == ["loop1"]
        names = {s.run for s in app.run_states["loop1"].stages}
        assert names == {"consistency-default", "consistency-op25", "trim"}
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen), what="results")
        await pilot.press("escape")
        assert isinstance(app.screen, DrivesScreen)
