"""The run screen: one progress row per drive, the highlighted drive's panel, a log."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, RichLog, Static

from ssdbench.ui import fmt
from ssdbench.ui.state import DriveRunState
from ssdbench.ui.widgets import STATE_STYLE, RunPanel, TopBar, stage_list
from ssdbench.untrusted import shown

# 80 columns in all with each cell's space either side; "probe-after_torture" is 19
COLUMN_WIDTHS = {"drive": 7, "stage": 19, "%": 4, "ETA": 6, "IOPS": 8, "MiB/s": 7,
                 "state": 9}
COLUMNS = tuple(COLUMN_WIDTHS)


def progress_row(state: DriveRunState) -> tuple[Text | str, ...]:
    cur = state.current
    done = sum(1 for s in state.stages if s.state in ("done", "not available"))
    stage = cur.name if cur else f"{done}/{len(state.stages)} stages done"
    pct = "-" if cur is None or cur.fraction is None else f"{cur.fraction * 100:.0f}%"
    return (Text(shown(state.drive)), stage[:19], pct, fmt.duration(cur.eta_s if cur else None),
            fmt.number(state.last_iops), fmt.number(state.last_mib_s, digits=1),
            Text(state.state, style=STATE_STYLE.get(state.state, "")))


class RunScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("c", "cancel_run", "Cancel run"),
        Binding("v", "results", "Results"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, states: dict[str, DriveRunState]) -> None:
        super().__init__()
        self.states = states
        self.finished = False
        self._results_asked = False  # v pressed while the results index was being written
        self._shown: str | None = next(iter(states), None)
        self._log_len: dict[str, int] = {}

    def compose(self) -> ComposeResult:
        yield TopBar()
        yield DataTable(id="progress", cursor_type="row")
        with Horizontal(id="run-body"):
            with VerticalScroll(id="stages-pane"):
                yield Static("", id="stages")
            yield RunPanel(id="panel")
        yield RichLog(id="log", max_lines=500, wrap=True)  # a long line is never cut
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#progress", DataTable)
        for c, width in COLUMN_WIDTHS.items():
            table.add_column(c, key=c, width=width)
        for name, state in self.states.items():
            table.add_row(*progress_row(state), key=name)
        table.focus()
        self.refresh_all()

    def refresh_drive(self, name: str) -> None:
        state = self.states.get(name)
        if state is None:
            return
        table = self.query_one("#progress", DataTable)
        for col, value in zip(COLUMNS, progress_row(state), strict=True):
            table.update_cell(name, col, value)
        if name == self._shown:
            self._show(state)

    def refresh_all(self) -> None:
        for name in self.states:
            self.refresh_drive(name)

    def _show(self, state: DriveRunState) -> None:
        self.query_one("#stages", Static).update(stage_list(state))
        self._keep_running_stage_in_view(state)
        self.query_one("#panel", RunPanel).show(state)
        log = self.query_one("#log", RichLog)
        seen = self._log_len.get(state.drive, 0)
        lines = list(state.log)
        if seen > len(lines):  # the deque rotated: redraw
            seen = 0
            log.clear()
        for line in lines[seen:]:
            log.write(f"{state.drive}: {line}")
        self._log_len[state.drive] = len(lines)

    def _keep_running_stage_in_view(self, state: DriveRunState) -> None:
        """Scroll the stage list so the running stage (or the last finished one) shows,
        with a line of context above it."""
        line, run, target = 0, None, None
        for s in state.stages:
            if s.run != run:
                run = s.run
                line += 1  # the run's header line
            if s.state == "running" or (target is None and s.state == "pending"):
                target = line
                if s.state == "running":
                    break
            line += 1
        if target is None:
            target = line
        pane = self.query_one("#stages-pane", VerticalScroll)
        height = pane.size.height or 15
        top = pane.scroll_y
        if not top <= target < top + height:
            pane.scroll_to(y=max(0, target - 2), animate=False, immediate=True)

    def on_data_table_row_highlighted(self, event: DataTable.RowHighlighted) -> None:
        name = event.row_key.value if event.row_key is not None else None
        if name and name != self._shown:
            self._shown = name
            self._log_len.clear()
            self.query_one("#log", RichLog).clear()
            self._show(self.states[name])

    def on_data_table_row_selected(self, _event: DataTable.RowSelected) -> None:
        if self.finished:
            self.action_results()

    def mark_finished(self) -> None:
        self.finished = True
        self.refresh_all()
        if self._results_asked:  # v was pressed while the index was being written
            self.action_results()
            return
        states = {s.state for s in self.states.values()}
        if "cancelled" in states:
            self.notify("Run cancelled: the drives are left partly written. v (or Enter): "
                        "the results so far; R on the drives screen resumes.",
                        severity="warning", timeout=10)
        elif "failed" in states:
            self.notify("Plan ended with a failure: v (or Enter) for the results and why.",
                        severity="error", timeout=10)
        else:
            self.notify("Plan finished: press v (or Enter) for the results.", timeout=10)

    def action_cancel_run(self) -> None:
        if self.finished:
            self.notify("The plan has finished; nothing to cancel.")
            return
        self.app.ask_cancel()  # type: ignore[attr-defined]

    def action_results(self) -> None:
        if not self.finished:
            if self.app.running == 0:  # type: ignore[attr-defined]
                # every drive is done; index.html and its charts are being written
                self._results_asked = True
                self.notify("Writing the results index: the results open when it is done.")
            else:
                self.notify("Results are shown when every drive has finished.")
            return
        self.app.open_results()  # type: ignore[attr-defined]
