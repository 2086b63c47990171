"""Small widgets shared by the screens: the top bar (destination), the run panel, charts."""

from __future__ import annotations

from rich.text import Text
from textual.widgets import Static

from ssdbench import __version__
from ssdbench.ui import fmt
from ssdbench.ui.state import DriveRunState

STATE_STYLE = {
    "pending": "dim", "running": "bold yellow", "done": "green", "failed": "bold red",
    "cancelled": "bold magenta", "skipped": "dim", "waiting": "dim",
    "not available": "yellow",  # no SMART on the drive: not a failure (stages/health.py)
}
STATE_MARK = {"pending": " ", "running": ">", "done": "+", "failed": "X", "cancelled": "C",
              "skipped": "-", "waiting": " ", "not available": "~"}


class TopBar(Static):
    """One line: name, results destination (stick / RAM), help key."""

    DEFAULT_CSS = """
    TopBar { height: 1; background: $primary; color: $text; }
    """

    def on_mount(self) -> None:
        self.refresh_destination()

    def refresh_destination(self) -> None:
        dest = getattr(self.app, "destination", None)
        t = Text()
        t.append(f" ssdbench {__version__} ", style="bold")
        if dest is None:
            t.append(" results: looking for the SSDRESULTS stick...")
        elif dest.on_stick:
            t.append(" results: ")
            t.append(dest.label, style="bold")
        else:
            t.append(" results: ")
            t.append(dest.label, style="bold reverse")
        t.append("  F1/? help", style="dim")
        self.update(t)


def stage_list(state: DriveRunState) -> Text:
    t = Text()
    run = None
    for s in state.stages:
        if s.run != run:
            run = s.run
            t.append(f"{run}\n", style="bold")
        t.append(f" {STATE_MARK.get(s.state, '?')} {s.name:<20}", style=STATE_STYLE.get(
            s.state, ""))
        t.append(f"{s.state}\n", style=STATE_STYLE.get(s.state, ""))
    return t


def stage_progress(state: DriveRunState, width: int) -> Text:
    cur = state.current
    t = Text()
    if cur is None:
        t.append(f"{state.drive}: {state.state}", style=STATE_STYLE.get(state.state, ""))
        return t
    pct = "?%" if cur.fraction is None else f"{cur.fraction * 100:.0f}%"
    # three short lines: a panel 45 columns wide never wraps them (#24 item 5)
    t.append(f"{cur.name} ", style="bold")
    t.append(f"{pct}  ETA {fmt.duration(cur.eta_s)}\n")
    t.append(f"elapsed {fmt.duration(cur.elapsed_s)}")
    plan_eta = state.plan_eta_s
    if plan_eta is not None:
        t.append("  plan ETA ")
        t.append(fmt.duration(plan_eta), style="bold")
        t.append(f"\nplan ETA from {state.plan_eta_basis}", style="dim")
    t.append("\n")
    t.append(fmt.bar(cur.fraction, width), style="green")
    return t


def numbers(state: DriveRunState) -> Text:
    """IOPS (and MiB/s) for random stages; MiB/s alone for fills and probes, whose IOPS of
    large blocks say nothing."""
    t = Text()
    mib = (f"now {fmt.number(state.last_mib_s, digits=1)}  "
           f"avg {fmt.number(state.avg_mib_s, digits=1)}")
    if chart_series(state)[1] == "MiB/s":
        t.append("MiB/s ", style="bold")
        t.append(mib)
        return t
    t.append("IOPS ", style="bold")
    t.append(f"now {fmt.number(state.last_iops)}  avg {fmt.number(state.avg_iops)}")
    if state.mib_s:
        t.append("\nMiB/s ", style="bold")
        t.append(mib)
    return t


def series_chart(values: list[float], title: str, width: int, height: int, *,
                 whole: bool = False) -> Text:
    """``whole``: the full series stretched over the width; else the last seconds, newest
    on the right."""
    t = Text()
    top = max(values) if values else 0.0
    label_w = 8
    span = f"{len(values)} s" if whole else f"last {len(values)} s"
    t.append(f"{title} ({span}, max {fmt.number(top)})\n", style="bold")
    rows = fmt.chart(values, max(1, width - label_w), height, stretch=whole)
    for i, row in enumerate(rows):
        label = fmt.number(top) if i == 0 else ("0" if i == len(rows) - 1 else "")
        t.append(f"{label:>{label_w - 1}} ", style="dim")
        t.append(row + ("\n" if i < len(rows) - 1 else ""), style="cyan")
    return t


RANDOM_STAGES = ("torture", "randread")  # IOPS is the measure; elsewhere MiB/s


def chart_series(state: DriveRunState) -> tuple[list[float], str]:
    """IOPS for random stages, MiB/s for sequential ones (fill, probes, read scan)."""
    cur = state.current
    stage = cur.name if cur is not None else state.series_stage
    random = stage in RANDOM_STAGES if stage is not None else bool(state.iops)
    if random and state.iops:
        return list(state.iops), "IOPS"
    if state.mib_s:
        return list(state.mib_s), "MiB/s"
    return list(state.iops), "IOPS"


class RunPanel(Static):
    """Everything about one drive's run (stages, bar, numbers, chart, command)."""

    DEFAULT_CSS = """
    RunPanel { height: auto; }
    """

    def show(self, state: DriveRunState | None) -> None:
        if state is None:
            self.update("")
            return
        width = max(20, (self.size.width or 60) - 2)
        t = Text()
        t.append_text(stage_progress(state, width))
        t.append("\n")
        t.append_text(numbers(state))
        t.append("\n")
        values, title = chart_series(state)
        if values:
            t.append_text(series_chart(values, title, width, 5))
        elif state.state in ("done", "failed", "cancelled"):
            t.append(f"Finished: {state.state}. v (or Enter on the table): results.",
                     style=STATE_STYLE.get(state.state, ""))
        else:
            t.append("(no IOPS or MiB/s from this stage)", style="dim")
        t.append("\n")
        t.append("$ ", style="bold")
        t.append(state.command or "-", style="dim")
        self.update(t)
