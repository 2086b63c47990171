"""Drive identity in the kiosk and the station (issue #42 item 1): a drive is known by
everything it reports and the kernel sees together, never by a serial or a kernel name
alone. Two drives that report one serial are both tracked, shown and erased; a drive that
cannot be told apart from one the journal says finished is run again, never skipped."""

from __future__ import annotations

import io
import json
import threading
from dataclasses import replace
from pathlib import Path

from ssdbench.devices import Drive
from ssdbench.devices.bundle import ReplayRunner
from ssdbench.kiosk.config import parse_config
from ssdbench.kiosk.station import Station, station_lines
from ssdbench.plan.engine import DriveJob, DriveOutcome
from ssdbench.plan.journal import Journal
from ssdbench.plan.plans import build_plan
from ssdbench.progress import Progress
from ssdbench.system import Host
from tests.unit.kiosk.test_station import World, config, drive, finished


def sata(name: str, serial: str, *, model: str = "FAKE SSD 120G", size: int = 120 << 30,
         **kw: object) -> Drive:
    return replace(drive(name, serial), transport="sata", model=model, size_bytes=size,
                   erase_methods=("ata-security-erase",), **kw)  # type: ignore[arg-type]


def test_two_drives_sharing_a_serial_plugged_together_are_two_rows_and_two_erases(
        tmp_path: Path) -> None:
    """Plugged together: both erased, both on the board, and the station waits for the
    slower one (it was tracked as one running drive: the first to end ended the session
    while the other still erased, and its outcome was lost)."""
    a, b = drive("sdb", "DUP0001"), drive("sdc", "DUP0001")
    world = World(plug={2: a, 3: b})
    # sdb erases until sdc was found (t=3: the scan of that poll runs before t=10), sdc
    # until the station polled long after sdb ended
    soon, late = threading.Event(), threading.Event()
    clock = world.clock

    def ticking() -> float:
        t = clock()
        if t >= 10:
            soon.set()
        if t >= 200:
            late.set()
        return t

    lines: list[str] = []
    cfg = config("all-eligible")
    assert cfg.station is not None
    st = Station(Host(ReplayRunner(), world), cfg, cfg.station, discover=world.discover,
                 job_for=lambda d: DriveJob(d, d.consent_id, build_plan("erase")),
                 say=lines.append, clock=ticking, poll_s=0.0)

    def start(job: DriveJob) -> DriveOutcome:
        d = job.drive
        st.board(Progress(d.name, "erase", "erase", "running", message="started"))
        (late if d.name == "sdc" else soon).wait(30)
        return finished(tmp_path / d.name, d, None)

    st.start = start
    outcomes = st.run()
    assert sorted(o.drive for o in outcomes) == ["sdb", "sdc"], lines
    assert late.is_set()  # the session went on while sdc erased
    rows = {r.name: r for r in st.board.rows()}
    assert sorted(rows) == ["sdb", "sdc"]
    assert rows["sdb"].label == rows["sdc"].label == "PASS"
    assert rows["sdb"].note == "serial shared with sdc"
    assert rows["sdc"].note == "serial shared with sdb"
    text = "\n".join(lines)
    assert "station: sdb (DUP0001) PASS: Purge" in text
    assert "serial shared with sdc" in text and "serial shared with sdb" in text
    assert any(ln.startswith("station: sdc (QEMU NVMe Ctrl DUP0001) PASS")
               and ln.endswith("(serial shared with sdb)") for ln in station_lines(
                   st.board.rows())), station_lines(st.board.rows())
    for o in outcomes:  # the summary names the other drive too
        other = "sdc" if o.drive == "sdb" else "sdb"
        assert f"serial shared with {other}" in o.notes


def test_a_drive_plugged_in_later_with_the_serial_of_one_present_is_erased(
        tmp_path: Path) -> None:
    """Plugged one after the other: the second was taken for the first (its serial was
    'seen') and never erased nor mentioned."""
    a, b = drive("sdb", "DUP0001"), drive("sdc", "DUP0001")
    world = World(plug={2: a, 6: b})
    lines: list[str] = []
    cfg = config("all-eligible")
    assert cfg.station is not None
    st = Station(Host(ReplayRunner(), world), cfg, cfg.station, discover=world.discover,
                 job_for=lambda d: DriveJob(d, d.consent_id, build_plan("erase")),
                 say=lines.append, clock=world.clock, poll_s=0.0)
    st.start = lambda job: finished(tmp_path / job.drive.name, job.drive, None)
    outcomes = st.run()
    assert sorted(o.drive for o in outcomes) == ["sdb", "sdc"], lines
    assert "station: sdc (QEMU NVMe Ctrl DUP0001) found: erasing (serial shared with sdb)" \
        in lines, lines
    assert len(st.board.rows()) == 2


def _state(root: Path, key: str, entry: dict[str, object]) -> Journal:
    """A journal on disk with one finished entry, as an earlier boot left it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "drive-dir").mkdir(exist_ok=True)
    (root / "drive-dir" / "report.html").write_text("x")
    (root / "state.json").write_text(json.dumps({"schema": 1, "drives": {key: {
        "consent_id": key, "drive": "sdb", "drive_dir": "drive-dir", "state": "done",
        "plan": build_plan("erase").to_json(), "runs": {}, **entry}}}))
    return Journal.open(root)


def ident(serial: str, model: str, size: int, place: str = "kernel name sdb") -> dict[str, object]:
    """An identity as the journal records it (DriveIdentity.to_json)."""
    return {"serial": serial, "model": model, "wwn": "", "size_bytes": size, "place": place,
            "backing": ""}


def _jobs(journal: Journal, d: Drive, *, station: bool = False) -> tuple[list[DriveJob], str]:
    from ssdbench.kiosk.run import _jobs as kiosk_jobs

    cfg = parse_config({"plan": "erase", "destroy": "all-eligible",
                        **({"station": {"idle_minutes": 1}} if station else {})})
    out = io.StringIO()
    jobs = kiosk_jobs(cfg, build_plan("erase"), [d], journal, out, reports=[])
    return jobs, out.getvalue()


def test_a_serial_less_drive_at_the_kernel_name_of_a_finished_one_is_erased(
        tmp_path: Path) -> None:
    """Another drive without a serial at the kernel name an earlier one had: it was
    skipped as erased already (the journal knew drives by serial, else kernel name)."""
    new = sata("sdb", "", model="NEW DISK", size=128 << 30)
    journal = _state(tmp_path, "sdb", {"identity": ident("", "OLD DISK", 64 << 30)})
    for station in (False, True):
        jobs, said = _jobs(journal, new, station=station)
        assert [j.drive.name for j in jobs] == ["sdb"], said
        assert not jobs[0].resume
        assert "already finished" not in said
        assert "is not this drive's: it was another drive: model 'NEW DISK' not " \
               "'OLD DISK'" in said, said
        assert "running the plan on it" in said


def test_a_drive_that_cannot_be_told_apart_from_a_finished_one_runs_again(
        tmp_path: Path) -> None:
    """No serial, no WWN, same model, same capacity, same place: it may be a twin swapped
    in; the kiosk runs it again and says why."""
    d = sata("sdb", "")  # no sysfs link: its kernel name is its place
    journal = _state(tmp_path, "sdb", {"identity": ident("", "FAKE SSD 120G", 120 << 30)})
    jobs, said = _jobs(journal, d)
    assert [j.drive.name for j in jobs] == ["sdb"], said
    assert "already finished" not in said
    assert "it reports no serial and no WWN" in said and "cannot be told apart" in said


def test_a_drive_whose_identity_matches_a_finished_one_is_not_erased_again(
        tmp_path: Path) -> None:
    d = sata("sdb", "S1", place="pci0000:00/0000:00:1f.2/ata2/0:0:0")
    journal = _state(tmp_path, "S1", {"identity": d.identity.to_json()})
    jobs, said = _jobs(journal, d)
    assert jobs == [] and "already finished (done)" in said
    # the same serial in another place is another drive: it is erased
    other = replace(d, name="sdc", path="/dev/sdc", place="pci0000:00/0000:00:1f.2/ata3/0:0:0")
    jobs, said = _jobs(journal, other)
    assert [j.drive.name for j in jobs] == ["sdc"], said
    assert "place 'pci0000:00/0000:00:1f.2/ata3/0:0:0' not " in said


def test_a_finished_drive_whose_serial_was_shared_runs_again(tmp_path: Path) -> None:
    """Its serial named two drives when it ran: a twin in its place looks the same."""
    d = sata("sdb", "DUP0001", place="pci0000:00/0000:00:1f.2/ata2/0:0:0")
    journal = _state(tmp_path, "DUP0001", {"identity": d.identity.to_json(),
                                           "serial_shared_with": ["sdc"]})
    jobs, said = _jobs(journal, d)
    assert len(jobs) == 1 and "its serial was shared with sdc when it ran" in said


def test_an_entry_without_an_identity_is_no_drive_s(tmp_path: Path) -> None:
    d = sata("sdb", "S1")
    journal = _state(tmp_path, "S1", {})
    jobs, said = _jobs(journal, d)
    assert len(jobs) == 1 and "recorded without an identity" in said


def test_the_journal_gives_two_drives_sharing_a_serial_two_entries(tmp_path: Path) -> None:
    journal = Journal(tmp_path / "state.json")
    a = sata("sdb", "DUP0001", place="usb1/1-1/1-1:1.0/0:0:0")
    b = sata("sdc", "DUP0001", place="usb1/1-1/1-1:1.0/0:0:1")  # the other LUN of the bridge
    ka = journal.key_for(a.consent_id, a.identity.to_json())
    kb = journal.key_for(b.consent_id, b.identity.to_json())  # claimed before either starts
    assert (ka, kb) == ("DUP0001", "DUP0001~2")
    for key, d in ((ka, a), (kb, b)):
        journal.start_drive(key, drive=d.name, model=d.model, serial=d.serial, drive_dir=key,
                            plan={}, identity=d.identity.to_json(), consent_id=d.consent_id)
    found = journal.find(b.identity.to_json())
    assert found is not None and found[0] == "DUP0001~2"
    assert found[1]["consent_id"] == "DUP0001" and found[1]["drive"] == "sdc"
    # a new plan on the first drive replaces its own entry, never the other's
    assert journal.key_for(a.consent_id, a.identity.to_json()) == "DUP0001"


def test_identity_place_and_world_wide_name_from_what_the_kernel_reports() -> None:
    from ssdbench.devices.model import transport_place, world_wide_name

    ata = "../devices/pci0000:00/0000:00:1f.2/ata1/host0/target0:0:0/0:0:0:0/block/sda"
    assert transport_place(ata, "sda") == "pci0000:00/0000:00:1f.2/ata1/0:0:0"
    # a re-plug gives a new SCSI host number: the same place
    usb = ("../devices/pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/host{0}/target{0}:0:0/"
           "{0}:0:0:1/block/{1}")
    assert transport_place(usb.format(6, "sdc"), "sdc") == \
        transport_place(usb.format(9, "sdd"), "sdd") == \
        "pci0000:00/0000:00:14.0/usb2/2-1/2-1:1.0/0:0:1"
    nvme = "../devices/pci0000:00/0000:00:04.0/nvme/nvme{}/nvme{}n2"
    assert transport_place(nvme.format(0, 0), "nvme0n2") == \
        transport_place(nvme.format(1, 1), "nvme1n2") == "pci0000:00/0000:00:04.0/n2"
    assert transport_place("../devices/virtual/block/loop7", "loop7") == \
        "virtual/block/loop7"
    assert transport_place("", "sda") == ""
    assert world_wide_name("naa.5002538E40A1B2C3\n") == "naa.5002538e40a1b2c3"
    assert world_wide_name("eui.0000000000000000") == ""
    assert world_wide_name("t10.ATA     FAKE SSD 120G   DUP0001") is None  # spaces
    assert world_wide_name("t10.ATA_FAKE") == ""  # made of model and serial
    assert world_wide_name("naa.5002\x1b[2J") is None
    assert world_wide_name("") == ""


def test_two_drives_present_with_one_serial_have_two_identities() -> None:
    a = sata("sdb", "DUP0001", place="usb1/1-1/1-1:1.0/0:0:0")
    b = sata("sdc", "DUP0001", place="usb1/1-1/1-1:1.0/0:0:1")
    assert a.consent_id == b.consent_id  # consent still names the serial
    assert a.identity != b.identity and a.identity.key != b.identity.key
    assert a.identity.telling and not sata("sdd", "").identity.telling
    assert sata("sdd", "", wwn="naa.5").identity.telling


def test_discovery_fills_the_place_and_wwn(tmp_path: Path) -> None:
    """The recorded QEMU machine: every drive has a place, two drives never share one."""
    from ssdbench.devices import discover
    from ssdbench.devices.bundle import load_bundle

    bundle = load_bundle(Path(__file__).resolve().parents[2] / "data" / "bundles"
                         / "qemu-nvme-ahci-usb")
    drives = discover(Host(bundle.runner, bundle.fs))
    places = [d.place for d in drives]
    assert all(places) and len(set(places)) == len(places), places
    assert all(d.name not in d.place for d in drives if not d.place.startswith("virtual"))


def test_the_screen_names_the_drive_that_shares_the_serial() -> None:
    from rich.console import Console

    from ssdbench.kiosk.run import EventLines, Screen
    from ssdbench.kiosk.station import StationBoard, mark_shared_serials

    board = StationBoard()
    for d in mark_shared_serials([drive("sdb", "DUP0001"), drive("sdc", "DUP0001"),
                                  drive("sdd", "OTHER")]):
        board.found(d)
    out = io.StringIO()
    Console(file=out, width=200).print(Screen(out, lines=EventLines(out), board=board)._table())
    text = out.getvalue()
    assert "DUP0001 (serial shared with sdc)" in text and \
        "DUP0001 (serial shared with sdb)" in text, text
    assert "OTHER (" not in text


def test_run_resume_finds_the_journal_s_drive_by_its_identity() -> None:
    """`ssdbench run --resume` located a journal entry's drive by its key (the serial): with
    two drives of one serial it could pick the other one."""
    import pytest

    from ssdbench.devices import discover
    from ssdbench.devices.bundle import load_bundle
    from ssdbench.plan.engine import Refused, locate_journal_drive

    bundle = load_bundle(Path(__file__).resolve().parents[2] / "data" / "bundles"
                         / "qemu-nvme-ahci-usb")
    host = Host(bundle.runner, bundle.fs)
    drives = discover(host, include_all=True)
    want = drives[0]
    entry = {"consent_id": want.consent_id, "identity": want.identity.to_json()}
    assert locate_journal_drive(host, f"{want.consent_id}~2", entry).name == want.name
    elsewhere = {**entry, "identity": {**want.identity.to_json(), "place": "pci0000:00/x"}}
    with pytest.raises(Refused, match="is not here"):
        locate_journal_drive(host, want.consent_id, elsewhere)


def test_a_drive_that_replaces_an_identical_one_gets_a_row_of_its_own(tmp_path: Path) -> None:
    """No serial, same model, capacity and place: the journal cannot tell it from the one
    that left, so it is erased again (job_for says so); the board keeps both results."""
    first, second = drive("sdb", ""), drive("sdb", "")
    world = World(plug={2: first, 8: second}, pull={5: "sdb"})
    lines: list[str] = []
    cfg = config("all-eligible")
    assert cfg.station is not None

    def clock() -> float:
        if world.t == 4:  # the first drive's erase has ended before it is pulled
            for _name, thread in st._threads():
                thread.join(30)
        return world.clock()

    st = Station(Host(ReplayRunner(), world), cfg, cfg.station, discover=world.discover,
                 job_for=lambda d: DriveJob(d, d.consent_id, build_plan("erase")),
                 say=lines.append, clock=clock, poll_s=0.0)
    st.start = lambda job: finished(tmp_path / str(world.t), job.drive, None)
    assert len(st.run()) == 2, lines
    rows = st.board.rows()
    assert [(r.name, r.label) for r in rows] == [("sdb", "PASS, removed"), ("sdb", "PASS")]
    assert len(station_lines(rows)) == 2


def test_a_twin_plugged_in_while_a_drive_erases_is_named_in_that_drive_s_record(
        tmp_path: Path) -> None:
    """sdb erases; sdc with its serial is plugged in meanwhile: sdb's record is built at its
    erase's end, so it names sdc too (the record read drive.json alone: the twin only on the
    screen). The job carries the board's answer (RunContext.twins, record/stage.py)."""
    from ssdbench.record.stage import with_twins

    a, b = drive("sdb", "DUP0001"), drive("sdc", "DUP0001")
    world = World(plug={2: a, 6: b})
    cfg = config("all-eligible")
    assert cfg.station is not None
    seen: dict[str, tuple[str, ...]] = {}
    sdc_found = threading.Event()
    st = Station(Host(ReplayRunner(), world), cfg, cfg.station, discover=world.discover,
                 job_for=lambda d: DriveJob(d, d.consent_id, build_plan("erase")),
                 clock=world.clock, poll_s=0.0)

    def start(job: DriveJob) -> DriveOutcome:
        if job.drive.name == "sdc":
            sdc_found.set()
        else:
            sdc_found.wait(30)  # sdb's record is built after its twin arrived
        assert job.twins is not None
        seen[job.drive.name] = tuple(job.twins())
        return finished(tmp_path / job.drive.name, job.drive, None)

    st.start = start
    st.run()
    assert seen == {"sdb": ("sdc",), "sdc": ("sdb",)}

    names: tuple[str, ...] = ("sdc",)

    class Ctx:
        twins = staticmethod(lambda: names)

    drive_json = {"name": "sdb", "serial": "DUP0001"}
    assert with_twins(drive_json, Ctx())["serial_shared_with"] == ["sdc"]  # type: ignore[arg-type]
    assert with_twins({**drive_json, "serial_shared_with": ["sdd"]},
                      Ctx())["serial_shared_with"] == ["sdc", "sdd"]  # type: ignore[arg-type]
    names = ()
    assert "serial_shared_with" not in with_twins(drive_json, Ctx())  # type: ignore[arg-type]
