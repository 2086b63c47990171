"""The drives screen: every drive in a table, details of the highlighted one; selection."""

from __future__ import annotations

from typing import ClassVar

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import VerticalScroll
from textual.screen import Screen
from textual.widgets import DataTable, Footer, Static

from ssdbench.devices import Drive
from ssdbench.devices.sed import UNLOCK_ADVICE
from ssdbench.kiosk.station import shared_note
from ssdbench.ui import fmt
from ssdbench.ui.widgets import TopBar
from ssdbench.untrusted import shown

# Fixed widths: the table does not shift when a drive appears, and 80 columns show the
# selection, device, model, capacity, transport and serial (Left/Right scroll the rest).
COLUMN_WIDTHS = {"sel": 4, "device": 8, "model": 20, "capacity": 9, "transport": 9,
                 "serial": 16, "firmware": 9, "TRIM": 4, "security": 14, "erase": 16,
                 "health": 6, "temp": 5, "protected": 30}
COLUMNS = tuple(COLUMN_WIDTHS)
FIXED_COLUMNS = 2  # sel/PROT and device stay while Left/Right scroll the others


class ColumnScrollTable(DataTable[Text | str]):
    """Left/Right scroll one whole column (not one character: the protected column was
    ~100 presses away)."""

    def _scroll_columns(self, step: int) -> None:
        edges: list[int] = []
        x = 0
        for i, column in enumerate(self.ordered_columns):
            if i >= self.fixed_columns:
                edges.append(x)
                x += column.get_render_width(self)
        here = round(self.scroll_x)
        if step > 0:
            target = next((e for e in edges if e > here), self.max_scroll_x)
        else:
            target = max((e for e in edges if e < here), default=0)
        self.scroll_to(x=min(target, self.max_scroll_x), animate=False, immediate=True)

    def action_cursor_right(self) -> None:
        self._scroll_columns(1)

    def action_cursor_left(self) -> None:
        self._scroll_columns(-1)


def drive_row(drive: Drive, selected: bool) -> tuple[Text | str, ...]:
    if drive.protected:
        mark = Text("PROT", style="bold red")
    elif selected:
        mark = Text("[x]", style="bold green")
    else:
        mark = Text("LOCK", style="bold yellow") if drive.sed_locked else Text("[ ]")
    reasons = ", ".join(drive.protect_reasons)
    if drive.sed_locked and not reasons:
        reasons = "SED locked: unlock or PSID revert (details below)"
    # another present drive reports the same serial: both are shown, both named (#42)
    shared = shared_note(drive.serial_shared_with)
    # drive-reported strings as Text, never as markup: a model "[/]" or a serial "[i]...[/i]"
    # shows as typed (docs/security.md "Untrusted strings")
    return (
        mark, Text(shown(drive.name)), Text(shown(drive.model or "-")),
        fmt.size(drive.size_bytes), Text(shown(drive.transport)),
        Text(shown(drive.serial or "-")), Text(shown(drive.firmware or "-")),
        "yes" if drive.trim_supported else "no",
        fmt.security(drive), fmt.erase_short(drive), fmt.health(drive), fmt.temperature(drive),
        Text(shown(f"{reasons}; {shared}" if reasons and shared else reasons or shared),
             style="red" if reasons else "yellow") if reasons or shared else "",
    )


def details(drive: Drive | None) -> Text:
    t = Text()
    if drive is None:
        t.append("No drive. Plug one in: the list refreshes by itself (r: rescan).")
        return t

    def line(label: str, value: str, style: str = "") -> None:
        t.append(f"{label:<13}", style="bold")
        t.append(shown(value, limit=400) + "\n", style=style)

    if drive.protected:
        line("PROTECTED", "cannot be selected, never written: "
             + (", ".join(drive.protect_reasons) or "protected"), "bold red")
    line("Device", f"{drive.path}  ({drive.transport}"
         + (", rotational" if drive.rotational else "") + ")")
    line("Model", f"{drive.vendor + ' ' if drive.vendor else ''}{drive.model or '-'}")
    line("Serial", f"{drive.serial or '-'}   firmware {drive.firmware or '-'}")
    if drive.serial_shared_with:
        line("", shared_note(drive.serial_shared_with) + ": a serial that names no drive; "
             "it is known by its identity (model, WWN, capacity, place "
             f"{drive.identity.place})", "yellow")
    line("Capacity", f"{fmt.size(drive.size_bytes)} = {drive.size_bytes / 2**20:,.1f} MiB "
         f"({drive.size_bytes:,} bytes), sectors "
         f"{drive.logical_block_size}/{drive.physical_block_size}")
    trim = "yes" if drive.trim_supported else "no"
    if drive.trim_supported:
        flags = [f for f, on in (("DRAT", drive.drat), ("RZAT", drive.rzat)) if on]
        if drive.nvme is not None and drive.nvme.current_dlfeat is not None:
            flags.append(f"DLFEAT={drive.nvme.current_dlfeat}")
        trim += (" (" + ", ".join(flags) + ")") if flags else ""
    line("TRIM", trim)
    sec = drive.ata_security
    if sec is not None:
        state = ", ".join(w for w, on in (
            ("supported", sec.supported), ("enabled", sec.enabled), ("LOCKED", sec.locked),
            ("FROZEN", sec.frozen), ("expired", sec.expired),
            ("enhanced erase", sec.enhanced_supported)) if on) or "not supported"
        times = ""
        if sec.erase_minutes is not None:
            times = f"; erase {sec.erase_minutes} min"
            if sec.enhanced_erase_minutes is not None:
                times += f", enhanced {sec.enhanced_erase_minutes} min"
        line("ATA security", state + times, "yellow" if sec.frozen or sec.locked else "")
    if drive.nvme is not None:
        c = drive.nvme.controller
        caps = [n for n, on in (("format", c.format_supported),
                                ("crypto-erase", c.crypto_erase_supported),
                                ("sanitize-block", c.sanitize_block),
                                ("sanitize-crypto", c.sanitize_crypto),
                                ("sanitize-overwrite", c.sanitize_overwrite),
                                ("DSM", c.dsm_supported)) if on]
        line("NVMe", f"{drive.nvme.controller_name} nsid {drive.nvme.nsid}: "
             + (", ".join(caps) or "no admin erase commands"))
    if drive.sed is not None:
        sed = drive.sed
        state = ", ".join(w for w, on in (
            ("locking enabled", sed.locking_enabled), ("LOCKED", sed.locked),
            ("SHADOW MBR", sed.shadow_mbr), ("media encryption", sed.media_encryption)) if on)
        line("TCG", f"{'/'.join(sed.ssc) or 'no SSC'}: {state or 'not locked'}",
             "bold yellow" if sed.blocks_erase else "")
        if sed.blocks_erase:
            line("", f"{sed.lock_reason}: no erase until it is unlocked. {UNLOCK_ADVICE}",
                 "yellow")
    line("Erase", ", ".join(drive.erase_methods) or "no secure erase ("
         + (", ".join(drive.erase_refusal) or "none") + ")")
    smart = drive.smart
    if smart is None:
        line("SMART", "not available")
    else:
        parts = [("PASSED" if smart.passed else "FAILED") if smart.passed is not None
                 else "no verdict"]
        for label, value, unit in (("temp", smart.temperature_c, "C"),
                                   ("power-on", smart.power_on_hours, "h"),
                                   ("used", smart.percentage_used, "%"),
                                   ("spare", smart.available_spare, "%"),
                                   ("media errors", smart.media_errors, ""),
                                   ("reallocated", smart.reallocated_sectors, "")):
            if value is not None:
                parts.append(f"{label} {value}{unit}")
        line("SMART", ", ".join(parts), "" if smart.passed is not False else "bold red")
    if drive.partitions:
        line("Partitions", ", ".join(drive.partitions))
    if drive.loop_backing_file:
        line("Backing file", drive.loop_backing_file)
    for p in drive.problems:
        line("Problem", f"{p.tool}: {p.kind}: {p.message}", "yellow")
    return t


class DrivesScreen(Screen[None]):
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("space", "toggle_drive", "Select", key_display="Space"),
        Binding("p", "plan", "Plan"),
        Binding("r", "rescan", "Rescan"),
        Binding("R", "resume", "Resume"),
        Binding("q", "app.quit", "Quit"),
    ]

    def __init__(self) -> None:
        super().__init__()
        self.drives: list[Drive] = []
        self.selected: set[str] = set()
        self.status = "Looking for drives..."

    def compose(self) -> ComposeResult:
        yield TopBar(id="topbar")
        yield Static(self.status, id="drives-status")
        yield ColumnScrollTable(id="drives", cursor_type="row", zebra_stripes=False)
        with VerticalScroll(id="details-pane"):
            yield Static(details(None), id="details")
        yield Footer()

    def on_mount(self) -> None:
        table = self.query_one("#drives", DataTable)
        for c, width in COLUMN_WIDTHS.items():
            table.add_column(c, key=c, width=width)
        table.fixed_columns = FIXED_COLUMNS
        table.focus()

    # ---- driven by the app's message handlers ----

    def show_drives(self, drives: list[Drive]) -> None:
        table = self.query_one("#drives", DataTable)
        current = self.highlighted
        self.drives = list(drives)
        names = {d.name for d in drives}
        self.selected &= names
        table.clear()
        for d in drives:
            table.add_row(*drive_row(d, d.name in self.selected), key=d.name)
        n_prot = sum(1 for d in drives if d.protected)
        shared = sorted(d.name for d in drives if d.serial_shared_with)
        self.set_status(f"{len(drives)} drive(s), {n_prot} protected. Space selects, "
                        "p plans a run."
                        + (f" Serial shared by {', '.join(shared)}: each is known by its "
                           "identity, both are shown and run." if shared else ""))
        if current is not None and current.name in names:
            table.move_cursor(row=[d.name for d in drives].index(current.name))
        self._show_details()

    def set_status(self, text: str) -> None:
        self.status = text
        self.query_one("#drives-status", Static).update(text)

    @property
    def highlighted(self) -> Drive | None:
        table = self.query_one("#drives", DataTable)
        if not self.drives or table.row_count == 0:
            return None
        row = table.cursor_row
        return self.drives[row] if 0 <= row < len(self.drives) else None

    def selected_drives(self) -> list[Drive]:
        return [d for d in self.drives if d.name in self.selected]

    def _show_details(self) -> None:
        self.query_one("#details", Static).update(details(self.highlighted))

    def on_data_table_row_highlighted(self, _event: DataTable.RowHighlighted) -> None:
        self._show_details()

    def action_toggle_drive(self) -> None:
        drive = self.highlighted
        if drive is None:
            return
        if drive.protected:
            reason = ", ".join(drive.protect_reasons) or "protected"
            self.notify(shown(f"{drive.name} is protected and cannot be selected: {reason}"),
                        markup=False,
                        severity="error", title="Refused")
            return
        if drive.name in self.selected:
            self.selected.discard(drive.name)
        else:
            self.selected.add(drive.name)
        table = self.query_one("#drives", DataTable)
        table.update_cell(drive.name, "sel", drive_row(drive, drive.name in self.selected)[0])

    def action_rescan(self) -> None:
        self.set_status("Looking for drives...")
        self.app.discover()  # type: ignore[attr-defined]

    def action_resume(self) -> None:
        self.app.resume_unfinished()  # type: ignore[attr-defined]

    def action_plan(self) -> None:
        drives = self.selected_drives()
        if not drives:
            self.notify("Select at least one drive first (Space).", severity="warning")
            return
        self.app.open_plan(drives)  # type: ignore[attr-defined]
