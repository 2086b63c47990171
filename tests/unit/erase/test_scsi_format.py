"""FORMAT UNIT as the erase of a SAS drive that lists no SANITIZE (``scsi-format``,
erase/scsi.py): offered only for such a drive, the current block size and protection type
kept, its progress polled with the sanitize's limits, a failed or changed format an error
naming the method, and the product path's own choice. The tables are the real sg_opcodes
captures of the emulated drive with SANITIZE and without it (tests/data/sas-emu/)."""

from __future__ import annotations

import pytest

from ssdbench.devices.model import Drive
from ssdbench.erase import (
    EraseError,
    EraseOptions,
    MemoryPasswordJournal,
    NoEraseMethod,
    choose_method,
    erase_drive,
    scsi,
)
from ssdbench.erase.adapter import target_from_drive
from ssdbench.progress import Progress
from tests.unit.devices.test_sas_discovery import only_drive, sas_machine
from tests.unit.erase.replay import FakeClock, ScriptedRunner
from tests.unit.erase.test_scsi import (
    DEV,
    capture,
    host_of,
    idle_drive,
    progress_line,
    reporter,
    sas_target,
)

FORMAT_512 = ["sg_format", "--format", "--size=512", "--fmtpinfo=0", "--quick", "--early", DEV]
FORMAT_FAILED = ("data-in decoded as sense:\nFixed format, current; Sense key: Medium Error\n"
                 "Additional sense: Medium format corrupted\n")


def no_sanitize_table() -> str:
    """sg_opcodes of the emulated drive without SANITIZE (``sanitize = False``), captured in
    QEMU: FORMAT UNIT listed, no 48h row."""
    return capture("sg_opcodes-no-sanitize.txt")


def readcap(protection_type: int = 0) -> str:
    text = capture("sg_readcap-512.txt")
    if protection_type:
        text = text.replace("prot_en=0, p_type=0", f"prot_en=1, p_type={protection_type - 1}")
    return text


def format_script(runner: ScriptedRunner, *, percents: tuple[float, ...] = (12.5, 60.0),
                  after: str | None = None) -> None:
    runner.add(["sg_readcap", "-l", DEV], readcap())
    runner.add(FORMAT_512, capture("sg_format.txt"))
    for percent in percents:
        runner.add(["sg_requests", "--progress", DEV], progress_line(percent))
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], readcap() if after is None else after)


def test_format_allowed_only_where_no_sanitize_is_listed() -> None:
    none = scsi.parse_opcodes(no_sanitize_table())
    assert not none.sanitize and none.format_unit
    scsi.format_allowed(DEV, none)
    with pytest.raises(NoEraseMethod, match=r"lists SANITIZE 0x01, 0x02, 0x03.*scsi-sanitize"):
        scsi.format_allowed(DEV, scsi.parse_opcodes(capture("sg_opcodes.txt")))
    with pytest.raises(NoEraseMethod, match=r"did not answer .* may have SANITIZE"):
        scsi.format_allowed(DEV, scsi.Opcodes(False))
    with pytest.raises(NoEraseMethod, match="neither SANITIZE nor FORMAT UNIT"):
        scsi.format_allowed(DEV, scsi.Opcodes(True))
    exit_only = scsi.Opcodes(True, frozenset({0x1F}), format_unit=True)  # no erasing action
    scsi.format_allowed(DEV, exit_only)


def test_choose_scsi_format_names_the_missing_sanitize() -> None:
    runner = ScriptedRunner()
    runner.add(["sg_opcodes", DEV], no_sanitize_table())
    order, steps = scsi.choose(host_of(runner), sas_target(), "scsi-format")
    assert order == ["scsi-format"]
    assert steps == ["REPORT SUPPORTED OPERATION CODES: FORMAT UNIT, no SANITIZE service "
                     "action (the drive has none)"]


def test_scsi_sanitize_by_name_on_a_drive_without_it_is_refused_not_formatted() -> None:
    """The operator asked for a sanitize: a FORMAT UNIT is not one, so it is refused."""
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], no_sanitize_table())
    with pytest.raises(NoEraseMethod, match="no SANITIZE at all"):
        scsi.prepare_recorded(host_of(runner), sas_target(), "scsi-sanitize",
                              EraseOptions(clock=clock), reporter([], clock), reformat_to=None)


def test_format_unit_keeps_the_format_with_progress_then_sense_and_capacity() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    events: list[Progress] = []
    format_script(runner)
    options = EraseOptions(clock=clock, poll_interval_s=1.0)
    method, steps = scsi.erase(host_of(runner), sas_target(size=16 << 20), ["scsi-format"],
                               options, reporter(events, clock))
    assert method == "scsi-format" and not runner.unused()
    assert steps[0].startswith("sg_format --format --size=512 --fmtpinfo=0 --quick --early: "
                               "FORMAT UNIT started, keeping 512 bytes a block, 32768 blocks, "
                               "protection type 0")
    assert "FORMAT UNIT: no progress indication after 3 polls" in steps[1]
    assert steps[2].startswith("REQUEST SENSE after it: No Sense")
    assert steps[3] == ("after it: 512 bytes a block, 32768 blocks, protection type 0, "
                        "as before")
    fractions = [e.fraction for e in events if e.message.startswith("FORMAT UNIT (")]
    assert fractions == [0.0, 0.125, 0.60]
    assert clock.sleeps == [1.0, 1.0]


@pytest.mark.parametrize(("ptype", "options"), [
    (1, ["--fmtpinfo=2"]), (2, ["--fmtpinfo=3"]), (3, ["--fmtpinfo=3", "--pfu=1"])])
def test_format_unit_keeps_the_protection_type(ptype: int, options: list[str]) -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], readcap(ptype))
    runner.add(["sg_format", "--format", "--size=512", *options, "--quick", "--early", DEV])
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], readcap(ptype))
    _, steps = scsi.erase(host_of(runner), sas_target(), ["scsi-format"],
                          EraseOptions(clock=clock), reporter([], clock))
    assert steps[-1].endswith(f"protection type {ptype}, as before")


def test_a_failed_format_is_an_error_naming_the_method() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], readcap())
    runner.add(FORMAT_512)
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sg_requests", DEV], stderr=FORMAT_FAILED)
    with pytest.raises(EraseError, match=r"FORMAT UNIT failed .*Medium format corrupted") as err:
        scsi.erase(host_of(runner), sas_target(), ["scsi-format"], EraseOptions(clock=clock),
                   reporter([], clock))
    assert err.value.method == "scsi-format"


def test_a_format_the_drive_refuses_is_an_error_naming_the_method() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], readcap())
    runner.add(FORMAT_512, returncode=5, stderr="Format unit command: Illegal request")
    with pytest.raises(EraseError, match="FORMAT UNIT refused") as err:
        scsi.erase(host_of(runner), sas_target(), ["scsi-format"], EraseOptions(clock=clock),
                   reporter([], clock))
    assert err.value.method == "scsi-format"


def test_a_format_that_changed_the_drive_is_an_error() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    format_script(runner, percents=(), after=capture("sg_readcap-520.txt"))
    with pytest.raises(EraseError, match="520 bytes a block, 32263 blocks") as err:
        scsi.erase(host_of(runner), sas_target(), ["scsi-format"], EraseOptions(clock=clock),
                   reporter([], clock))
    assert err.value.method == "scsi-format"


def test_a_stalled_format_fails_after_the_stall_limit() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], readcap())
    runner.add(FORMAT_512)
    for _ in range(5):
        runner.add(["sg_requests", "--progress", DEV], progress_line(30.0))
    options = EraseOptions(clock=clock, poll_interval_s=10.0, sanitize_stall_s=30.0)
    with pytest.raises(EraseError, match=r"FORMAT UNIT made no progress for 30 s \(stuck at 30.00%\)") as err:
        scsi.erase(host_of(runner), sas_target(), ["scsi-format"], options,
                   reporter([], clock))
    assert err.value.method == "scsi-format"


def no_sanitize_drive() -> Drive:
    m = sas_machine(block=512, opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=no_sanitize_table())
    return only_drive(m)


def test_the_product_path_formats_a_drive_without_sanitize_by_default() -> None:
    """Discovery offers ``scsi-format`` only; the erase stage's own choice (no method named)
    takes it, and the record names it with its steps."""
    drive = no_sanitize_drive()
    assert drive.erase_methods == ("scsi-format",)
    target = target_from_drive(drive)
    assert target.scsi_format and not target.scsi_sanitize
    assert choose_method(target) == "scsi-format"
    assert choose_method(target, options=EraseOptions(erase_fallback="overwrite")) == \
        "scsi-format"
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], no_sanitize_table())
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], readcap())
    format_script(runner, percents=(50.0,))
    rec = erase_drive(host_of(runner), target, journal=MemoryPasswordJournal(),
                      options=EraseOptions(clock=clock, verify=False))
    assert (rec.method, rec.secure) == ("scsi-format", True) and not runner.unused()
    steps = "\n".join(rec.steps)
    assert "method scsi-format" in steps and "no SANITIZE service action" in steps
    assert "FORMAT UNIT started, keeping 512 bytes a block" in steps


def test_scsi_format_by_name_is_only_for_sas_scsi_drives() -> None:
    assert choose_method(sas_target(), "scsi-format") == "scsi-format"
    with pytest.raises(NoEraseMethod, match="not sata"):
        choose_method(sas_target(transport="sata"), "scsi-format")
    with pytest.raises(NoEraseMethod, match="ATA pass-through"):
        choose_method(sas_target(passthrough=True), "scsi-format")


def test_smartctl_x_of_the_emulated_drives_has_no_failed_command() -> None:
    """smartctl 7.3 -x, as the health stage runs it, in QEMU: the log page 15h the emulator
    answers (background scan results) keeps its exit bit 2 clear, on the healthy drive and
    on the worn one (whose bit 3, DISK FAILING, is set: its health status says FAILED)."""
    import json

    healthy = json.loads(capture("smartctl-x.json"))
    worn = json.loads(capture("smartctl-x-worn.json"))
    assert healthy["smartctl"]["exit_status"] == 0
    assert worn["smartctl"]["exit_status"] == 8
    assert (healthy["power_on_time"]["hours"], worn["power_on_time"]["hours"]) == (1234, 46000)


def test_a_drive_that_lists_nothing_and_has_no_sanitize_is_refused_naming_the_fallback() -> None:
    """sg_sanitize's exit status 9 (INVALID COMMAND OPERATION CODE: the command, not a
    service action, is unknown) ends the tries at once, naming the overwrite fallback."""
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV], returncode=9,
               stderr="Sanitize failed: Illegal request, Invalid opcode")
    with pytest.raises(NoEraseMethod, match=r"no SANITIZE .*erase_fallback") as err:
        scsi.erase(host_of(runner), sas_target(), list(scsi.ORDER), EraseOptions(clock=clock),
                   reporter([], clock))
    assert err.value.method == "scsi-sanitize-block" and not runner.unused()
