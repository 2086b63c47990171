"""Screens as SVG snapshots at 80x25 (the Linux VT) and 120x40, and a check that every
character on them exists in the Linux console font (CP437 glyphs)."""

from __future__ import annotations

import html
import re
import shutil
import threading
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

import pytest
from textual.pilot import Pilot
from textual.widgets import Input, Select

from ssdbench.ui.app import SsdbenchApp
from ssdbench.ui.dialogs import ConsentScreen
from ssdbench.ui.plan import PlanScreen
from ssdbench.ui.results import ResultsScreen
from ssdbench.ui.run import RunScreen
from tests.ui.conftest import make_app, wait_for
from tests.ui.scripted import scripted_engine

SIZES = [(80, 25), (120, 40)]
# A fixed folder: the results screen prints where the files are.
SNAP_RESULTS = Path("/tmp/ssdbench-ui-snapshot/ssdbench")

# What the Linux console font can draw: CP437 (its 0x01-0x1F glyphs too).
CP437_LOW = "☺☻♥♦♣♠•◘○◙♂♀♪♫☼►◄↕‼¶§▬↨↑↓→←∟↔▲▼"
CONSOLE_GLYPHS = set(bytes(range(0x20, 0x7F)).decode("cp437")) | set(
    bytes(range(0x80, 0x100)).decode("cp437")) | set(CP437_LOW) | {"\u00a0"}


def fresh_results() -> Path:
    shutil.rmtree(SNAP_RESULTS.parent, ignore_errors=True)
    return SNAP_RESULTS


def app_for(screen: str) -> tuple[SsdbenchApp, Callable[[Pilot[Any]], Awaitable[None]]]:
    hold = threading.Event()
    results = fresh_results()
    app = make_app(scripted_engine(results, hold=None if screen == "results" else hold),
                   results_root=results)

    async def run_before(pilot: Pilot[Any]) -> None:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        await pilot.pause()
        if screen == "drives":
            await pilot.press("space")
            return
        await pilot.press("space", "p")
        await wait_for(pilot, lambda: isinstance(app.screen, PlanScreen), what="plan")
        app.screen.query_one("#erase", Select).value = "discard"
        app.screen.query_one("#op_levels", Input).value = "0"
        await pilot.pause()
        if screen == "plan":
            return
        await pilot.press("ctrl+s")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        if screen == "consent":
            await pilot.press(*"abcd", "enter")
            # a blinking cursor is caught on or off by when the snapshot is taken (a run
            # under load drew "l" apart from "ast characters"): hold it still
            app.screen.query_one("#consent-input", Input).cursor_blink = False
            await pilot.pause()
            app.clear_notifications()
            return
        await pilot.press(*"oop1", "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run")
        if screen == "run":
            await wait_for(pilot, lambda: len(app.run_states["loop1"].iops) == 30,
                           what="torture")
            await pilot.pause()
            return
        run = app.screen
        assert isinstance(run, RunScreen)
        await wait_for(pilot, lambda: run.finished, what="finished")
        await pilot.press("v")
        await wait_for(pilot, lambda: isinstance(app.screen, ResultsScreen)
                       and bool(app.screen.summaries), what="results")
        app.clear_notifications()
        await pilot.pause()

    return app, run_before


@pytest.mark.parametrize("size", SIZES, ids=lambda s: f"{s[0]}x{s[1]}")
@pytest.mark.parametrize("screen", ["drives", "plan", "consent", "run", "results"])
def test_snapshot(screen: str, size: tuple[int, int], snap_compare: Any) -> None:
    app, run_before = app_for(screen)
    assert snap_compare(app, terminal_size=size, run_before=run_before)


@pytest.mark.parametrize("screen", ["drives", "plan", "consent", "run", "results", "help"])
async def test_every_character_is_in_the_console_font(screen: str) -> None:
    app, run_before = app_for("drives" if screen == "help" else screen)
    async with app.run_test(size=(80, 25)) as pilot:
        await run_before(pilot)
        if screen == "help":
            await pilot.press("f1")
            await pilot.pause()
        svg = app.export_screenshot()
    text = "".join(html.unescape(t) for t in re.findall(r"<text[^>]*>(.*?)</text>", svg,
                                                         flags=re.S))
    assert text.strip()
    missing = sorted({c for c in text if c not in CONSOLE_GLYPHS and not c.isspace()})
    assert missing == [], f"not in the Linux console font: {missing}"
