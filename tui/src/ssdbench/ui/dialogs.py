"""Modal screens: per-drive consent, yes/no confirmation, help."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Static

from ssdbench.devices import Drive
from ssdbench.ui import fmt
from ssdbench.untrusted import shown

CONSENT_CHARS = 4


def consent_suffix(drive: Drive) -> str:
    """What the operator types: the last 4 characters of the consent id (all if shorter)."""
    return drive.consent_id[-CONSENT_CHARS:]


class ConsentScreen(ModalScreen[bool]):
    """Dismissed with True when the typed text matches the drive's consent id suffix."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "cancel", "Cancel")]

    def __init__(self, drive: Drive, index: int, count: int, *, resuming: str = "") -> None:
        super().__init__()
        self.drive = drive
        self.index = index
        self.count = count
        self.resuming = resuming  # R: which plan and runs are resumed

    def compose(self) -> ComposeResult:
        d = self.drive
        what = "serial" if d.serial else "kernel name (the drive has no serial)"
        t = Text()
        t.append(f"Consent {self.index}/{self.count}: ALL DATA ON THIS DRIVE WILL BE "
                 "DESTROYED\n\n", style="bold red")
        t.append(f"{shown(d.path)}  {shown(d.model or '-')}  {fmt.size(d.size_bytes)}\n")
        t.append(f"{what}: {shown(d.consent_id)}\n\n")
        if self.resuming:
            t.append(f"{self.resuming}\n\n", style="bold")
        noun = "serial" if d.serial else "kernel name"
        t.append(f"Type the last {len(consent_suffix(d))} characters of its {noun}"
                 " and press Enter (Esc cancels the plan).")
        with Vertical(id="dialog"):
            yield Static(t, id="consent-text")
            yield Input(placeholder="last characters", id="consent-input", compact=True,
                        max_length=CONSENT_CHARS)
            yield Static("", id="consent-error")

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    def on_input_submitted(self, event: Input.Submitted) -> None:
        typed = event.value.strip()
        if typed == consent_suffix(self.drive):
            self.dismiss(True)
            return
        message = shown(f"'{typed}' does not match the end of {self.drive.name}'s "
                        f"{'serial' if self.drive.serial else 'name'}; nothing was started")
        self.query_one("#consent-error", Static).update(Text(message, style="bold red"))
        self.notify(message, severity="error", title="Refused", markup=False)
        event.input.value = ""

    def action_cancel(self) -> None:
        self.dismiss(False)


class ConfirmScreen(ModalScreen[bool]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("y", "yes", "Yes"),
                                              Binding("n,escape", "no", "No")]

    def __init__(self, question: str) -> None:
        super().__init__()
        self.question = question

    def compose(self) -> ComposeResult:
        with Vertical(id="dialog"):
            yield Static(Text(self.question, style="bold"))
            yield Static("y: yes    n / Esc: no")

    def action_yes(self) -> None:
        self.dismiss(True)

    def action_no(self) -> None:
        self.dismiss(False)


class TwinQuestion(ModalScreen[bool]):
    """A drive the journal's entry may or may not be (issue #42: it cannot be told apart
    from the drive that ran): dismissed with True to run the plan again from the start,
    False to skip it. Never resumed silently."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("a", "again", "Run again"),
                                              Binding("s,escape", "skip", "Skip")]

    def __init__(self, drive: Drive, what: str, why: str) -> None:
        super().__init__()
        self.drive, self.what, self.why = drive, what, why

    def compose(self) -> ComposeResult:
        d = self.drive
        t = Text()
        t.append(f"{shown(d.path)}  {shown(d.model or '-')}  {fmt.size(d.size_bytes)}\n",
                 style="bold")
        # the journal and the drive are untrusted: their words as text, never markup
        t.append(shown(f"The journal holds {self.what} for a drive like this one, but "
                       f"{self.why}: it cannot be told apart from that drive, so it is "
                       "not resumed as if it were.", limit=1000) + "\n\n")
        t.append("a: run the plan again from the start    s / Esc: skip this drive")
        with Vertical(id="dialog"):
            yield Static(t, id="twin-text")

    def action_again(self) -> None:
        self.dismiss(True)

    def action_skip(self) -> None:
        self.dismiss(False)


HELP = """\
Everywhere  F1 / ?  this help          q / Ctrl+Q  quit (asks in a run)
            Tab / Shift+Tab  next / previous field or table
Drives      Up/Down  highlight (details below)   Left/Right  columns
            Space  select / unselect (protected drives: refused)
            p  plan the selected drives    r  rescan (also automatic
            when a drive is plugged in or removed)
            R  resume plans the journal says did not end (power loss); a
            drive it cannot tell from the one that ran is asked about
Plan        Preset: review (hours), quick (minutes), trim, diagnose
            (read-only). Errors show under the form; estimate per drive.
            Ctrl+S or F5  start (consent next)    Esc  back
Consent     Per drive of a destructive plan: type the last 4 characters
            of its serial (kernel name without one), Enter. Esc cancels.
Run         Up/Down  drive shown below    c  cancel (asks first)
            v / Enter  results, once every drive has finished
Results     Up/Down  run (details, IOPS chart)    Esc  back to drives

The top bar says where results go: the SSDRESULTS stick, or RAM (lost
at power-off unless copied to a stick).
"""


class HelpScreen(ModalScreen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape,f1,question_mark,q", "close", "Close")]

    def compose(self) -> ComposeResult:
        with VerticalScroll(id="help"):
            yield Static(Text("ssdbench - keys", style="bold"))
            yield Static(HELP)
            yield Static(Text("Esc closes", style="dim"))

    def action_close(self) -> None:
        self.dismiss(None)
