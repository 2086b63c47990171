"""The plan screen: preset, main parameters (validated by RunParams), time per drive."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import Screen
from textual.widgets import Checkbox, Footer, Input, Label, Select, Static

from ssdbench.devices import Drive
from ssdbench.erase.psid import check_typed_twice
from ssdbench.plan.plans import READ_ONLY_KINDS, PlanError
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
from ssdbench.untrusted import shown

# (input id = plan key, label)
FIELDS = (
    ("torture_seconds", "Torture (s)"),
    ("trim_torture_seconds", "TRIM torture (s)"),
    ("op_levels", "OP levels (%)"),
    ("probe_gib", "Probe (GiB)"),
    ("trim_idle_seconds", "TRIM idle (s)"),
    ("fill_passes", "Fill passes"),
)
# the run kinds that use each field: a preset shows only the fields of its runs (#45)
FIELD_KINDS = {
    "torture_seconds": ("consistency",),
    "trim_torture_seconds": ("trim",),
    "op_levels": ("consistency",),
    "probe_gib": ("trim",),
    "trim_idle_seconds": ("trim",),
    "fill_passes": ("consistency", "trim"),
}


def preset_kinds(preset: str) -> set[str]:
    return {r.kind for r in preset_plan(preset).runs}


def shown_fields(preset: str) -> tuple[str, ...]:
    """The form's run fields the preset uses (none for intake, grade, erase, diagnose,
    speed)."""
    kinds = preset_kinds(preset)
    return tuple(key for key, _ in FIELDS if kinds & set(FIELD_KINDS[key]))


SPEED_PRESET = "speed"


def speed_values(preset: str, writes: bool) -> dict[str, str]:
    """The speed plan's write corners (#45): off unless the switch is on; on, the plan is
    destructive and is started only after the same consent as an erase (app.confirm_plan)."""
    return {"speed_writes": "true"} if preset == SPEED_PRESET and writes else {}


def writes_record(preset: str) -> bool:
    """The preset erases and writes the erase record (erase, intake): its people fields."""
    return "erase" in preset_kinds(preset)


# The erase plan's record (docs/erase.md "The erase record"): who erased what for whom, and
# the lot the drive came in. They stay in the form for the next plan of the session; the PSID
# and the restore consent do not. The lab's own fields ([fields]) are the kiosk's and the
# station's, which read the lab's config (docs/tui.md "The erase record's fields").
PEOPLE = (
    ("operator", "Operator"),
    ("organisation", "Organisation"),
    ("customer", "Customer"),
    ("asset_tag", "Asset tag"),
    ("lot", "Lot"),
)
PEOPLE_LINES = (("operator",), ("organisation",), ("customer",), ("asset_tag", "lot"))
ERASE_PRESET = "erase"


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


def erase_values(preset: str, values: dict[str, str], drives: list[Drive], *,
                 restore: bool = False, psid: tuple[str, str] = ("", "")) -> dict[str, str]:
    """The erase plan's own parameters from the form: the people on the record, the native
    max restore (the checkbox is the consent) and a PSID typed twice for the one locked
    drive. Raises ParamError naming what is wrong."""
    if not writes_record(preset):
        return {}
    out = {key: values[key].strip() for key, _ in PEOPLE if values.get(key, "").strip()}
    if restore:
        out["restore_native_max"] = "true"
    locked = [d.name for d in drives if d.sed_locked]
    if any(p.strip() for p in psid):
        if len(locked) != 1:
            raise ParamError("PSID: a PSID revert is for one locked drive at a time; "
                             f"locked drives selected: {', '.join(locked) or 'none'}")
        try:
            out["psid"] = check_typed_twice(*psid)
        except ValueError as exc:
            raise ParamError(f"PSID: {exc}") from None
    return out


def build_plan(preset: str, values: dict[str, str], erase_fallback: str,
               drives: list[Drive], extra: dict[str, str] | None = None) -> Plan:
    """The plan from the form; raises ParamError naming the field and the expected form.
    ``extra``: the erase plan's values (:func:`erase_values`)."""
    ops = parse_op_levels(values.get("op_levels", "0"))
    run_values = {k: v for k, v in values.items()
                  if k != "op_levels" and k not in dict(PEOPLE)}
    try:
        plan = plan_with(preset, {**run_values, **(extra or {})}, ops, erase_fallback)
    except PlanError as exc:
        raise ParamError(str(exc)) from None
    locked = [d for d in drives if d.sed_locked]
    if plan.destructive and locked and not (writes_record(preset) and plan.params.psid):
        d = locked[0]
        how = ("type its PSID twice below for a PSID revert" if writes_record(preset)
               else "erase it with the erase plan and its PSID")
        raise ParamError(f"{d.name} is a locked self-encrypting drive "
                         f"({d.sed.lock_reason if d.sed else 'locked'}): {how}, or unlock "
                         "it with its password (details on the drives screen)")
    # the erase method is for the runs that erase (the speed plan's write corners do not)
    erases = any(r.kind not in READ_ONLY_KINDS for r in plan.runs)
    if erases and erase_fallback == ERASE_SECURE:
        none = [d.name for d in drives if not d.erase_methods and not d.sed_locked]
        if none:
            raise ParamError("no secure erase on " + ", ".join(none) + " (virtual disk, "
                             "USB bridge or no erase command): choose \"secure erase, else "
                             "Clear by overwrite\" to Clear it by one overwrite pass, or "
                             "\"secure erase, else discard\" to test it without a secure "
                             "erase")
    return plan


def form_values(preset: str) -> dict[str, str]:
    p = preset_plan(preset).params
    return {"torture_seconds": str(p.torture_seconds),
            "trim_torture_seconds": str(p.trim_torture_seconds),
            "op_levels": ",".join(str(o) for o in preset_op_levels(preset)),
            "probe_gib": f"{p.probe_gib:g}", "trim_idle_seconds": str(p.trim_idle_seconds),
            "fill_passes": str(p.fill_passes)}


def plan_summary(plan: Plan, drives: list[Drive]) -> Text:
    t = Text()
    t.append("Runs: ", style="bold")
    t.append(", ".join(r.name for r in plan.runs) + "\n")
    if plan.destructive:
        t.append("DESTROYS ALL DATA on the drives below (consent next).\n", style="bold red")
        if all(r.kind == "speed" for r in plan.runs):
            t.append(f"Write corners on: the first {plan.params.speed_gib:g} GiB of each "
                     "drive (all of a smaller one) is overwritten.\n", style="red")
    else:
        t.append("Read-only: nothing is written to the drives.\n", style="green")
    total = 0.0
    for d in drives:
        est = estimate(d, [(r.kind, r.op_percent) for r in plan.runs], plan.params,
                       plan.params.erase_fallback)
        total = max(total, est.seconds)
        t.append(f"  {shown(d.name):<9} {fmt.size(d.size_bytes):>9}  "
                 f"{shown(d.model, limit=24) or '-':<24} "
                 f"about {fmt.duration(est.seconds)}\n")
    t.append(f"Drives run in parallel: about {fmt.duration(total)} in all (estimate).",
             style="bold")
    p = plan.params
    if any(r.kind == "erase" for r in plan.runs):
        named = [(label.lower(), getattr(p, key)) for key, label in PEOPLE]
        named += [("job", p.job), *p.extra_fields]  # a plan file's, or --set's
        people = ", ".join(f"{label} {shown(value, 60)}" for label, value in named
                           if value) or "nobody named (type them above)"
        t.append(f"\nRecord: {people}.")
        if p.restore_native_max:
            t.append("\nNative max restored first (hdparm -N p<native>): the HPA's hidden "
                     "sectors are erased too.", style="yellow")
        if p.psid:
            t.append("\nPSID revert first (sedutil-cli): the locked drive's data key is "
                     "destroyed.", style="yellow")
    kinds = [r.kind for r in plan.runs]
    for how in dict.fromkeys(basis(d, kinds, plan.params) for d in drives):
        t.append(f"\nEstimate: {how}", style="dim")
    return t


def preset_help(preset: str, values: dict[str, str], *, writes: bool = False) -> str:
    """The preset's description, or, once a field differs from it, what was changed (the
    description would still say "60 s tortures" after Torture was set to 30); ``writes``:
    the speed plan's write corners are on (its description says read-only)."""
    base = form_values(preset)
    changed = [SHORT[key] for key in shown_fields(preset)
               if values.get(key, base[key]).replace(" ", "") != base[key]]
    if speed_values(preset, writes):
        text = preset_plan(preset).description.removeprefix("read-only: ")
        return f"reads and writes: {text}"
    if not changed:
        return preset_plan(preset).description
    return f"{preset} with changed " + ", ".join(changed)  # one line: the values are below


SHORT = {"torture_seconds": "torture", "trim_torture_seconds": "TRIM torture",
         "op_levels": "OP levels", "probe_gib": "probe", "trim_idle_seconds": "TRIM idle",
         "fill_passes": "fill passes"}


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
            with Horizontal(classes="field", id="row-erase"):
                yield Label("Erase method", classes="label")
                yield Select(list(ERASE_CHOICES), value=self.form.erase, allow_blank=False,
                             compact=True, id="erase")
            with Horizontal(classes="field tight", id="row-speed-writes"):
                yield Label("Writes", classes="label")  # off each time the form opens
                yield Checkbox("also the write corners (destroys data)", id="speed-writes",
                               compact=True)
            with Vertical(id="run-fields"):
                for key, label in FIELDS:  # one block, a line each (80x25 keeps its summary)
                    with Horizontal(classes="field tight", id=f"row-{key}"):
                        yield Label(label, classes="label")
                        yield Input(values[key], id=key, compact=True)
            with Vertical(id="erase-fields"):
                labels = dict(PEOPLE)
                for line in PEOPLE_LINES:  # the lot beside the asset tag: 80x25 fits
                    with Horizontal(classes="field tight"):
                        for n, key in enumerate(line):
                            yield Label(labels[key], classes="label" if n == 0
                                        else "label inline")
                            yield Input(values.get(key, ""), id=key, compact=True,
                                        placeholder="on the record")
                with Horizontal(classes="field tight"):
                    yield Label("Hidden area", classes="label")
                    yield Checkbox("restore the native max (HPA) first", id="restore",
                                   compact=True)
                if any(d.sed_locked for d in self.drives):
                    for key, label in (("psid", "PSID (label)"), ("psid2", "PSID again")):
                        with Horizontal(classes="field tight"):
                            yield Label(label, classes="label")
                            yield Input("", id=key, compact=True, password=True,
                                        placeholder="32 characters")
            yield Static("", id="plan-error")
            yield Static("", id="plan-summary")
        yield Footer()

    def on_mount(self) -> None:
        self.query_one("#preset", Select).focus()
        self.revalidate()

    def _values(self) -> dict[str, str]:
        return {key: self.query_one(f"#{key}", Input).value for key, _ in (*FIELDS, *PEOPLE)}

    def _psid(self) -> tuple[str, str]:
        """The PSID typed twice (the fields exist only when a selected drive is locked)."""
        got = [w.value for key in ("psid", "psid2") for w in self.query(f"#{key}").results(Input)]
        return (got[0], got[1]) if len(got) == 2 else ("", "")

    def revalidate(self) -> None:
        erase = self.query_one("#erase", Select).value
        values = self._values()
        self.form = PlanForm(self.preset, str(erase), values)
        self.app.plan_form = self.form  # type: ignore[attr-defined]
        writes = self.query_one("#speed-writes", Checkbox).value
        self.query_one("#preset-help", Static).update(
            preset_help(self.preset, values, writes=writes))
        fields = shown_fields(self.preset)
        for key, _ in FIELDS:
            self.query_one(f"#row-{key}").display = key in fields
        self.query_one("#run-fields").display = bool(fields)
        # a read-only plan erases nothing: no erase method to choose (grade, diagnose, speed)
        self.query_one("#row-erase").display = preset_plan(self.preset).destructive
        self.query_one("#erase-fields").display = writes_record(self.preset)
        self.query_one("#row-speed-writes").display = self.preset == SPEED_PRESET
        error = self.query_one("#plan-error", Static)
        try:
            extra = erase_values(self.preset, values, self.drives,
                                 restore=self.query_one("#restore", Checkbox).value,
                                 psid=self._psid())
            extra |= speed_values(self.preset, writes)
            self.plan = build_plan(self.preset, values, str(erase), self.drives, extra)
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
            self.query_one("#speed-writes", Checkbox).value = False  # asked afresh each time
            for key, _ in FIELDS:
                self.query_one(f"#{key}", Input).value = form_values(self.preset)[key]
        self.revalidate()

    def on_input_changed(self, _event: Input.Changed) -> None:
        self.revalidate()

    def on_checkbox_changed(self, _event: Checkbox.Changed) -> None:
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
