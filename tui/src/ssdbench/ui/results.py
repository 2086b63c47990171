"""The results screen: each drive's answer first (what its plan answers: the capacity
verdict, the grade, the erase's PASS/FAIL and why, the speed corners, the steady IOPS:
report/answer.py), then one row per run with the columns that belong to the runs shown,
where the files are, and the IOPS series of the highlighted run."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, ClassVar

from rich.console import Console, ConsoleOptions, RenderResult
from rich.padding import Padding
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.message import Message
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ssdbench import jsonfile
from ssdbench.report.answer import KIND_COLUMNS, VERDICT_KINDS, Answer, answer, columns_for
from ssdbench.ui import fmt
from ssdbench.ui.engine import DriveOutcome
from ssdbench.ui.widgets import STATE_STYLE, TopBar, series_chart
from ssdbench.untrusted import shown

# drive, run, state, then the columns of the runs shown (report/answer.py KIND_COLUMNS):
# the most each may take; a column is as wide as its widest cell (#45 C: a mostly empty
# `run` column cut the grade to "not gra"), and the widest give way until the table fits
# the screen (one space either side of a cell)
COLUMN_WIDTHS = {"drive": 7, "run": 19, "state": 9, "capacity": 12, "grade": 12,
                 "erase": 8, "speed": 30, "IOPS": 7, "TRIM": 12, "stalls": 9,
                 "steady at": 11, "steady state": 12, "health": 13}
LEAD = ("drive", "run", "state")
TONE_STYLE = {"good": "bold green", "bad": "bold red", "": "bold"}


def columns_of(summaries: list[RunSummary]) -> tuple[str, ...]:
    """The table's columns: drive, run, state and those of the kinds shown."""
    return (*LEAD, *columns_for(s.kind for s in summaries))


@dataclass(frozen=True)
class RunSummary:
    drive: str
    run: str
    state: str
    error: str | None
    run_dir: Path | None
    steady_mean: float | None = None
    zero_seconds: int | None = None
    longest_stall_s: int | None = None
    steady_state_at_s: int | None = None
    steady_reached: bool | None = None
    trim_verdict: str | None = None
    trim_reason: str = ""
    # the three probes (MiB/s): clean, after the torture, after TRIM
    trim_probes: tuple[float | None, float | None, float | None] | None = None
    erase: str = "-"
    iops: tuple[float, ...] = ()
    problems: tuple[str, ...] = ()
    events: str = ""  # the cliff and the events in words (docs/analysis.md)
    kind: str = ""  # run.json kind ("" when unknown)
    answer: Answer | None = None  # what the run answers (report/answer.py)


def summarise(outcomes: list[DriveOutcome]) -> list[RunSummary]:
    """Analyse each run folder (blocking: numpy, files). Never raises for one bad run."""
    from ssdbench.report import analyse_run
    from ssdbench.report.load import load_run
    from ssdbench.report.summary import events_text

    out: list[RunSummary] = []
    for d in outcomes:
        for r in d.runs:
            base = RunSummary(d.drive, r.name, r.state, r.error, r.run_dir,
                              kind=_kind_of(r.name))
            if r.run_dir is None or not r.run_dir.is_dir():
                out.append(base)
                continue
            try:
                a = analyse_run(r.run_dir)
                data = load_run(r.run_dir, rebuild=False)
                meta = _meta(r.run_dir / "run.json")
                kind = str(meta.get("kind") or a.kind)
                erase = _erase_text(meta)
                iops = tuple(float(v) for v in data.iops["iops"]) if data.iops else ()
                out.append(RunSummary(
                    d.drive, r.name, r.state, r.error, r.run_dir,
                    steady_mean=a.iops.steady.mean if a.iops else None,
                    zero_seconds=a.iops.stalls.zero_seconds if a.iops else None,
                    longest_stall_s=a.iops.stalls.longest_zero_run_s if a.iops else None,
                    steady_state_at_s=a.iops.steady_state.at_s if a.iops else None,
                    steady_reached=a.iops.steady_state.reached if a.iops else None,
                    trim_verdict=a.trim.verdict if a.trim else None,
                    trim_reason=a.trim.reason if a.trim else "",
                    trim_probes=(a.trim.clean_mib_s, a.trim.after_torture_mib_s,
                                 a.trim.after_trim_mib_s) if a.trim else None,
                    erase=erase, iops=iops, problems=a.problems,
                    events=_events_line(a.iops, events_text), kind=kind,
                    answer=answer(kind, meta, a, state=r.state, error=r.error or "")))
            except Exception as exc:  # show the run, say why it has no numbers
                out.append(RunSummary(d.drive, r.name, r.state, r.error, r.run_dir,
                                      problems=(f"analysis failed: {exc}",)))
    return out


def _events_line(it: Any, words: Any) -> str:
    """``cliff at 700 s from 42,000 IOPS; 2 throttles, 1 stall (longest 8 s)``."""
    if it is None:
        return ""
    parts = []
    if it.cliff.at_s is not None and it.cliff.reference_iops is not None:
        parts.append(f"cliff at {it.cliff.at_s} s from {it.cliff.reference_iops:,.0f} IOPS")
    if it.events is not None and (text := words(it.events)):
        parts.append(text)
    return "; ".join(parts)


def _kind_of(run: str) -> str:
    """A run's kind from its name (``consistency-op25``), for a run without run.json."""
    kind = run.split("-", maxsplit=1)[0]
    return kind if kind in KIND_COLUMNS else ""


def _meta(run_json: Path) -> dict[str, Any]:
    """run.json, or {} when it cannot be read (the analysis says why)."""
    try:
        data = jsonfile.read(run_json)
    except (OSError, ValueError):
        return {}
    return data if isinstance(data, dict) else {}


def _erase_text(meta: dict[str, Any]) -> str:
    erase = meta.get("erase")
    if not isinstance(erase, dict):
        return "-"
    method = erase.get("method", "?")
    if not erase.get("secure", True):
        return f"{method} (not secure-erased)"
    return f"{method}, {'verified' if erase.get('verified') else 'NOT verified'}"


def steady_text(s: RunSummary) -> str:
    if s.steady_reached is None:
        return "-"
    return fmt.duration(s.steady_state_at_s) if s.steady_reached else "not reached"


def summary_row(s: RunSummary, columns: tuple[str, ...]) -> tuple[Text | str, ...]:
    """The run's cells under ``columns``; a column of another kind of run: blank."""
    stalls = "-" if s.zero_seconds is None else f"{s.zero_seconds}s/{s.longest_stall_s}s"
    own = KIND_COLUMNS.get(s.kind, KIND_COLUMNS["consistency"])
    cells = dict(s.answer.cells) if s.answer else {}
    cells.update({"IOPS": fmt.number(s.steady_mean), "TRIM": s.trim_verdict or "-",
                  "stalls": stalls, "steady at": steady_text(s)})
    # the verdict column (capacity, grade, erase, speed) in the answer's colour
    tone = TONE_STYLE[s.answer.tone] if s.answer and s.kind in VERDICT_KINDS else ""
    out: list[Text | str] = [Text(shown(s.drive)), Text(shown(s.run)),
                             Text(s.state, style=STATE_STYLE.get(s.state, ""))]
    for c in columns[len(LEAD):]:
        out.append(Text(shown(cells.get(c, "-")), style=tone if c == own[0] else "")
                   if c in own else "")
    return tuple(out)


def column_widths(columns: tuple[str, ...], rows: Sequence[Sequence[Text | str]],
                  screen: int = 80) -> list[int]:
    """Each column as wide as its title and widest cell (at most COLUMN_WIDTHS); when the
    table is wider than ``screen``, the widest columns give way first."""
    widths = [min(COLUMN_WIDTHS[c], max([len(c), *(len(str(r[i])) for r in rows)]))
              for i, c in enumerate(columns)]
    while sum(w + 2 for w in widths) > screen and max(widths) > 7:
        widest = widths.index(max(widths))
        widths[widest] -= 1
    return widths


class Indented:
    """Lines, each wrapped under its own indent (#45 D: a wrapped reason went back to
    column 0); ``str()`` is the plain text."""

    def __init__(self) -> None:
        self.lines: list[tuple[int, Text]] = []

    def add(self, indent: int, text: Text) -> Text:
        self.lines.append((indent, text))
        return text

    def __str__(self) -> str:
        return "\n".join(" " * i + t.plain for i, t in self.lines)

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        for indent, text in self.lines:
            yield Padding(text, (0, 0, 0, indent)) if indent else text


def answer_text(summaries: list[RunSummary]) -> Indented:
    """Each drive's answer, first on the screen: one line per drive, then the reasons
    (the erase's, the grade's, the corners) and the erase record's file, indented."""
    out = Indented()
    drives = list(dict.fromkeys(s.drive for s in summaries))
    for drive in drives:
        mine = [s for s in summaries if s.drive == drive]
        t = out.add(0, Text())
        t.append(f"{shown(drive)}: ", style="bold")
        for i, s in enumerate(mine):
            if i:
                t.append(" · ")
            if s.answer is None:
                t.append(f"{shown(s.run)} {s.state}",
                         style=STATE_STYLE.get(s.state, ""))
                continue
            for j, part in enumerate(s.answer.parts()):
                t.append((" · " if j else "") + shown(part.headline),
                         style=TONE_STYLE[part.tone])
        for s in mine:
            a = s.answer
            if a is None:
                if s.error:
                    out.add(2, Text(f"{shown(s.run)}: {shown(s.error)}", style="red"))
                continue
            for part in a.parts():  # why, where it is not plainly good (80x25 is small);
                # a speed run's four corners are its answer (its verdict is said above)
                if part.reason and part.kind in VERDICT_KINDS and (
                        part.tone != "good" or part.kind == "speed"):
                    said = (f"corners: {shown(part.reason)}" if part.kind == "speed"
                            else f"{shown(part.headline)}: {shown(part.reason)}")
                    out.add(2, Text(said, style="red" if part.tone == "bad" else ""))
            if a.record:  # in the run's folder, under the drive's folder named below
                line = out.add(2, Text(f"erase record: {shown(s.run)}/{shown(a.record)}"))
                if a.signed is False:
                    line.append(" UNSIGNED", style="bold red")
    return out


def trim_probes_text(probes: tuple[float | None, float | None, float | None]) -> str:
    """``clean 312.4, after torture 200.1, after TRIM 305.0 MiB/s`` (a missing one: -)."""
    clean, torture, trim = (fmt.number(v, digits=1) for v in probes)
    return f"clean {clean}, after torture {torture}, after TRIM {trim} MiB/s"


def where_text(outcomes: list[DriveOutcome], root: Path) -> Text:
    """Where the pages are, each path on its own line (a path cut by a wrap cannot be
    typed): index.html over every drive, then each drive's report.html."""
    t = Text()
    dirs = sorted({o.drive_dir for o in outcomes if o.drive_dir is not None})
    t.append("Open in a browser: ", style="bold")
    t.append("index.html (every drive), report.html (each drive)\n")
    t.append(f"{root / 'index.html'}")
    for d in dirs:
        t.append(f"\n{d / 'report.html'}")
    return t


class ResultsLoaded(Message):
    def __init__(self, summaries: list[RunSummary]) -> None:
        super().__init__()
        self.summaries = summaries


class ResultsScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("escape", "drives", "Drives", key_display="Esc"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self, outcomes: list[DriveOutcome], root: Path, notes: list[str]) -> None:
        super().__init__()
        self.outcomes = outcomes
        self.root = root
        self.notes = notes
        self.summaries: list[RunSummary] = []

    def compose(self) -> ComposeResult:
        yield TopBar()
        # the answers and the pages' paths scroll (a scroll bar shows when they do not
        # fit), so the table and the detail pane stay on an 80x25 screen (#45 C)
        with VerticalScroll(id="results-top"):
            yield Static("Analysing the results...", id="results-answer")
            yield Static("", id="results-where")
        yield DataTable(id="results", cursor_type="row")
        yield Static("", id="results-detail")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#results", DataTable).focus()
        self.load()

    @work(thread=True, exclusive=True, exit_on_error=False)
    def load(self) -> None:
        self.post_message(ResultsLoaded(summarise(self.outcomes)))

    def on_results_loaded(self, message: ResultsLoaded) -> None:
        self.summaries = message.summaries
        table = self.query_one("#results", DataTable)
        table.clear(columns=True)
        columns = columns_of(self.summaries)
        rows = [summary_row(s, columns) for s in self.summaries]
        for c, width in zip(columns, column_widths(columns, rows, self.size.width or 80),
                            strict=True):
            table.add_column(c, key=c, width=width)
        for i, row in enumerate(rows):
            table.add_row(*row, key=str(i))
        self.query_one("#results-answer", Static).update(answer_text(self.summaries))
        where = where_text(self.outcomes, self.root)
        for n in self.notes:
            where.append(f"\n{n}", style="yellow")
        self.query_one("#results-where", Static).update(where)
        self._detail()

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._detail()

    def _detail(self) -> None:
        table = self.query_one("#results", DataTable)
        if not self.summaries:
            return
        s = self.summaries[max(0, min(table.cursor_row, len(self.summaries) - 1))]
        t = Text()
        t.append(f"{shown(s.drive)} {shown(s.run)}: {s.state}", style="bold")
        a = s.answer
        if a is not None and s.kind in VERDICT_KINDS:
            # the verdict is the row's cell just above, in its colour (#45 B: said three
            # times on a speed run's screen): here why
            t.append("\n")
            if a.reason:
                t.append(f"{shown(a.reason)}\n")
        elif s.steady_mean is not None or s.steady_reached is not None:
            t.append(f"   steady mean {fmt.number(s.steady_mean)} IOPS   ")
            t.append(f"steady state {steady_text(s)}\n")
        else:
            t.append("\n")
        if s.zero_seconds is not None:
            t.append(f"stalls: {s.zero_seconds} s at zero IOPS, longest {s.longest_stall_s} s"
                     f"   erase: {s.erase}\n")
        if s.events:
            t.append(f"{s.events}\n")
        if s.trim_verdict:
            t.append(f"TRIM {s.trim_verdict}", style="bold")
            if s.trim_probes is not None:
                t.append(f"   probes: {trim_probes_text(s.trim_probes)}")
            t.append(f"\n{s.trim_reason}\n" if s.trim_reason else "\n")
        if s.error:
            t.append(f"{s.run}: {s.error}\n", style="red")
        for p in s.problems[:3]:
            t.append(f"{p}\n", style="yellow")
        if s.iops:
            width = max(30, (self.size.width or 80) - 2)
            t.append_text(series_chart(list(s.iops), "IOPS, whole torture", width, 5,
                                       whole=True))
        if s.run_dir is not None:
            t.append(f"\nfiles: {s.run_dir}", style="dim")
        self.query_one("#results-detail", Static).update(t)

    def action_drives(self) -> None:
        self.app.back_to_drives()  # type: ignore[attr-defined]
