"""Station mode's loop (kiosk/station.py) over a scripted world: drives plugged in and
pulled at set moments of a fake clock, discovery and the plan's run replaced by fakes at the
station's own seams (no sleeps: the station's poll interval is 0 and its clock is the
world's)."""

from __future__ import annotations

import io
import json
import threading
from collections.abc import Collection
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from ssdbench.devices import Drive
from ssdbench.devices.bundle import ReplayRunner
from ssdbench.kiosk.config import KioskConfig, StationConfig, parse_config
from ssdbench.kiosk.station import Station, StationBoard, station_lines
from ssdbench.plan.engine import DriveJob, DriveOutcome, RunOutcome
from ssdbench.plan.plans import build_plan
from ssdbench.progress import Progress
from ssdbench.system import Host


def drive(name: str, serial: str, *, protected: bool = False) -> Drive:
    return Drive(path=f"/dev/{name}", name=name, transport="nvme", model="QEMU NVMe Ctrl",
                 serial=serial, firmware="7.2", size_bytes=64 << 20, logical_block_size=512,
                 physical_block_size=512, rotational=False, trim_supported=True,
                 protected=protected, protect_reasons=("boot",) if protected else (),
                 erase_methods=("nvme-format-user-data",), ata_security=None, nvme=None)


@dataclass
class World:
    """/sys/block over time: ``plug[t]`` and ``pull[t]`` apply when the clock reaches t."""

    present: dict[str, Drive] = field(default_factory=dict)
    plug: dict[int, Drive] = field(default_factory=dict)
    pull: dict[int, str] = field(default_factory=dict)
    pulled: dict[str, threading.Event] = field(default_factory=dict)
    t: int = 0
    discovered: list[list[str]] = field(default_factory=list)

    def clock(self) -> float:
        """The station reads it once per poll: a second passes."""
        self.t += 1
        if self.t in self.plug:
            d = self.plug[self.t]
            self.present[d.name] = d
        if self.t in self.pull:
            name = self.pull[self.t]
            self.present.pop(name, None)
            self.pulled.setdefault(name, threading.Event()).set()
        return float(self.t)

    # HostFS
    def listdir(self, path: str) -> list[str]:
        assert path == "/sys/block", path
        return sorted(self.present)


    def read_text(self, path: str) -> str | None:
        return "131072\n"

    def readlink(self, path: str) -> str | None:
        return None

    def exists(self, path: str) -> bool:
        return True

    def discover(self, host: Host, only: Collection[str]) -> list[Drive]:
        names = [n for n in host.fs.listdir("/sys/block") if n in only]
        self.discovered.append(names)
        return [self.present[n] for n in names if n in self.present]


def config(destroy: object, station: dict[str, object] | None = None) -> KioskConfig:
    return parse_config({"plan": "erase", "destroy": destroy,
                         "station": station or {"idle_minutes": 1}})


def finished(tmp: Path, d: Drive, error: str | None) -> DriveOutcome:
    """What the engine returns for a drive: its run.json with the record's summary."""
    run_dir = tmp / f"{d.serial}" / "erase"
    run_dir.mkdir(parents=True)
    run_dir.joinpath("run.json").write_text(json.dumps({
        "erase": {"method": "nvme-format-user-data"},
        "erase_record": {"result": {"status": "FAIL" if error else "PASS"},
                         "category": "Purge", "signed": True}}))
    state = "failed" if error else "done"
    return DriveOutcome(d.name, d.consent_id, run_dir.parent,
                        (RunOutcome("erase", state, error, run_dir),))


def station(world: World, cfg: KioskConfig, tmp: Path, lines: list[str],
            journal_done: set[str] = frozenset()) -> Station:  # type: ignore[assignment]
    plan = build_plan("erase")

    def job_for(d: Drive) -> DriveJob | str:
        if d.consent_id in journal_done:
            return "already erased (PASS)"
        return DriveJob(d, d.consent_id, plan)

    def start(job: DriveJob) -> DriveOutcome:
        d = job.drive
        st.board(Progress(d.name, "erase", "erase", "running", message="started"))
        if d.name in world.pull.values():  # this one is pulled mid-erase: wait until it is gone
            world.pulled.setdefault(d.name, threading.Event()).wait(30)
            return finished(tmp, d, f"stage erase: the drive disappeared ({d.path})")
        st.board(Progress(d.name, "erase", "erase", "running",
                          message="checking the verification markers"))
        return finished(tmp, d, None)

    st = Station(Host(ReplayRunner(), world), cfg, cfg.station or StationConfig(),
                 discover=world.discover, job_for=job_for, start=start, say=lines.append,
                 clock=world.clock, poll_s=0.0)
    return st


def test_plugged_drives_are_erased_a_pulled_one_fails_and_it_ends_when_idle(
        tmp_path: Path) -> None:
    a, b, boot = drive("nvme0n1", "A1"), drive("nvme1n1", "B1"), drive("sda", "BOOT",
                                                                         protected=True)
    world = World(present={"sda": boot}, plug={3: a, 5: b}, pull={9: "nvme1n1"})
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)
    st.seen.add(boot.identity.key)  # found at boot, skipped there
    outcomes = st.run()

    assert {o.consent_id: o.state for o in outcomes} == {"A1": "done", "B1": "failed"}
    rows = {r.consent_id: r for r in st.board.rows()}
    assert rows["A1"].label == "PASS" and "Purge, nvme-format-user-data, signed" in \
        rows["A1"].detail
    assert rows["B1"].label == "FAIL, removed", (lines, world.discovered)
    assert "the drive disappeared (/dev/nvme1n1)" in rows["B1"].detail
    assert "BOOT" not in rows  # protected: never on the board, never erased
    text = "\n".join(lines)
    assert "station: nvme0n1 (QEMU NVMe Ctrl A1) found: erasing" in text
    assert "station: nvme0n1 (A1) PASS: Purge" in text
    assert "station: nvme1n1 (B1) FAIL: stage erase: the drive disappeared" in text
    assert "station: nvme1n1 (B1) removed (FAIL)" in text
    assert lines[-1] == "station: idle for 1 min: the session ends"
    # the ending waited the full idle time after the last change (the pull at t=9)
    assert world.t >= 9 + 60
    # discovery found nvme1n1 once: afterwards it was hidden while it was being erased
    assert sum("nvme1n1" in names for names in world.discovered) == 1, world.discovered


def test_the_selection_and_consent_hold_for_drives_plugged_in_later(tmp_path: Path) -> None:
    a, other, boot = (drive("nvme0n1", "A1"), drive("nvme1n1", "OTHER"),
                      drive("sdb", "STICK", protected=True))
    world = World(plug={2: a, 3: other, 4: boot})
    lines: list[str] = []
    st = station(world, config(["A1"]), tmp_path, lines)
    outcomes = st.run()
    assert [o.consent_id for o in outcomes] == ["A1"]
    text = "\n".join(lines)
    assert ("station: nvme1n1 (QEMU NVMe Ctrl OTHER) plugged in, not erased: not named in "
            "`destroy` (no consent to erase it)") in text
    assert "station: sdb (QEMU NVMe Ctrl STICK) plugged in, not erased: protected" in text


def test_a_drive_the_journal_passed_is_not_erased_again(tmp_path: Path) -> None:
    world = World(plug={2: drive("nvme0n1", "A1")})
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines, journal_done={"A1"})
    assert st.run() == []
    assert "station: nvme0n1 (A1) not erased: already erased (PASS)" in lines


def test_it_ends_after_the_drive_count(tmp_path: Path) -> None:
    world = World(plug={2: drive("nvme0n1", "A1"), 3: drive("nvme1n1", "B1")})
    lines: list[str] = []
    st = station(world, config("all-eligible", {"idle_minutes": 60, "drives": 2}),
                 tmp_path, lines)
    assert len(st.run()) == 2
    assert lines[-1] == "station: 2 drives finished: the session ends"


def test_cancel_ends_it_and_waits_for_the_running_drive(tmp_path: Path) -> None:
    world = World(plug={2: drive("nvme0n1", "A1")})
    lines: list[str] = []
    st = station(world, config("all-eligible", {"idle_minutes": 600}), tmp_path, lines)
    original = st.start

    def start_then_cancel(job: DriveJob) -> DriveOutcome:
        st.cancel.set()
        return original(job)

    st.start = start_then_cancel
    assert [o.state for o in st.run()] == ["done"]


def test_board_states_follow_the_erase_events() -> None:
    board = StationBoard()
    d = drive("nvme0n1", "A1")
    board.found(d)
    assert board.rows()[0].state == "waiting"
    board(Progress("nvme0n1", "erase", "erase", "running", message="erasing with x"))
    assert board.rows()[0].state == "erasing"
    board(Progress("nvme0n1", "erase", "erase", "running",
                   message="checking the verification markers"))
    board(Progress("nvme0n1", "erase", "erase", "running", message="health after"))
    assert board.rows()[0].state == "verifying"
    board.finished(d.identity.key, False, "erase record FAIL: 1 marker survived")
    board(Progress("nvme0n1", "report", "report", "done"))
    assert board.present(set())[0].label == "FAIL, removed"
    assert station_lines(board.rows()) == [
        "station: nvme0n1 (QEMU NVMe Ctrl A1) FAIL, removed: erase record FAIL: 1 marker "
        "survived"]


@pytest.mark.parametrize(("table", "key", "needle"), [
    ({"idle_minutes": 0}, "station.idle_minutes", "above 0"),
    ({"idle_minutes": True}, "station.idle_minutes", "minutes"),
    ({"drives": 0}, "station.drives", "1 or more"),
    ({"drives": 1.5}, "station.drives", "whole number"),
    ({"idle": 5}, "station.idle", "unknown key; the keys are idle_minutes, drives"),
    (5, "station", "a table"),
])
def test_bad_station_settings_are_named(table: object, key: str, needle: str) -> None:
    from ssdbench.kiosk.config import ConfigError

    with pytest.raises(ConfigError) as info:
        parse_config({"plan": "erase", "destroy": "all-eligible", "station": table})
    assert info.value.key == key and needle in info.value.problem


def test_station_needs_the_erase_plan() -> None:
    from ssdbench.kiosk.config import ConfigError

    with pytest.raises(ConfigError, match='needs plan = "erase"'):
        parse_config({"plan": "quick", "destroy": "all-eligible", "station": {}})
    cfg = parse_config({"plan": "erase", "destroy": "all-eligible",
                        "station": {"idle_minutes": 0.5, "drives": 3}})
    assert cfg.station == StationConfig(idle_minutes=0.5, drives=3)
    assert parse_config({"plan": "erase", "destroy": "all-eligible"}).station is None


def test_the_kiosk_screen_shows_each_drive_state() -> None:
    import io

    from rich.console import Console

    from ssdbench.kiosk.run import EventLines, Screen

    board = StationBoard()
    drives = [drive(name, serial) for name, serial in (("nvme0n1", "A1"), ("nvme1n1", "B1"),
                                                       ("sdc", "C1"))]
    for d in drives:
        board.found(d)
    board(Progress("nvme0n1", "erase", "erase", "running",
                   message="checking the verification markers"))
    board(Progress("nvme1n1", "erase", "erase", "running", message="erasing with x"))
    board.finished(drives[2].identity.key, False, "stage erase: the drive disappeared (/dev/sdc)")
    board.present({drives[0].identity.key, drives[1].identity.key})
    out = io.StringIO()
    screen = Screen(out, lines=EventLines(out), board=board)
    Console(file=out, width=160).print(screen._table())
    text = out.getvalue()
    for needle in ("verifying", "erasing", "FAIL, removed", "the drive disappeared", "B1"):
        assert needle in text, text
    assert "waiting" not in text  # every drive had moved on


def test_a_drive_plugged_in_before_the_station_starts_watching_is_not_missed(
        tmp_path: Path) -> None:
    """Plugged in after the kiosk's discovery at boot but before the station's first look at
    /sys/block: no later change shows it, so the station must look once when it starts."""
    world = World(present={"nvme0n1": drive("nvme0n1", "A1")})
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)
    assert [o.consent_id for o in st.run()] == ["A1"]


def test_discovery_while_a_drive_erases_probes_only_the_other_drives(tmp_path: Path) -> None:
    """Discovery's tools (lsblk, blkid, hdparm, smartctl...) must not reach a drive in its
    erase (an ATA security erase would hold them, and the station, for hours): the station
    restricts discovery to the drives not being erased, and with every drive erasing it does
    not run discovery at all (blkid with no device named reads every device)."""
    a, b = drive("sda", "A1"), drive("sdb", "B1")
    world = World(present={"sda": a}, plug={3: b})
    sdb_seen, release = threading.Event(), threading.Event()
    looks: list[list[str]] = []
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)

    def discover(host: Host, only: Collection[str]) -> list[Drive]:
        looks.append(sorted(only))
        if "sdb" in only:
            sdb_seen.set()
        return World.discover(world, host, only)

    def start(job: DriveJob) -> DriveOutcome:
        if job.drive.name == "sda":
            sdb_seen.wait(30)  # erasing until sdb was discovered
            release.wait(30)  # then until sdb's erase ends
        else:
            release.set()
        return finished(tmp_path, job.drive, None)

    st.discover, st.start = discover, start
    st.run()
    assert looks[0] == ["sda"]  # the first look: sda is not busy yet
    assert ["sdb"] in looks  # sda erasing: not read
    assert all(names for names in looks), looks  # never a discovery of nothing (= all)


def test_no_discovery_at_all_while_every_drive_erases(tmp_path: Path) -> None:
    """A look while the only drive erases (/sys/block changed: a partition table reread, a
    drive plugged and pulled between two polls) must not run discovery: there is nothing to
    look at, and discovery's blkid and lsblk, given no devices, read every one."""
    a = drive("sda", "A1")
    world = World(present={"sda": a})
    looks: list[list[str]] = []
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)
    release = threading.Event()

    def discover(host: Host, only: Collection[str]) -> list[Drive]:
        looks.append(sorted(only))
        return World.discover(world, host, only)

    def start(job: DriveJob) -> DriveOutcome:
        release.wait(30)
        return finished(tmp_path, job.drive, None)

    st.discover, st.start = discover, start
    st.add(DriveJob(a, a.consent_id, build_plan("erase")))
    st.scan()
    release.set()
    assert looks == []
    assert st.board.rows()[0].present  # and the erasing drive is not taken for pulled


def test_the_lab_status_names_a_drive_plugged_in_later(tmp_path: Path) -> None:
    """status.json (lab/live.py) knew only the drives found at boot: a station drive
    showed with no serial."""
    from ssdbench.kiosk.run import EventLines, _station_run
    from ssdbench.lab.live import LiveStatus
    from ssdbench.plan.journal import Journal

    world = World(plug={2: drive("nvme0n1", "A1")})
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)
    live = LiveStatus("bench-1", "erase", {})
    out = io.StringIO()
    outcomes = _station_run(st, [], tmp_path / "results", EventLines(out), live,
                            factory=lambda: Host(ReplayRunner(), world), mirror=None,
                            journal=Journal(tmp_path / "results" / "state.json"), svg=False,
                            live=live)
    assert [o.consent_id for o in outcomes] == ["A1"]  # failed: nothing was recorded
    assert live.serials == {"nvme0n1": "A1"}
    assert "ssdbench: station: nvme0n1 (A1) FAIL" in out.getvalue()
    assert "FAIL" in (tmp_path / "results" / "kiosk.txt").read_text()


def test_the_announcement_is_one_line_naming_the_record_in_the_results_folder(
        tmp_path: Path) -> None:
    """The engine's error carries the tool's stderr on further lines, and the run folder is
    in RAM (/run/ssdbench/ram/...): kiosk.txt, read on the stick, gets one line per drive
    and the record's place inside the results folder."""
    world = World(plug={2: drive("nvme0n1", "A1")}, pull={5: "nvme0n1"})
    lines: list[str] = []
    st = station(world, config("all-eligible"), tmp_path, lines)
    st.start = lambda job: finished(tmp_path, job.drive,
                                    "erase record FAIL: dd exit code 1\n  dd: failed to open")
    st.run()
    (row,) = st.board.rows()
    assert row.detail == ("erase record FAIL: dd exit code 1 dd: failed to open; "
                          "record A1/erase/erase-record.json")
    assert all("\n" not in line for line in station_lines(st.board.rows()))
    assert any(line.endswith("record A1/erase/erase-record.json") for line in lines)


JOBS = b'''
[[job]]
id = "J-A"
serial = "A1"
plan = "erase"
params = {erase_fallback = "discard"}
fields = {customer = "ACME"}

[[job]]
id = "J-B"
serial = "B1"
plan = "diagnose"
'''


def intake_station(world: World, tmp: Path, lines: list[str], *, jobs: bytes = JOBS,
                   no_job: str = "default", typed: dict[int, str] | None = None,
                   ) -> tuple[Station, list[DriveJob]]:
    """A station with [jobs] (the file already fetched) and [fields] ask = asset_tag, bay;
    ``typed[t]`` is a line the scanner sends when the clock reaches t."""
    from ssdbench.kiosk.intake import Intake, assign
    from ssdbench.lab.jobs import parse_jobs

    cfg = parse_config({"plan": "erase", "destroy": ["A1", "C1"],
                        "station": {"idle_minutes": 1},
                        "jobs": {"url": "http://127.0.0.1:9/jobs.toml", "no_job": no_job},
                        "fields": {"ask": ["asset_tag", "bay"], "names": ["bay"]}})
    jobfile = parse_jobs(jobs, "jobs.toml", plans=cfg.jobs.plans,  # type: ignore[union-attr]
                         field_names=("asset_tag", "customer", "lot", "bay"))
    default = build_plan("erase")
    st = station(world, cfg, tmp, lines)
    started: list[DriveJob] = []
    original = st.start

    def start(job: DriveJob) -> DriveOutcome:
        started.append(job)
        return original(job)

    st.start = start
    st.resolve = lambda job, values: assign(cfg, default, jobfile, job.drive, values)
    st.intake = Intake(cfg.fields.ask, lines.append, st.board.asking)  # type: ignore[union-attr]
    clock = world.clock

    def tick() -> float:
        now = clock()
        if typed and world.t in typed:
            st.intake.feed(typed[world.t] + "\n")  # type: ignore[union-attr]
        return now

    st.clock = tick
    return st, started


def test_a_scanner_fills_each_drive_in_turn_and_the_jobs_choose_their_plans(
        tmp_path: Path) -> None:
    a, b = drive("nvme0n1", "A1"), drive("nvme1n1", "B1")
    world = World(plug={2: a, 3: b})
    lines: list[str] = []
    # CR LF from the scanner gives empty lines: ignored; "-" leaves a field empty
    st, started = intake_station(world, tmp_path, lines, typed={
        6: "TAG-A\r", 7: "", 8: "BAY-1", 9: "\x1b[A", 10: "TAG-B", 11: "-"})
    rows_before: list[str] = []
    original_scan = st.scan

    def scan() -> None:
        original_scan()
        rows_before.extend(r.detail for r in st.board.rows())

    st.scan = scan  # type: ignore[method-assign]
    outcomes = st.run()
    assert "waiting for its asset_tag (scan or type it)" in rows_before
    by_serial = {j.drive.consent_id: j for j in started}
    ja, jb = by_serial["A1"].plan, by_serial["B1"].plan
    assert (ja.name, ja.params.job, ja.params.asset_tag) == ("erase", "J-A", "TAG-A")
    assert ja.params.customer == "ACME" and ja.params.erase_fallback == "discard"
    assert dict(ja.params.extra_fields) == {"bay": "BAY-1"}
    assert (jb.name, jb.params.job, jb.params.asset_tag) == ("diagnose", "J-B", "TAG-B")
    assert dict(jb.params.extra_fields) == {"bay": ""}
    assert len(outcomes) == 2
    text = "\n".join(lines)
    assert "intake: nvme0n1 (A1): scan or type its asset_tag, then Enter" in text
    assert "intake: nvme1n1 (B1) waits for its asset_tag (after the drive before it)" in text
    assert "intake: nvme1n1 (B1): asset_tag not taken (a control or invisible character" \
        in text
    assert "station: nvme0n1 (QEMU NVMe Ctrl A1) found: running plan erase (job J-A)" in text
    rows = {r.consent_id: r for r in st.board.rows()}
    assert (rows["A1"].plan, rows["A1"].job) == ("erase", "J-A")
    assert "[plan diagnose, job J-B]" in "\n".join(station_lines(st.board.rows()))


def test_a_job_file_never_widens_consent_and_no_job_can_mean_wait(tmp_path: Path) -> None:
    jobs = b'[[job]]\nid = "J-X"\nserial = "X1"\nplan = "erase"\n'
    world = World(plug={2: drive("nvme0n1", "X1"), 3: drive("nvme1n1", "C1")})
    lines: list[str] = []
    st, started = intake_station(world, tmp_path, lines, jobs=jobs, no_job="wait",
                                 typed={5: "T1", 6: "B", 7: "T2", 8: "B"})
    assert st.run() == [] and started == []
    text = "\n".join(lines)
    assert ("station: nvme0n1 (QEMU NVMe Ctrl X1) not run: job J-X (serial X1) plan erase "
            "erases and writes, and `destroy` does not name this drive (a job file never "
            "widens consent)") in text
    assert "station: nvme1n1 (QEMU NVMe Ctrl C1) waiting: no job for it in jobs.toml" in text


def test_two_jobs_of_one_rank_make_the_drive_wait_named_on_its_row(tmp_path: Path) -> None:
    jobs = (b'[[job]]\nid = "M1"\nmodel = "QEMU.*"\nplan = "erase"\n'
            b'[[job]]\nid = "M2"\nmodel = ".*NVMe.*"\nplan = "erase"\n')
    world = World(plug={2: drive("nvme0n1", "A1")})
    lines: list[str] = []
    st, started = intake_station(world, tmp_path, lines, jobs=jobs, typed={4: "T", 5: "B"})
    assert st.run() == [] and started == []
    row = st.board.rows()[0]
    assert "M1, M2 all match this drive by model" in row.detail and row.state == "waiting"


def test_a_drive_pulled_before_its_fields_are_in_is_dropped_and_the_next_is_asked(
        tmp_path: Path) -> None:
    world = World(plug={2: drive("nvme0n1", "A1"), 3: drive("nvme1n1", "C1")},
                  pull={5: "nvme0n1"})
    lines: list[str] = []
    st, started = intake_station(world, tmp_path, lines, typed={8: "TAG-C", 9: "B"})
    st.run()
    assert [j.drive.consent_id for j in started] == ["C1"]
    assert started[0].plan.params.asset_tag == "TAG-C" and started[0].plan.name == "erase"
    assert started[0].plan.params.job == ""  # no job: the bench's default plan
    assert "intake: nvme0n1 (A1) left before its fields were in: not tested" in lines


def test_a_slow_job_server_never_holds_the_station_loop(tmp_path: Path) -> None:
    """The job file is fetched again when a drive arrives, in a thread of its own: the loop
    goes on polling (other drives come and go) while the server has not answered; the drive
    gets its plan once it does."""
    from ssdbench.kiosk.intake import JobSource, assign

    cfg = parse_config({"plan": "erase", "destroy": "all-eligible",
                        "station": {"idle_minutes": 1},
                        "jobs": {"url": "http://127.0.0.1:9/jobs.toml"}})
    answer = threading.Event()
    fetched: list[int] = []

    def fetch(**kw: object) -> tuple[str, bytes]:
        fetched.append(1)
        if len(fetched) > 1:  # the first is the one at boot; then the server is slow
            answer.wait(30)
        return "jobs.toml", JOBS

    source = JobSource(cfg, fetch=fetch)
    source.refresh(lambda line: None)
    world = World(plug={2: drive("nvme0n1", "A1"), 4: drive("nvme1n1", "C1")})
    lines: list[str] = []
    st = station(world, cfg, tmp_path, lines)
    plain = st.job_for
    started: list[DriveJob] = []
    original = st.start

    def job_for(d: Drive) -> DriveJob | str:
        source.refresh_soon(lines.append)
        return plain(d)

    def start(job: DriveJob) -> DriveOutcome:
        started.append(job)
        return original(job)

    st.job_for, st.start = job_for, start
    st.resolve = lambda job, values: assign(cfg, build_plan("erase"), source.get(), job.drive,
                                            values)
    clock = world.clock
    polled_while_waiting: list[int] = []

    def tick() -> float:
        now = clock()
        if world.t == 12:  # ten polls later (C1 found meanwhile), the server answers
            polled_while_waiting.append(len(started))
            answer.set()
        return now

    st.clock = tick
    st.run()
    assert polled_while_waiting == [0]  # the loop went on while nothing could start
    assert "C1" in {r.consent_id for r in st.board.rows()}
    plans = {j.drive.consent_id: (j.plan.name, j.plan.params.job) for j in started}
    assert plans == {"A1": ("erase", "J-A"), "C1": ("erase", "")}
