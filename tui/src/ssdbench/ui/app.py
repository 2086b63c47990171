"""The Textual TUI: drives → plan → consent → run → results.

Blocking work (discovery, the hot-plug poll, finding the results stick, every drive's run)
runs in thread workers; results come back as typed messages (ui/messages.py) and widgets
are changed only in their handlers.  The engine is reached through ui/engine.py only.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import ClassVar

from textual import work
from textual.app import App
from textual.binding import Binding, BindingType
from textual.scrollbar import ScrollBarRender
from textual.worker import get_current_worker

from ssdbench.devices import Drive, block_devices_signature, discover
from ssdbench.exitcodes import ExitCode
from ssdbench.progress import Progress
from ssdbench.system import Host, live_host
from ssdbench.ui.dialogs import ConfirmScreen, ConsentScreen, HelpScreen, TwinQuestion
from ssdbench.ui.drives import DrivesScreen
from ssdbench.ui.engine import (
    DriveOutcome,
    Engine,
    LiveEngine,
    Plan,
    journal_plan,
    match_unfinished,
    stage_names,
)
from ssdbench.ui.estimate import expected_speed, stage_estimates
from ssdbench.ui.messages import (
    BlockDevicesChanged,
    DestinationFound,
    DestinationView,
    DiscoveryFailed,
    DriveFinished,
    DrivesDiscovered,
    PlanFinished,
    RunCommand,
    RunProgress,
    UnfinishedFound,
)
from ssdbench.ui.plan import PlanForm, PlanScreen
from ssdbench.ui.results import ResultsScreen
from ssdbench.ui.run import RunScreen
from ssdbench.ui.state import DriveRunState
from ssdbench.ui.widgets import TopBar

DEFAULT_RESULTS = Path("/run/ssdbench/ram/ssdbench")  # used only if finding the stick fails
POLL_INTERVAL_S = 2.0


def find_destination(host: Host) -> DestinationView:
    """The single call site of ssdbench.results.destination (mounts the SSDRESULTS stick
    when it is not mounted yet; RAM otherwise)."""
    from ssdbench.results.destination import find_destination as find

    d = find(host)
    if d.on_stick:
        label = f"stick {d.device or ''} ({d.root})"
    else:
        label = "in RAM - no SSDRESULTS stick"
    return DestinationView(d.results_dir, d.on_stick, label, d.description, d.root)


def copy_from_ram(old: DestinationView, new: DestinationView) -> int:
    """Results held in RAM go onto the stick that just appeared (nothing is deleted)."""
    if old.on_stick or not new.on_stick or old.root is None or new.root is None:
        return 0
    from ssdbench.results.destination import copy_pending

    return copy_pending(old.root, new.root)


class SsdbenchApp(App[int]):
    TITLE = "ssdbench"
    CSS_PATH = "app.tcss"
    ENABLE_COMMAND_PALETTE = False
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("f1", "help", "Help", key_display="F1"),
        Binding("question_mark", "help", "Help", show=False),
        Binding("ctrl+q", "quit", "Quit", show=False, priority=True),
        # as q (asks in a run), not Textual's "Press q to quit" toast
        Binding("ctrl+c", "quit", "Quit", show=False, priority=True),
    ]

    def __init__(self, host: Host | None = None, engine: Engine | None = None, *,
                 results_root: Path | None = None, poll_interval: float | None = POLL_INTERVAL_S,
                 destination_finder: Callable[[Host], DestinationView] = find_destination,
                 ) -> None:
        super().__init__()
        self.host = host or live_host()
        self.engine: Engine = engine or LiveEngine()
        self.results_root_override = results_root
        self.poll_interval = poll_interval
        self.destination_finder = destination_finder
        self.destination: DestinationView | None = None
        self.drives: list[Drive] = []
        self.run_states: dict[str, DriveRunState] = {}
        self.plan_form: PlanForm | None = None  # the plan screen's last values
        self.farewell = ""  # printed on the terminal after the app ends (run_tui)
        self.outcomes: list[DriveOutcome] = []
        self.running = 0
        self.cancel_event = threading.Event()
        self.drives_screen = DrivesScreen()
        self.run_screen: RunScreen | None = None
        self.plan_notes: list[str] = []
        self.unfinished: dict[str, dict[str, object]] = {}
        self.discoveries = 0  # finished discoveries (tests wait on it)

    # ---- start ----

    def on_mount(self) -> None:
        self.push_screen(self.drives_screen)
        self.discover()
        self.locate_destination()
        if self.poll_interval is not None:
            self.watch_block_devices()

    def on_unmount(self) -> None:
        self.cancel_event.set()  # leaving the app stops every run (fio cleanly)

    @property
    def results_root(self) -> Path:
        if self.results_root_override is not None:
            return self.results_root_override
        return self.destination.path if self.destination else DEFAULT_RESULTS

    # ---- workers ----

    @work(thread=True, exclusive=True, exit_on_error=False, group="discover")
    def discover(self) -> None:
        try:
            drives = discover(self.host)
        except Exception as exc:
            self.post_message(DiscoveryFailed(f"{type(exc).__name__}: {exc}"))
            return
        self.post_message(DrivesDiscovered(drives))

    @work(thread=True, exclusive=True, exit_on_error=False, group="destination")
    def locate_destination(self) -> None:
        previous = self.destination
        try:
            dest = self.destination_finder(self.host)
        except Exception as exc:
            dest = DestinationView(DEFAULT_RESULTS, False, "in RAM",
                                   f"finding the results stick failed: {exc}")
        copied = 0
        if previous is not None and self.running == 0:
            try:
                copied = copy_from_ram(previous, dest)
            except OSError as exc:
                dest = replace(dest, description=f"{dest.description}; copying the results "
                               f"held in RAM failed: {exc}")
        self.post_message(DestinationFound(dest, copied))

    @work(thread=True, exclusive=True, exit_on_error=False, group="hotplug")
    def watch_block_devices(self) -> None:
        worker = get_current_worker()
        interval = self.poll_interval or POLL_INTERVAL_S
        stop = threading.Event()
        last: tuple[str, ...] | None = None

        while not worker.is_cancelled:
            try:
                names = block_devices_signature(self.host)
            except Exception:
                return  # no /sys/block to watch (replayed host): manual rescan only
            if last is not None and names != last:
                self.post_message(BlockDevicesChanged(names))
            last = names
            waited = 0.0
            while waited < interval and not worker.is_cancelled:
                stop.wait(0.2)
                waited += 0.2

    def _run_drive(self, drive: Drive, plan: Plan, root: Path, index: int, count: int, *,
                   resume: bool = False) -> None:
        def progress(ev: Progress) -> None:
            self.post_message(RunProgress(ev))

        def command(text: str) -> None:
            self.post_message(RunCommand(drive.name, text))

        try:
            outcome = self.engine.run_drive(drive, plan, index=index, count=count,
                                            results_root=root, progress=progress,
                                            on_command=command, cancel=self.cancel_event,
                                            resume=resume)
        except Exception as exc:  # the adapter should not raise; still show it
            from ssdbench.ui.engine import RunOutcome

            outcome = DriveOutcome(drive.name, drive.consent_id, None, (RunOutcome(
                "-", "failed", f"{type(exc).__name__}: {exc}", None),))
        self.post_message(DriveFinished(outcome))

    @work(thread=True, exclusive=True, exit_on_error=False, group="journal")
    def check_journal(self, root: Path) -> None:
        from ssdbench.ui.engine import unfinished_plans

        try:
            self.post_message(UnfinishedFound(unfinished_plans(root)))
        except Exception as exc:  # an unreadable journal is reported, never overwritten
            self.post_message(UnfinishedFound({}, str(exc)))

    @work(thread=True, exit_on_error=False, group="finish")
    def finish_plan(self) -> None:
        try:
            notes = self.engine.finish(self.results_root)
        except Exception as exc:
            notes = [f"index failed: {exc}"]
        self.post_message(PlanFinished(notes))

    # ---- handlers ----

    def on_drives_discovered(self, message: DrivesDiscovered) -> None:
        from ssdbench.kiosk.station import mark_shared_serials

        # two drives that report one serial: each names the other (screen, journal, record)
        self.drives = mark_shared_serials(message.drives)
        self.discoveries += 1
        self.drives_screen.show_drives(self.drives)
        self._maybe_check_journal()

    def _maybe_check_journal(self) -> None:
        if self.running == 0 and self.discoveries and (
                self.destination is not None or self.results_root_override is not None):
            self.check_journal(self.results_root)

    def on_unfinished_found(self, message: UnfinishedFound) -> None:
        self.unfinished = message.entries
        if message.error:
            self.notify(message.error, severity="error", title="Journal")
        here = [m.drive.name for m in match_unfinished(self.drives, message.entries)
                if m.drive is not None]
        if here:
            self.drives_screen.set_status(
                f"Unfinished plan on {', '.join(here)}: R resumes it; p plans a new run.")

    def on_discovery_failed(self, message: DiscoveryFailed) -> None:
        self.discoveries += 1
        self.drives_screen.set_status(f"Discovery failed: {message.error} (r: retry)")
        self.notify(message.error, severity="error", title="Discovery failed")

    def on_block_devices_changed(self, _message: BlockDevicesChanged) -> None:
        if self.running == 0:
            self.drives_screen.set_status("Drives changed: looking again...")
            self.discover()
            if self.destination is not None and not self.destination.on_stick:
                self.locate_destination()  # a results stick may just have been plugged in

    def on_destination_found(self, message: DestinationFound) -> None:
        first = self.destination is None
        changed = self.destination != message.destination
        self.destination = message.destination
        if changed and (not first or not message.destination.on_stick):
            self.notify(message.destination.description, title="Results",
                        severity="information" if message.destination.on_stick else "warning")
        self._maybe_check_journal()
        if message.copied:
            self.notify(f"{message.copied} file(s) held in RAM copied to the stick.",
                        title="Results")
        for bar in self.query(TopBar):
            bar.refresh_destination()
        for screen in self.screen_stack:
            for bar in screen.query(TopBar):
                bar.refresh_destination()

    def on_run_progress(self, message: RunProgress) -> None:
        ev = message.event
        state = self.run_states.get(ev.drive)
        if state is None:
            return
        state.apply(ev)
        if self.run_screen is not None and self.run_screen.is_mounted:
            self.run_screen.refresh_drive(ev.drive)

    def on_run_command(self, message: RunCommand) -> None:
        state = self.run_states.get(message.drive)
        if state is None:
            return
        state.command_started(message.command)
        if self.run_screen is not None and self.run_screen.is_mounted:
            self.run_screen.refresh_drive(message.drive)

    def on_drive_finished(self, message: DriveFinished) -> None:
        o = message.outcome
        self.outcomes.append(o)
        state = self.run_states.get(o.drive)
        if state is not None:
            notes = tuple(f"{r.name}: {r.state}: {r.error}" for r in o.runs if r.error)
            state.finished(o.state, notes + o.notes)
        self.running -= 1
        if self.run_screen is not None and self.run_screen.is_mounted:
            self.run_screen.refresh_drive(o.drive)
        if self.running == 0:
            self.finish_plan()

    def on_plan_finished(self, message: PlanFinished) -> None:
        self.plan_notes = message.notes
        if self.run_screen is not None:
            self.run_screen.mark_finished()

    # ---- flow ----

    def open_plan(self, drives: list[Drive]) -> None:
        self.push_screen(PlanScreen(drives, self.plan_form))

    def confirm_plan(self, drives: list[Drive], plan: Plan) -> None:
        refused = [d for d in drives if d.protected]
        if refused:
            self.notify("protected drives cannot be run: "
                        + ", ".join(d.name for d in refused), severity="error")
            return
        if not plan.destructive:
            self.start_plan(drives, plan)
            return
        self._consent(drives, plan, 0)

    def _consent(self, drives: list[Drive], plan: Plan, index: int) -> None:
        if index == len(drives):
            self.start_plan(drives, plan)
            return

        def done(ok: bool | None) -> None:
            if ok:
                self._consent(drives, plan, index + 1)
            else:
                self.notify("Plan cancelled: nothing was started.", severity="warning")

        self.push_screen(ConsentScreen(drives[index], index + 1, len(drives)), done)

    def resume_unfinished(self) -> None:
        """R: each unfinished entry on the drive of its identity; a drive that cannot be
        told apart from the one that ran is asked about (run again / skip)."""
        jobs: list[tuple[Drive, Plan, bool]] = []
        doubts: list[tuple[Drive, Plan, str, str]] = []
        problems: list[str] = []
        for m in match_unfinished(self.drives, self.unfinished):
            drive = m.drive
            if drive is None:
                problems.append(f"{m.key}: not connected")
                continue
            if drive.protected:
                problems.append(f"{drive.name}: protected ({', '.join(drive.protect_reasons)})")
                continue
            try:
                plan = journal_plan(m.entry)
            except Exception as exc:
                problems.append(f"{drive.name}: the journal's plan is not valid: {exc}")
                continue
            if m.doubt:
                what = f"an unfinished plan {plan.name} ({m.key})"
                doubts.append((drive, plan, what, m.doubt))
            else:
                jobs.append((drive, plan, True))
        for p in problems:
            self.notify(p, severity="warning", title="Not resumed", markup=False)
        self._ask_doubts(jobs, doubts)

    def _ask_doubts(self, jobs: list[tuple[Drive, Plan, bool]],
                    doubts: list[tuple[Drive, Plan, str, str]]) -> None:
        if not doubts:
            if not jobs:
                self.notify("Nothing to resume here.", severity="warning")
                return
            self._consent_jobs(jobs, 0)
            return
        (drive, plan, what, why), rest = doubts[0], doubts[1:]

        def done(again: bool | None) -> None:
            if again:
                jobs.append((drive, plan, False))  # afresh: nothing of the old entry kept
            else:
                self.notify(f"{drive.name}: skipped (not resumed, not run).",
                            severity="warning", title="Not resumed", markup=False)
            self._ask_doubts(jobs, rest)

        self.push_screen(TwinQuestion(drive, what, why), done)

    def _consent_jobs(self, jobs: list[tuple[Drive, Plan, bool]], index: int) -> None:
        if index == len(jobs):
            self.start_jobs([(d, p) for d, p, _ in jobs],
                            resume={d.name for d, _, r in jobs if r})
            return

        def done(ok: bool | None) -> None:
            if ok:
                self._consent_jobs(jobs, index + 1)
            else:
                self.notify("Resume cancelled: nothing was started.", severity="warning")

        drive, plan, resume = jobs[index]
        if not plan.destructive:
            done(True)
            return
        entry = next((m.entry for m in match_unfinished(self.drives, self.unfinished)
                      if m.drive is drive), {}) if resume else {}
        text = (resume_text(plan, entry) if resume
                else f"Runs plan {plan.name} again from the start (not resumed)")
        self.push_screen(ConsentScreen(drive, index + 1, len(jobs), resuming=text), done)

    def start_plan(self, drives: list[Drive], plan: Plan) -> None:
        self.start_jobs([(d, plan) for d in drives])

    def start_jobs(self, jobs: list[tuple[Drive, Plan]], *,
                   resume: bool | set[str] = False) -> None:
        """``resume``: every job, or the names of the drives whose journal entry is
        continued (the others run afresh)."""
        self.cancel_event = threading.Event()
        self.outcomes = []
        self.plan_notes = []
        self.unfinished = {}
        self.run_states = {
            d.name: DriveRunState.planned(
                d.name, [(r.name, s) for r in plan.runs for s in stage_names(r)])
            for d, plan in jobs
        }
        for d, plan in jobs:  # the plan ETA starts from the plan screen's estimate
            self.run_states[d.name].set_estimates(
                stage_estimates(d, plan), assumed_write_mib_s=expected_speed(d)[0])
        self.running = len(jobs)
        self.run_screen = RunScreen(self.run_states)
        if isinstance(self.screen, DrivesScreen):
            self.push_screen(self.run_screen)
        else:
            self.switch_screen(self.run_screen)  # replaces the plan screen
        root = self.results_root
        for i, (d, plan) in enumerate(jobs):
            self.run_worker(
                lambda d=d, plan=plan, i=i: self._run_drive(
                    d, plan, root, i, len(jobs),
                    resume=resume if isinstance(resume, bool) else d.name in resume),
                thread=True, exit_on_error=False, group="run", name=f"run-{d.name}")

    def ask_cancel(self) -> None:
        def done(yes: bool | None) -> None:
            if yes:
                self.cancel_event.set()
                self.notify("Cancelling: fio is stopped cleanly, the run is marked "
                            "cancelled.", severity="warning")

        self.push_screen(ConfirmScreen("Cancel the run on every drive?\n\n"
                                       + self._left_behind()), done)

    def _left_behind(self) -> str:
        """What a cancel leaves: the drive's state, the results, how to go on."""
        return (f"fio is stopped cleanly; the drives are left partly written (their data "
                f"was already erased). What was measured stays in {self.results_root}; "
                "R on the drives screen resumes the plan, redoing the cancelled run from "
                "its erase.")

    def _cancelled_farewell(self) -> str:
        names = ", ".join(self.run_states) or "the drives"
        return (f"ssdbench: run cancelled on {names}; the drives are left partly written. "
                f"Results so far: {self.results_root} (ssdbench, then R, resumes).")

    def open_results(self) -> None:
        self.clear_notifications()
        self.push_screen(ResultsScreen(list(self.outcomes), self.results_root,
                                       list(self.plan_notes)))

    def back_to_drives(self) -> None:
        while len(self.screen_stack) > 2:
            self.pop_screen()
        self.switch_screen(self.drives_screen)
        self.run_screen = None
        self.discover()

    # ---- actions ----

    def action_help(self) -> None:
        if isinstance(self.screen, HelpScreen):
            self.screen.dismiss(None)
            return
        self.push_screen(HelpScreen())

    async def action_quit(self) -> None:
        if self.running:
            def done(yes: bool | None) -> None:
                if yes:
                    self.cancel_event.set()
                    self.farewell = self._cancelled_farewell()
                    self.exit(int(ExitCode.INTERRUPTED), return_code=int(ExitCode.INTERRUPTED))

            self.push_screen(ConfirmScreen("A run is in progress. Cancel it and quit?\n\n"
                                           + self._left_behind()), done)
            return
        if self.outcomes:
            self.farewell = f"ssdbench: results in {self.results_root}"
        self.exit(0)


def build_app(host: Host | None = None, engine: Engine | None = None, *,
              results_root: Path | None = None,
              poll_interval: float | None = POLL_INTERVAL_S,
              destination_finder: Callable[[Host], DestinationView] = find_destination,
              ) -> SsdbenchApp:
    """The app as `ssdbench` (no arguments) starts it; tests pass replayed hosts/engines."""
    console_safe_scrollbars()
    return SsdbenchApp(host, engine, results_root=results_root, poll_interval=poll_interval,
                       destination_finder=destination_finder)


def console_safe_scrollbars() -> None:
    """Scrollbar thumbs without the 1/8 block glyphs the Linux console font lacks."""
    ScrollBarRender.VERTICAL_BARS = [" "] * 8
    ScrollBarRender.HORIZONTAL_BARS = [" "] * 8


def run_tui() -> int:
    import sys

    app = build_app()
    result = app.run()
    if app.farewell:  # the terminal is not left blank: what happened, where the files are
        print(app.farewell, file=sys.stderr)
    return int(result or 0)


def resume_text(plan: Plan, entry: dict[str, object]) -> str:
    """What R resumes, for its consent: the plan, each run's state in the journal."""
    runs = entry.get("runs")
    states = runs if isinstance(runs, dict) else {}
    parts = []
    for r in plan.runs:
        rec = states.get(r.name)
        state = rec.get("state") if isinstance(rec, dict) else None
        if state in ("done", "failed"):
            parts.append(f"{r.name} {state} (kept)")
        elif state is not None:
            parts.append(f"{r.name} {state} (redone from its erase)")
        else:
            parts.append(f"{r.name} to run")
    return f"Resumes plan {plan.name}: " + ", ".join(parts)
