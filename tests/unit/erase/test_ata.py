"""ATA security erase and sanitize at the process boundary, replaying hdparm output.

The hdparm -I states are the real fixtures; the transitions (after set-pass, after
resume, locked after a power cycle) are derived from them (files named DERIVED_*).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.erase import (
    EraseError,
    EraseOptions,
    EraseTarget,
    MemoryPasswordJournal,
    NoEraseMethod,
    choose_method,
    erase_drive,
    recover_leftover_password,
)
from ssdbench.erase.hdparm import parse_identify
from ssdbench.progress import Progress
from ssdbench.system import Host

from .replay import EventJournal, FakeClock, FakeFS, ScriptedRunner, fixture

APACER = "hdparm/hdparm-I_apacer-AS340-120g_ssd_not-frozen.txt"
APACER_ENABLED = "hdparm/DERIVED_hdparm-I_apacer-AS340_after-set-pass_enabled.txt"
APACER_LOCKED = "hdparm/DERIVED_hdparm-I_apacer-AS340_locked-after-power-cycle.txt"
CRUCIAL_FROZEN = "hdparm/hdparm-I_crucial-mx100-512g_ssd_frozen_sanitize.txt"
CRUCIAL_RESUMED = "hdparm/DERIVED_hdparm-I_crucial-mx100_after-resume_not-frozen.txt"
CRUCIAL_ENABLED = "hdparm/DERIVED_hdparm-I_crucial-mx100_after-resume_after-set-pass_enabled.txt"
WD_RED_FROZEN = "hdparm/hdparm-I_wd-red-WD40EFRX_hdd_frozen_hdparm9.65.txt"
WD_BLUE = "hdparm/hdparm-I_wd-blue-3d-WDS400T2B0A-4T_ssd_not-frozen_WHITESPACE-MANGLED.txt"
USB = "hdparm/hdparm-I_usb-bridge-rejects-ATA-passthrough_rpi4.txt"
PW = "ssdbtestpassword"


def target_from(rel: str, *, transport: str = "sata") -> EraseTarget:
    info = parse_identify(fixture(rel))
    assert info.sectors and info.logical_block_size
    return EraseTarget(
        path="/dev/sda", name="sda", transport=transport, serial=info.serial,
        model=info.model, size_bytes=info.sectors * info.logical_block_size,
        logical_block_size=info.logical_block_size, ata=info.security,
    )


def options(**kw: object) -> EraseOptions:
    base: dict[str, object] = {"verify": False, "password": PW, "clock": FakeClock()}
    base.update(kw)
    return EraseOptions(**base)  # type: ignore[arg-type]


def hd(op: str, password: str = PW) -> list[str]:
    return ["hdparm", "--user-master", "u", op, password, "/dev/sda"]


IDENT = ["hdparm", "-I", "/dev/sda"]


def identify_sequence(runner: ScriptedRunner, *files: str) -> None:
    for f in files:
        runner.add(IDENT, fixture(f))


def test_not_frozen_enhanced_erase_records_password_before_setting_it() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER, APACER_ENABLED, APACER)
    runner.add(hd("--security-set-pass"), ' Issuing SECURITY_SET_PASS command, password="x"\n')
    runner.add(hd("--security-erase-enhanced"), " Issuing SECURITY_ERASE command\n")
    journal = EventJournal(runner)
    target = target_from(APACER)
    events: list[Progress] = []
    record = erase_drive(
        Host(runner, FakeFS()), target, journal=journal, progress=events.append,
        options=options(),
    )
    assert record.method == "ata-security-erase-enhanced"
    assert record.secure and record.verified is None
    serial = target.serial
    assert runner.events == [
        "run hdparm -I /dev/sda",
        f"journal record {serial}",
        "run " + " ".join(hd("--security-set-pass")),
        "run hdparm -I /dev/sda",
        "run " + " ".join(hd("--security-erase-enhanced")),
        "run hdparm -I /dev/sda",
        f"journal clear {serial}",
    ]
    assert journal.passwords == {}
    # hdparm's rule for the 60 min enhanced estimate: 2 x 60 + 60 min, plus our margin
    assert runner.timeouts["hdparm --user-master u --security-erase-enhanced"] == 180 * 60 + 600
    assert events[-1].state == "done" and events[-1].stage == "erase"
    assert any(e.message.startswith("ATA enhanced security erase") for e in events)
    assert not runner.unused()


def test_normal_erase_when_enhanced_is_not_chosen() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER, APACER_ENABLED, APACER)
    runner.add(hd("--security-set-pass"))
    runner.add(hd("--security-erase"))
    record = erase_drive(
        Host(runner, FakeFS()), target_from(APACER), journal=MemoryPasswordJournal(),
        options=options(enhanced=False),
    )
    assert record.method == "ata-security-erase"
    assert runner.timeouts["hdparm --user-master u --security-erase"] == (20 * 2 + 60) * 60 + 600


def test_frozen_drive_unfrozen_by_suspend() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, CRUCIAL_FROZEN, CRUCIAL_RESUMED, CRUCIAL_ENABLED, CRUCIAL_RESUMED)
    runner.add(["rtcwake", "-m", "mem", "-s", "5"], "rtcwake: wakeup from \"mem\" using /dev/rtc0\n")
    runner.add(hd("--security-set-pass"))
    runner.add(hd("--security-erase-enhanced"))
    target = target_from(CRUCIAL_FROZEN)
    assert choose_method(target, None, options(allow_suspend=True)) == "ata-security-erase-enhanced"
    record = erase_drive(
        Host(runner, FakeFS()), target, journal=MemoryPasswordJournal(),
        options=options(allow_suspend=True),
    )
    assert record.method == "ata-security-erase-enhanced"
    assert runner.calls[:3] == [tuple(IDENT), ("rtcwake", "-m", "mem", "-s", "5"), tuple(IDENT)]
    assert any("suspend-to-RAM" in s for s in record.steps)


def test_still_frozen_after_suspend_fails_with_hotplug_advice() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, CRUCIAL_FROZEN, CRUCIAL_FROZEN)
    runner.add(["rtcwake", "-m", "mem", "-s", "5"])
    journal = MemoryPasswordJournal()
    with pytest.raises(EraseError, match="still frozen after suspend") as err:
        erase_drive(
            Host(runner, FakeFS()), target_from(CRUCIAL_FROZEN), method="ata-security-erase",
            journal=journal, options=options(allow_suspend=True),
        )
    assert "hot-plug" in str(err.value)
    assert err.value.method == "ata-security-erase"
    assert journal.events == []  # no password was ever recorded or set
    assert not any("--security-set-pass" in c for c in runner.calls)


def test_frozen_without_suspend_and_without_sanitize_has_no_method() -> None:
    target = target_from(WD_RED_FROZEN)
    with pytest.raises(NoEraseMethod, match="frozen and the plan does not allow suspend"):
        choose_method(target, None, options())
    # a frozen drive with ATA SANITIZE falls back to it (sanitize has its own freeze lock)
    assert choose_method(target_from(CRUCIAL_FROZEN), None, options()) == "ata-sanitize-block"


def test_usb_bridge_is_refused_before_any_command() -> None:
    runner = ScriptedRunner()
    target = target_from(APACER, transport="usb")
    with pytest.raises(NoEraseMethod, match="USB bridge"):
        erase_drive(Host(runner, FakeFS()), target, journal=MemoryPasswordJournal(),
                    options=options())
    with pytest.raises(NoEraseMethod, match="USB bridge"):
        erase_drive(Host(runner, FakeFS()), target, method="ata-security-erase",
                    journal=MemoryPasswordJournal(), options=options())
    assert runner.calls == []


def test_empty_identify_through_a_bridge_is_an_error() -> None:
    runner = ScriptedRunner()
    runner.add(IDENT, fixture(USB))
    journal = MemoryPasswordJournal()
    with pytest.raises(EraseError, match="empty IDENTIFY"):
        erase_drive(Host(runner, FakeFS()), target_from(APACER), journal=journal,
                    options=options())
    assert journal.events == []


def test_erase_io_error_removes_the_password() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER, APACER_ENABLED, APACER_ENABLED, APACER)
    runner.add(hd("--security-set-pass"))
    runner.add(
        hd("--security-erase-enhanced"), " Issuing SECURITY_ERASE command\n",
        stderr="SECURITY_ERASE: Input/output error\n", returncode=5,
    )
    runner.add(hd("--security-disable"), " Issuing SECURITY_DISABLE command\n")
    journal = EventJournal(runner)
    target = target_from(APACER)
    with pytest.raises(EraseError, match="Input/output error") as err:
        erase_drive(Host(runner, FakeFS()), target, journal=journal, options=options())
    assert "temporary password was removed" in str(err.value)
    assert journal.passwords == {}
    assert runner.events[-3:] == [
        "run " + " ".join(hd("--security-disable")),
        "run hdparm -I /dev/sda",
        f"journal clear {target.serial}",
    ]


def test_failed_cleanup_keeps_the_password_in_the_journal() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER, APACER_ENABLED, APACER_ENABLED, APACER_ENABLED)
    runner.add(hd("--security-set-pass"))
    runner.add(hd("--security-erase-enhanced"), stderr="SECURITY_ERASE: Input/output error\n",
               returncode=5)
    runner.add(hd("--security-disable"), stderr=fixture(
        "hdparm/hdparm-error_security-unlock_frozen_fixed-format-sense.txt"), returncode=5)
    journal = MemoryPasswordJournal()
    target = target_from(APACER)
    with pytest.raises(EraseError, match="removing the password failed too"):
        erase_drive(Host(runner, FakeFS()), target, journal=journal, options=options())
    assert journal.passwords == {target.serial: PW}


def test_locked_drive_left_by_an_earlier_run_is_unlocked_and_disabled() -> None:
    runner = ScriptedRunner()
    target = target_from(APACER)
    old = "ssdbleftover0001"
    identify_sequence(runner, APACER_LOCKED, APACER)
    runner.add(hd("--security-unlock", old))
    runner.add(hd("--security-disable", old))
    journal = EventJournal(runner, {target.serial: old})
    steps = recover_leftover_password(Host(runner, FakeFS()), target, journal)
    assert journal.passwords == {}
    assert runner.calls == [
        tuple(IDENT), tuple(hd("--security-unlock", old)),
        tuple(hd("--security-disable", old)), tuple(IDENT),
    ]
    assert "unlocked with the recorded password" in steps


def test_erase_starts_by_recovering_a_leftover_password() -> None:
    runner = ScriptedRunner()
    target = target_from(APACER)
    old = "ssdbleftover0001"
    identify_sequence(runner, APACER_LOCKED, APACER, APACER, APACER_ENABLED, APACER)
    runner.add(hd("--security-unlock", old))
    runner.add(hd("--security-disable", old))
    runner.add(hd("--security-set-pass"))
    runner.add(hd("--security-erase-enhanced"))
    journal = MemoryPasswordJournal({target.serial: old})
    record = erase_drive(Host(runner, FakeFS()), target, journal=journal, options=options())
    assert record.steps[1].startswith("journal holds a password from an earlier run")
    assert journal.passwords == {}


def test_locked_drive_with_unknown_password_is_refused() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER_LOCKED)
    journal = MemoryPasswordJournal()
    with pytest.raises(EraseError, match="password ssdbench does not know"):
        erase_drive(Host(runner, FakeFS()), target_from(APACER), journal=journal,
                    options=options())
    assert journal.events == []


def test_set_pass_that_does_not_enable_security_is_cleaned_up() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, APACER, APACER, APACER)
    runner.add(hd("--security-set-pass"))
    journal = MemoryPasswordJournal()
    with pytest.raises(EraseError, match="did not enable security"):
        erase_drive(Host(runner, FakeFS()), target_from(APACER), journal=journal,
                    options=options())
    assert journal.passwords == {}
    assert not any("--security-erase-enhanced" in c for c in runner.calls)


SAN_STATUS = ["hdparm", "--sanitize-status", "/dev/sda"]


def test_ata_sanitize_block_polls_to_completion() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, WD_BLUE)
    runner.add(["hdparm", "--yes-i-know-what-i-am-doing", "--sanitize-block-erase", "/dev/sda"],
               fixture("hdparm/DERIVED_hdparm-sanitize-block-erase_started.txt"))
    for f in ("in-progress-25", "in-progress-73", "completed"):
        runner.add(SAN_STATUS, fixture(f"hdparm/DERIVED_hdparm-sanitize-status_{f}.txt"))
    clock = FakeClock()
    events: list[Progress] = []
    record = erase_drive(
        Host(runner, FakeFS()), target_from(WD_BLUE), method="ata-sanitize-block",
        journal=MemoryPasswordJournal(), progress=events.append,
        options=options(clock=clock, poll_interval_s=1.0),
    )
    assert record.method == "ata-sanitize-block"
    assert clock.sleeps == [1.0, 1.0]
    fractions = [e.fraction for e in events if e.message == "ATA sanitize"]
    assert fractions == pytest.approx([(0x41C2 + 1) / 0xFFFF, (0xBB27 + 1) / 0xFFFF])


def test_ata_sanitize_stuck_fires_the_watchdog_and_never_retries() -> None:
    runner = ScriptedRunner()
    identify_sequence(runner, WD_BLUE)
    start = ["hdparm", "--yes-i-know-what-i-am-doing", "--sanitize-block-erase", "/dev/sda"]
    runner.add(start)
    for _ in range(20):
        runner.add(SAN_STATUS, fixture("hdparm/DERIVED_hdparm-sanitize-status_in-progress-25.txt"))
    with pytest.raises(EraseError, match="no progress for 600 s"):
        erase_drive(
            Host(runner, FakeFS()), target_from(WD_BLUE), method="ata-sanitize-block",
            journal=MemoryPasswordJournal(),
            options=options(poll_interval_s=60.0, sanitize_stall_s=600.0),
        )
    assert runner.calls.count(tuple(start)) == 1
    assert runner.calls.count(tuple(SAN_STATUS)) == 11


# --- two drives that share a serial (issue #42): the journal knows each by its identity ---

def _twin(path: str, place: str) -> EraseTarget:
    from dataclasses import replace

    from ssdbench.devices.model import DriveIdentity

    base = target_from(APACER)
    identity = DriveIdentity(serial=base.serial, model=base.model, wwn="",
                             size_bytes=base.size_bytes, place=place)
    return replace(base, path=path, name=path.removeprefix("/dev/"), identity=identity)


def hdp(op: str, password: str, path: str) -> list[str]:
    return ["hdparm", "--user-master", "u", op, password, path]


def _crash_leaving_password(runner: ScriptedRunner, target: EraseTarget, password: str,
                            journal: object) -> None:
    """An erase whose cleanup fails too: the password stays in the journal. A twin's entry
    in the journal costs one more IDENTIFY (is this drive locked, moved from there?)."""
    twin = any(e.serial == target.serial for e in journal.entries())  # type: ignore[attr-defined]
    for f in (APACER,) * twin + (APACER, APACER_ENABLED, APACER_ENABLED, APACER_ENABLED):
        runner.add(["hdparm", "-I", target.path], fixture(f))
    runner.add(hdp("--security-set-pass", password, target.path))
    runner.add(hdp("--security-erase-enhanced", password, target.path),
               stderr="SECURITY_ERASE: Input/output error\n", returncode=5)
    runner.add(hdp("--security-disable", password, target.path),
               stderr="SECURITY_DISABLE: Input/output error\n", returncode=5)
    with pytest.raises(EraseError, match="removing the password failed too"):
        erase_drive(Host(runner, FakeFS()), target, journal=journal,  # type: ignore[arg-type]
                    options=options(password=password))


def _unlock_script(runner: ScriptedRunner, target: EraseTarget, password: str) -> None:
    runner.add(["hdparm", "-I", target.path], fixture(APACER_LOCKED))
    runner.add(hdp("--security-unlock", password, target.path))
    runner.add(hdp("--security-disable", password, target.path))
    runner.add(["hdparm", "-I", target.path], fixture(APACER))


def test_two_drives_sharing_a_serial_keep_their_own_passwords(tmp_path: Path) -> None:
    from ssdbench.erase import JsonPasswordJournal

    path = tmp_path / "erase-journal.json"
    a, b = _twin("/dev/sda", "pci0000:00/0000:00:1f.2/ata1/0:0:0"), \
        _twin("/dev/sdb", "pci0000:00/0000:00:1f.2/ata2/0:0:0")
    runner = ScriptedRunner()
    _crash_leaving_password(runner, a, "ssdbpasswordaaaa", JsonPasswordJournal(path))
    _crash_leaving_password(runner, b, "ssdbpasswordbbbb", JsonPasswordJournal(path))
    # both entries survive, each under its own drive (a power loss: a new process)
    again = JsonPasswordJournal(path)
    assert sorted(e.password for e in again.entries()) == ["ssdbpasswordaaaa",
                                                          "ssdbpasswordbbbb"]
    # after the power cycle both are locked: each unlocks with its own password
    _unlock_script(runner, b, "ssdbpasswordbbbb")
    _unlock_script(runner, a, "ssdbpasswordaaaa")
    assert recover_leftover_password(Host(runner, FakeFS()), b, again)
    assert [e.password for e in again.entries()] == ["ssdbpasswordaaaa"]
    assert recover_leftover_password(Host(runner, FakeFS()), a, again)
    assert again.entries() == []
    assert not runner.unused()


def test_an_older_serial_only_entry_is_still_used(tmp_path: Path) -> None:
    from ssdbench.erase import JsonPasswordJournal

    path = tmp_path / "erase-journal.json"
    a = _twin("/dev/sda", "pci0000:00/0000:00:1f.2/ata1/0:0:0")
    path.write_text(json.dumps({"ata_passwords": {a.serial: "ssdboldjournal01"}, "other": 1}))
    runner = ScriptedRunner()
    _unlock_script(runner, a, "ssdboldjournal01")
    steps = recover_leftover_password(Host(runner, FakeFS()), a, JsonPasswordJournal(path))
    assert "unlocked with the recorded password" in steps
    assert JsonPasswordJournal(path).entries() == []
    assert json.loads(path.read_text()) == {"other": 1}


def test_an_entry_of_a_twin_is_not_applied_to_an_unlocked_drive() -> None:
    a = _twin("/dev/sda", "pci0000:00/0000:00:1f.2/ata1/0:0:0")
    b = _twin("/dev/sdb", "pci0000:00/0000:00:1f.2/ata2/0:0:0")
    journal = MemoryPasswordJournal()
    runner = ScriptedRunner()
    _crash_leaving_password(runner, a, "ssdbpasswordaaaa", journal)
    # b (same serial, another port) is not locked: a's entry is neither tried nor cleared
    runner.add(["hdparm", "-I", b.path], fixture(APACER))
    assert recover_leftover_password(Host(runner, FakeFS()), b, journal) == []
    assert [e.password for e in journal.entries()] == ["ssdbpasswordaaaa"]
    assert not any("--security-unlock" in c for c in runner.calls)


def test_a_locked_drive_moved_to_another_port_is_offered_its_password() -> None:
    a = _twin("/dev/sda", "pci0000:00/0000:00:1f.2/ata1/0:0:0")
    moved = _twin("/dev/sdc", "pci0000:00/0000:00:1f.2/ata3/0:0:0")
    journal = MemoryPasswordJournal()
    runner = ScriptedRunner()
    _crash_leaving_password(runner, a, "ssdbpasswordaaaa", journal)
    runner.add(["hdparm", "-I", moved.path], fixture(APACER_LOCKED))  # recovery's look
    runner.add(hdp("--security-unlock", "ssdbpasswordaaaa", moved.path))
    runner.add(hdp("--security-disable", "ssdbpasswordaaaa", moved.path))
    runner.add(["hdparm", "-I", moved.path], fixture(APACER))
    steps = recover_leftover_password(Host(runner, FakeFS()), moved, journal)
    assert any("another place" in s for s in steps)
    assert journal.entries() == []


def test_a_moved_locked_drive_with_two_candidate_entries_is_not_guessed() -> None:
    a = _twin("/dev/sda", "pci0000:00/0000:00:1f.2/ata1/0:0:0")
    b = _twin("/dev/sdb", "pci0000:00/0000:00:1f.2/ata2/0:0:0")
    moved = _twin("/dev/sdc", "pci0000:00/0000:00:1f.2/ata3/0:0:0")
    journal = MemoryPasswordJournal()
    runner = ScriptedRunner()
    _crash_leaving_password(runner, a, "ssdbpasswordaaaa", journal)
    _crash_leaving_password(runner, b, "ssdbpasswordbbbb", journal)
    runner.add(["hdparm", "-I", moved.path], fixture(APACER_LOCKED))
    runner.add(["hdparm", "-I", moved.path], fixture(APACER_LOCKED))
    with pytest.raises(EraseError, match="2 passwords for this serial"):
        erase_drive(Host(runner, FakeFS()), moved, journal=journal, options=options())
    assert len(journal.entries()) == 2
    assert not any("--security-unlock" in c for c in runner.calls)
