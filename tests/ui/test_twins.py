"""Issue #42 in the TUI: two drives that report one serial are both shown and named, R
resumes the drive of the journal entry's identity (not of its serial), and a drive that
cannot be told apart from the one that ran is asked about (run again / skip)."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from textual.widgets import DataTable

from ssdbench.devices import Drive
from ssdbench.plan.engine import DriveOutcome
from ssdbench.plan.journal import Journal
from ssdbench.plan.plans import preset
from ssdbench.ui.dialogs import ConsentScreen, TwinQuestion
from ssdbench.ui.engine import ScriptedEngine
from ssdbench.ui.messages import DrivesDiscovered
from ssdbench.ui.run import RunScreen
from tests.ui.conftest import make_app, wait_for

SERIAL = "TWIN0001"


def twins(app: object, *, wwns: tuple[str, str] = ("", "")) -> list[Drive]:
    """Two SATA drives built from the replayed loop1: one serial, two ports."""
    loop1 = next(d for d in app.drives if d.name == "loop1")  # type: ignore[attr-defined]
    return [replace(loop1, name=name, path=f"/dev/{name}", transport="sata", serial=SERIAL,
                    model="Twin SSD 120GB", wwn=wwn, loop_backing_file=None,
                    place=f"pci0000:00/0000:00:1f.2/ata{i}/0:0:0")
            for i, (name, wwn) in enumerate(zip(("sdb", "sdc"), wwns, strict=True), 1)]


def engine() -> ScriptedEngine:
    return ScriptedEngine({}, {n: DriveOutcome(n, SERIAL, None, ()) for n in ("sdb", "sdc")})


def journal_running(root: Path, drive: Drive, **kw: object) -> None:
    Journal.open(root).start_drive(
        SERIAL, drive=drive.name, model=drive.model, serial=SERIAL,
        drive_dir=f"20261121T145300Z_Twin_{SERIAL}", plan=preset("quick").to_json(),
        identity=drive.identity.to_json(), **kw)  # type: ignore[arg-type]


async def show(pilot: object, app: object, drives: list[Drive]) -> None:
    await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")  # type: ignore[attr-defined]
    app.post_message(DrivesDiscovered(drives))  # type: ignore[attr-defined]
    await wait_for(pilot, lambda: app.discoveries >= 2, what="twins")  # type: ignore[attr-defined]
    await pilot.pause()  # type: ignore[attr-defined]


async def test_a_serial_two_drives_report_is_named_on_the_drives_screen() -> None:
    app = make_app()
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        await show(pilot, app, twins(app))
        table = app.drives_screen.query_one("#drives", DataTable)
        rows = {str(table.get_row(k)[1]): [str(c) for c in table.get_row(k)]
                for k in table.rows}
        assert set(rows) == {"sdb", "sdc"}  # both shown
        assert rows["sdb"][-1] == "serial shared with sdc"
        assert rows["sdc"][-1] == "serial shared with sdb"
        assert "Serial shared by sdb, sdc" in app.drives_screen.status
        assert [d.serial_shared_with for d in app.drives] == [("sdc",), ("sdb",)]


async def test_resume_goes_to_the_drive_of_the_entrys_identity(tmp_path: Path) -> None:
    eng = engine()
    app = make_app(eng, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        sdb, sdc = twins(app, wwns=("naa.5000000000000001", "naa.5000000000000002"))
        journal_running(tmp_path, sdc)  # the second twin ran, under the shared serial
        await show(pilot, app, [sdb, sdc])
        await wait_for(pilot, lambda: "Unfinished plan on sdc" in app.drives_screen.status,
                       what="journal checked")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        assert app.screen.drive.name == "sdc"  # type: ignore[attr-defined]
        await pilot.press(*SERIAL[-4:], "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run")
        await wait_for(pilot, lambda: app.running == 0, what="finished")
        assert eng.resumed == ["sdc"] and eng.started == ["sdc"]


async def test_a_twin_that_cannot_be_told_apart_is_asked_about_then_run_again(
        tmp_path: Path) -> None:
    eng = engine()
    app = make_app(eng, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        sdb, sdc = twins(app)  # no WWN: only the place tells them apart
        journal_running(tmp_path, sdb, serial_shared_with=["sdc"])
        await show(pilot, app, [sdb, sdc])
        await wait_for(pilot, lambda: "Unfinished plan on sdb" in app.drives_screen.status,
                       what="journal checked")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, TwinQuestion), what="question")
        assert "shared with sdc" in app.screen.why  # type: ignore[attr-defined]
        await pilot.press("a")
        await wait_for(pilot, lambda: isinstance(app.screen, ConsentScreen), what="consent")
        await pilot.press(*SERIAL[-4:], "enter")
        await wait_for(pilot, lambda: isinstance(app.screen, RunScreen), what="run")
        await wait_for(pilot, lambda: app.running == 0, what="finished")
        assert eng.started == ["sdb"] and eng.resumed == []  # afresh, not resumed


async def test_a_twin_that_cannot_be_told_apart_can_be_skipped(tmp_path: Path) -> None:
    eng = engine()
    app = make_app(eng, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        sdb, sdc = twins(app)
        journal_running(tmp_path, sdb, serial_shared_with=["sdc"])
        await show(pilot, app, [sdb, sdc])
        await wait_for(pilot, lambda: "Unfinished plan on sdb" in app.drives_screen.status,
                       what="journal checked")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, TwinQuestion), what="question")
        await pilot.press("s")
        await pilot.pause()
        assert not isinstance(app.screen, (ConsentScreen, RunScreen, TwinQuestion))
        assert eng.started == []


async def test_an_entry_an_older_ssdbench_wrote_without_identity_is_asked_about(
        tmp_path: Path) -> None:
    eng = engine()
    app = make_app(eng, results_root=tmp_path)
    async with app.run_test(size=(80, 25)) as pilot:
        await wait_for(pilot, lambda: app.discoveries >= 1, what="discovery")
        sdb, _ = twins(app, wwns=("naa.5000000000000001", ""))
        Journal.open(tmp_path).start_drive(  # keyed by the serial alone
            SERIAL, drive="sdb", model=sdb.model, serial=SERIAL, drive_dir="old",
            plan=preset("quick").to_json())
        await show(pilot, app, [sdb])
        await wait_for(pilot, lambda: "Unfinished plan on sdb" in app.drives_screen.status,
                       what="journal checked")
        await pilot.press("R")
        await wait_for(pilot, lambda: isinstance(app.screen, TwinQuestion), what="question")
        assert "without an identity" in app.screen.why  # type: ignore[attr-defined]
