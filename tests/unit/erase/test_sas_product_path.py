"""PROPOSED (needs the erase/core.py + erase/adapter.py patch): the product path in-process,
discovery's SAS drive -> the erase stage's target -> the erase's own choice."""

from __future__ import annotations

from pathlib import Path

from ssdbench.erase import EraseOptions, MemoryPasswordJournal, choose_method, erase_drive
from ssdbench.erase.adapter import target_from_drive
from ssdbench.stages.secure_erase import EraseHook, secure_erase_hook
from ssdbench.system import Host
from tests.unit.devices.test_sas_discovery import only_drive, sas_machine
from tests.unit.erase.replay import FakeClock, FakeFS, ScriptedRunner
from tests.unit.erase.test_scsi import capture, reformat_script

DEV = "/dev/sda"


def test_discovered_sas_drive_is_erased_by_scsi_sanitize_by_default(tmp_path: Path) -> None:
    drive = only_drive(sas_machine())
    target = target_from_drive(drive)
    assert target.scsi_sanitize and choose_method(target) == "scsi-sanitize"
    hook = secure_erase_hook(drive, tmp_path)
    assert isinstance(hook, EraseHook) and not hook.fallback_only
    runner, clock = ScriptedRunner(), FakeClock()
    reformat_script(runner)
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV])
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sg_requests", DEV], stderr=capture("sg_requests-idle.txt"))
    host = Host(runner, FakeFS({"/sys/block/sda/size": "32768\n"}))
    rec = erase_drive(host, target, journal=MemoryPasswordJournal(),
                      options=EraseOptions(clock=clock, verify=False), scsi_reformat_to=512)
    assert rec.method == "scsi-sanitize-block"
    assert rec.scsi_reformat is not None and rec.scsi_reformat["before"]["block_size"] == 520


def test_a_sas_drive_listing_no_sanitize_is_not_sanitized_by_default() -> None:
    """No SANITIZE listed: never ``scsi-sanitize``; FORMAT UNIT (``scsi-format``, Clear
    at most) comes before the plan's overwrite fallback; a table without FORMAT UNIT either
    leaves the fallback."""
    rows = "\n".join(line for line in capture("sg_opcodes.txt").splitlines()
                     if not line.startswith(" 48 ")) + "\n"
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=rows)
    target = target_from_drive(only_drive(m))
    assert not target.scsi_sanitize and target.scsi_format
    assert choose_method(target, options=EraseOptions(erase_fallback="overwrite")) == \
        "scsi-format"
    bare = "\n".join(line for line in rows.splitlines() if not line.startswith(" 04 ")) + "\n"
    m = sas_machine(opcodes=None)
    m.runner.add(["sg_opcodes", DEV], stdout=bare)
    target = target_from_drive(only_drive(m))
    assert not target.scsi_sanitize and not target.scsi_format
    assert choose_method(target, options=EraseOptions(erase_fallback="overwrite")) == "overwrite"
