"""The plan screen: preset, main parameters (validated by RunParams), time per drive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, VerticalScroll
from textual.screen import Screen
from textual.widgets import Footer, Input, Label, Select, Static

from ssdbench.devices import Drive
from ssdbench.plan.plans import PlanError
from ssdbench.stages.params import ParamError, RunParams
from ssdbench.ui import fmt
from ssdbench.ui.engine import (
    ERASE_CHOICES,
    ERASE_SECURE,
    PRESETS,
    Plan,
    plan_with,
    preset_op_levels,
    preset_plan,
)
from ssdbench.ui.estimate import basis, estimate
from ssdbench.ui.widgets import TopBar

# (input id = plan key, label)
FIELDS = (
    ("torture_seconds", "Torture (s)"),
    ("trim_torture_seconds", "TRIM torture (s)"),
    ("op_levels", "OP levels (%)"),
    ("probe_gib", "Probe (GiB)"),
    ("fill_passes", "Fill passes"),
)


def parse_op_levels(text: str) -> tuple[int, ...]:
    """"0, 25" → (0, 25); every level validated like op_percent."""
    levels: list[int] = []
    for part in text.replace(" ", "").split(","):
        if not part:
            continue
        levels.append(RunParams().with_values({"op_percent": part}, source="OP levels")
                      .op_percent)
    if not levels:
        raise ParamError("OP levels: expected percentages separated by commas, e.g. 0,25")
    if len(set(levels)) != len(levels):
        raise ParamError(f"OP levels: a level is repeated in {text!r}")
    return tuple(levels)


def build_plan(preset: str, values: dict[str, str], erase_fallback: str,
               drives: list[Drive]) -> Plan:
    """The plan from the form; raises ParamError naming the field and the expected form."""
    ops = parse_op_levels(values.get("op_levels", "0"))
    try:
        plan = plan_with(preset, {k: v for k, v in values.items() if k != "op_levels"},
                         ops, erase_fallback)
    except PlanError as exc:
        raise ParamError(str(exc)) from None
    if plan.destructive and erase_fallback == ERASE_SECURE:
        none = [d.name for d in drives if not d.erase_methods]
        if none:
            raise ParamError("no secure erase on " + ", ".join(none) + " (virtual disk, "
                             "USB bridge or no erase command): choose \"secure erase, else "
                             "discard\" to test it without a secure erase")
    return plan


def form_values(preset: str) -> dict[str, str]:
    p = preset_plan(preset).params
    return {"torture_seconds": str(p.torture_seconds),
            "trim_torture_seconds": str(p.trim_torture_seconds),
            "op_levels": ",".join(str(o) for o in preset_op_levels(preset)),
            "probe_gib": f"{p.probe_gib:g}", "fill_passes": str(p.fill_passes)}


def plan_summary(plan: Plan, drives: list[Drive]) -> Text:
    t = Text()
    t.append("Runs: ", style="bold")
    t.append(", ".join(r.name for r in plan.runs) + "\n")
    if plan.destructive:
        t.append("DESTROYS ALL DATA on the drives below (consent next).\n", style="bold red")
    else:
        t.append("Read-only: nothing is written to the drives.\n", style="green")
    total = 0.0
    for d in drives:
        est = estimate(d, [(r.kind, r.op_percent) for r in plan.runs], plan.params,
                       plan.params.erase_fallback)
        total = max(total, est.seconds)
        t.append(f"  {d.name:<9} {fmt.size(d.size_bytes):>9}  {d.model[:24] or '-':<24} "
                 f"about {fmt.duration(est.seconds)}\n")
    t.append(f"Drives run in parallel: about {fmt.duration(total)} in all (estimate).",
             style="bold")
    for how in dict.fromkeys(basis(d) for d in drives):
        t.append(f"\nEstimate: {how}", style="dim")
    return t


def preset_help(preset: str, values: dict[str, str]) -> str:
    """The preset's description, or, once a field differs from it, what was changed (the
    description would still say "60 s tortures" after Torture was set to 30)."""
    base = form_values(preset)
    changed = [SHORT[key] for key, _label in FIELDS
               if values.get(key, base[key]).replace(" ", "") != base[key]]
    if not changed:
        return preset_plan(preset).description
    return f"{preset} with changed " + ", ".join(changed)  # one line: the values are below


SHORT = {"torture_seconds": "torture", "trim_torture_seconds": "TRIM torture",
         "op_levels": "OP levels", "probe_gib": "probe", "fill_passes": "fill passes"}


@dataclass(frozen=True)
class PlanForm:
    """What the plan screen showed last (the next `p` starts from it, not the preset)."""

    preset: str
    erase: str
    values: dict[str, str]


class PlanScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+s", "start", "Start", key_display="^S"),
        Binding("f5", "start", "Start", show=False),
        Binding("escape", "back", "Back", key_display="Esc"),
    ]

    def __init__(self, drives: list[Drive], form: PlanForm | None = None) -> None:
        super().__init__()
        self.drives = drives
        self.form = form or PlanForm("quick", ERASE_SECURE, form_values("quick"))
        self.preset = self.form.preset
        self.plan: Plan | None = None

    def compose(self) -> ComposeResult:
        yield TopBar()
        with VerticalScroll(id="plan-form"):
            yield Static(Text("Plan for " + ", ".join(d.name for d in self.drives),
                              style="bold"))
            with Horizontal(classes="field"):
                yield Label("Preset", classes="label")
                yield Select([(p, p) for p in PRESETS], value=self.preset,
                             allow_blank=False, compact=True, id="preset")
            values = self.form.values
            yield Static(preset_help(self.preset, values), id="preset-help")
            with Horizontal(classes="field"):
                yield Label("Erase method", classes="label")
                yield Select(list(ERASE_CHOICES), value=self.form.erase, allow_blank=False,
                             compact=True, id="erase")
            for key, label in FIELDS:
                with Horizontal(classes="field"):
                    yield Label(label, classes="label")
                    yield Input(values[key], id=key, compact=True)
            yield Static("", id="plan-error")
            yield Static("", id="plan-summary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#preset", Select).focus()
        self.revalidate()

    def _values(self) -> dict[str, str]:
        return {key: self.query_one(f"#{key}", Input).value for key, _ in FIELDS}

    def revalidate(self) -> None:
        erase = self.query_one("#erase", Select).value
        values = self._values()
        self.form = PlanForm(self.preset, str(erase), values)
        self.app.plan_form = self.form  # type: ignore[attr-defined]
        self.query_one("#preset-help", Static).update(preset_help(self.preset, values))
        error = self.query_one("#plan-error", Static)
        try:
            self.plan = build_plan(self.preset, values, str(erase), self.drives)
        except ParamError as exc:
            self.plan = None
            error.update(Text(str(exc), style="bold red"))
            self.query_one("#plan-summary", Static).update("")
            return
        error.update("")
        self.query_one("#plan-summary", Static).update(plan_summary(self.plan, self.drives))

    def on_select_changed(self, event: Select.Changed) -> None:
        if event.select.id == "preset" and event.value != self.preset:
            self.preset = str(event.value)
            for key, _ in FIELDS:
                self.query_one(f"#{key}", Input).value = form_values(self.preset)[key]
        self.revalidate()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self.revalidate()

    def on_input_submitted(self, _event: Input.Submitted) -> None:
        self.focus_next()

    def action_back(self) -> None:
        self.app.pop_screen()

    def action_start(self) -> None:
        self.revalidate()
        if self.plan is None:
            self.notify("Fix the plan first (the error is shown under the form).",
                        severity="error")
            return
        self.app.confirm_plan(self.drives, self.plan)  # type: ignore[attr-defined]
