"""SAS/SCSI erase through sg3_utils (erase/scsi.py): the parsers on the REAL outputs captured
in QEMU from the emulated SAS drive (tests/data/sas-emu/, sg3_utils 1.46), and the sanitize,
reformat and refusals at the process boundary with a scripted runner."""

from __future__ import annotations

from pathlib import Path

import pytest

from ssdbench.devices.errors import ParseError
from ssdbench.erase import EraseError, EraseOptions, EraseTarget, NoEraseMethod, choose_method, scsi
from ssdbench.erase.model import EraseRecord
from ssdbench.erase.ticker import Reporter
from ssdbench.progress import Progress
from ssdbench.system import Host

from .replay import FakeClock, FakeFS, ScriptedRunner

CAPTURES = Path(__file__).resolve().parents[2] / "data" / "sas-emu"
DEV = "/dev/sda"


def capture(name: str) -> str:
    return (CAPTURES / name).read_text(encoding="utf-8")


def sas_target(*, size: int = 0, lbs: int = 512, transport: str = "scsi",
               passthrough: bool = False) -> EraseTarget:
    return EraseTarget(path=DEV, name="sda", transport=transport, serial="SASEMU0044",
                       model="SSDBENCH SAS EMU", size_bytes=size, logical_block_size=lbs,
                       ata_passthrough=passthrough)


def host_of(runner: ScriptedRunner, files: dict[str, str] | None = None) -> Host:
    return Host(runner, FakeFS(files or {}))


def reporter(events: list[Progress], clock: FakeClock) -> Reporter:
    return Reporter(events.append, "sda", "run", clock)


def progress_line(percent: float) -> str:
    whole = int(percent)
    return f"Progress indication: {whole}.{round(100 * (percent - whole)):02d}% done\n"


# ---- parsers on the captures -------------------------------------------------------------

def test_readcap_of_the_520_and_512_byte_formats() -> None:
    assert scsi.parse_readcap(capture("sg_readcap-520.txt")) == scsi.Capacity(32263, 520, 0)
    cap = scsi.parse_readcap(capture("sg_readcap-512.txt"))
    assert cap == scsi.Capacity(32768, 512, 0) and cap.size_bytes == 16 << 20


def test_readcap_with_protection_and_nonsense() -> None:
    text = capture("sg_readcap-512.txt").replace("prot_en=0, p_type=0", "prot_en=1, p_type=1")
    assert scsi.parse_readcap(text).protection_type == 2
    for bad in ("", capture("sg_readcap-512.txt").replace("length=512", "length=0"),
                capture("sg_readcap-512.txt").replace("blocks=32768", "blocks=" + "9" * 20),
                "x" * 500 + "\n" + capture("sg_readcap-512.txt")):
        with pytest.raises(ParseError, match="sg_readcap"):
            scsi.parse_readcap(bad)


def test_opcodes_lists_the_sanitize_service_actions() -> None:
    ops = scsi.parse_opcodes(capture("sg_opcodes.txt"))
    assert ops == scsi.Opcodes(True, frozenset({0x01, 0x02, 0x03, 0x1F}), True)
    without_block = "\n".join(line for line in capture("sg_opcodes.txt").splitlines()
                              if "block erase" not in line)
    assert scsi.parse_opcodes(without_block).sanitize_actions == {0x01, 0x03, 0x1F}
    with pytest.raises(ParseError, match="no table"):
        scsi.parse_opcodes("sg_opcodes: Report supported operation codes: Illegal request\n")


def test_progress_while_working_none_when_idle() -> None:
    assert scsi.parse_progress(capture("progress-format.txt")) == 73.20  # the last of three
    assert scsi.parse_progress(capture("sg_requests-progress-idle.txt")) is None
    with pytest.raises(ParseError, match="more than all"):
        scsi.parse_progress("Progress indication: 180.00% done\n")


def test_sense_idle_and_in_sanitize_failure_mode() -> None:
    idle = scsi.parse_requests(capture("sg_requests-idle.txt"))
    assert idle == scsi.SenseState("No Sense", "No additional sense information")
    failed = scsi.parse_requests(capture("sg_requests-failed.txt"))
    assert failed.sanitize_failed and failed.sense_key == "Medium Error"
    assert not scsi.parse_requests(capture("sg_requests-after-exit.txt")).sanitize_failed
    with pytest.raises(ParseError, match="no sense key"):
        scsi.parse_requests("")


# ---- choosing ----------------------------------------------------------------------------

def test_scsi_methods_only_by_name_and_only_for_sas_scsi_drives() -> None:
    assert choose_method(sas_target(), "scsi-sanitize") == "scsi-sanitize"
    assert choose_method(sas_target(transport="sas"), "scsi-sanitize-crypto")
    with pytest.raises(NoEraseMethod, match="SAS/RAID/SCSI"):  # not chosen on its own
        choose_method(sas_target())
    with pytest.raises(NoEraseMethod, match="not sata"):
        choose_method(sas_target(transport="sata"), "scsi-sanitize")
    with pytest.raises(NoEraseMethod, match="ATA pass-through"):
        choose_method(sas_target(passthrough=True), "scsi-sanitize-block")


def test_candidates_follow_what_the_drive_lists() -> None:
    ops = scsi.parse_opcodes(capture("sg_opcodes.txt"))
    assert scsi.candidates("scsi-sanitize", ops) == list(scsi.ORDER)
    crypto_only = scsi.Opcodes(True, frozenset({0x03}))
    assert scsi.candidates("scsi-sanitize", crypto_only) == ["scsi-sanitize-crypto"]
    with pytest.raises(NoEraseMethod, match="scsi-sanitize-crypto"):
        scsi.candidates("scsi-sanitize-block", crypto_only)
    assert scsi.candidates("scsi-sanitize-block", scsi.Opcodes(False)) == [
        "scsi-sanitize-block"]


# ---- sanitize, reformat, refusals ---------------------------------------------------------

def idle_drive(runner: ScriptedRunner) -> None:
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sg_requests", DEV], stderr=capture("sg_requests-idle.txt"))


def test_sanitize_block_with_progress_then_the_sense_after_it() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    events: list[Progress] = []
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV],
               capture("sanitize-block.txt"))
    for percent in (2.46, 40.0, 80.5):
        runner.add(["sg_requests", "--progress", DEV], progress_line(percent))
    idle_drive(runner)
    options = EraseOptions(clock=clock, poll_interval_s=1.0)
    method, steps = scsi.sanitize(host_of(runner), sas_target(size=1 << 24), list(scsi.ORDER),
                                  options, reporter(events, clock))
    assert method == "scsi-sanitize-block"
    assert "no progress indication after 4 polls" in "\n".join(steps)
    assert "REQUEST SENSE after it: No Sense" in steps[-1]
    fractions = [e.fraction for e in events if e.message.startswith("SANITIZE")]
    assert fractions == [0.0246, 0.40, 0.805]
    assert clock.sleeps == [1.0, 1.0, 1.0] and not runner.unused()


def test_an_unsupported_service_action_is_skipped_for_the_next() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV], returncode=5,
               stderr="Sanitize command: Illegal request, Invalid field in cdb")
    runner.add(["sg_sanitize", "--crypto", "--quick", "--early", DEV])
    idle_drive(runner)
    method, steps = scsi.sanitize(host_of(runner), sas_target(size=1 << 24), list(scsi.ORDER),
                                  EraseOptions(clock=clock), reporter([], clock))
    assert method == "scsi-sanitize-crypto"
    assert "scsi-sanitize-block: ILLEGAL REQUEST (not supported); next" in steps


def test_a_failed_sanitize_is_an_error_naming_failure_mode_not_retried() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_sanitize", "--overwrite", "--zero", "--quick", "--early", DEV])
    runner.add(["sg_requests", "--progress", DEV], progress_line(50.0))
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sg_requests", DEV], stderr=capture("sg_requests-failed.txt"))
    with pytest.raises(EraseError, match="Sanitize command failed") as err:
        scsi.sanitize(host_of(runner), sas_target(size=1 << 24),
                      ["scsi-sanitize-overwrite", "scsi-sanitize-crypto"],
                      EraseOptions(clock=clock), reporter([], clock))
    assert err.value.method == "scsi-sanitize-overwrite"
    assert sum(c[0] == "sg_sanitize" for c in runner.calls) == 1


def test_a_stalled_sanitize_fails_after_the_stall_limit() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV])
    for _ in range(12):
        runner.add(["sg_requests", "--progress", DEV], progress_line(12.5))
    options = EraseOptions(clock=clock, poll_interval_s=10.0, sanitize_stall_s=100.0)
    with pytest.raises(EraseError, match=r"no progress for 100 s \(stuck at 12.50%\)"):
        scsi.sanitize(host_of(runner), sas_target(size=1 << 24), ["scsi-sanitize-block"],
                      options, reporter([], clock))


def test_garbage_from_sg_requests_is_a_clear_error() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_sanitize", "--block", "--quick", "--early", DEV])
    runner.add(["sg_requests", "--progress", DEV], "Progress indication: 999.00% done\n")
    with pytest.raises(EraseError, match=r"sg_requests: progress 999.0%") as err:
        scsi.sanitize(host_of(runner), sas_target(size=1 << 24), ["scsi-sanitize-block"],
                      EraseOptions(clock=clock), reporter([], clock))
    assert err.value.method == "scsi-sanitize-block"


def test_reformat_520_to_512_names_both_sizes() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-520.txt"))
    runner.add(["sg_format", "--format", "--size=512", "--quick", "--early", DEV],
               capture("sg_format.txt"))
    for text in capture("progress-format.txt").splitlines()[:3]:
        runner.add(["sg_requests", "--progress", DEV], text + "\n")
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sh", "-c", "echo 1 > /sys/block/sda/device/rescan"])
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-512.txt"))
    host = host_of(runner, {"/sys/block/sda/size": "32768\n"})
    target, steps, rec = scsi.reformat(host, sas_target(), 512, EraseOptions(clock=clock),
                                       reporter([], clock))
    assert (target.size_bytes, target.logical_block_size) == (16 << 20, 512)
    assert rec["result"] == "done"
    assert rec["before"] == {"block_size": 520, "blocks": 32263, "size_bytes": 32263 * 520,
                             "protection_type": 0}
    assert rec["after"]["block_size"] == 512 and rec["kernel"]["sectors"] == 32768
    assert "520 bytes a block, 32263 blocks" in steps[0]
    assert steps[-1].startswith("reformatted: 512 bytes a block, 32768 blocks")


def test_reformat_refused_when_the_kernel_does_not_see_the_new_size() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-520.txt"))
    runner.add(["sg_format", "--format", "--size=512", "--quick", "--early", DEV])
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sh", "-c", "echo 1 > /sys/block/sda/device/rescan"])
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-512.txt"))
    host = host_of(runner, {"/sys/block/sda/size": "0\n"})  # sd kept capacity 0
    with pytest.raises(EraseError, match="the kernel sees 0 512-byte sectors"):
        scsi.reformat(host, sas_target(), 512, EraseOptions(clock=clock), reporter([], clock))


def test_prepare_refuses_a_520_byte_drive_without_the_plans_consent() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], capture("sg_opcodes.txt"))
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-520.txt"))
    with pytest.raises(NoEraseMethod, match="scsi_reformat_512"):
        scsi.prepare_recorded(host_of(runner), sas_target(), "scsi-sanitize",
                              EraseOptions(clock=clock), reporter([], clock), reformat_to=None)


def test_prepare_refuses_a_drive_in_sanitize_failure_mode() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], capture("sg_opcodes.txt"))
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sg_requests", DEV], stderr=capture("sg_requests-failed.txt"))
    with pytest.raises(EraseError, match="sanitize failure mode"):
        scsi.prepare_recorded(host_of(runner), sas_target(size=1 << 24), "scsi-sanitize",
                              EraseOptions(clock=clock), reporter([], clock), reformat_to=None)


def test_prepare_of_a_512_byte_drive_whose_opcodes_are_not_reported() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], returncode=5, stderr="Illegal request")
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-512.txt"))
    target, order, steps, rec = scsi.prepare_recorded(
        host_of(runner), sas_target(), "scsi-sanitize", EraseOptions(clock=clock),
        reporter([], clock), reformat_to=None)
    assert rec is None  # no reformat asked for: nothing for the record
    assert order == list(scsi.ORDER) and target.size_bytes == 16 << 20
    assert "not answered" in steps[0]


def reformat_script(runner: ScriptedRunner) -> None:
    """sg_opcodes, an idle drive, then the real 520 -> 512 reformat's outputs."""
    runner.add(["sg_opcodes", DEV], capture("sg_opcodes.txt"))
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-520.txt"))
    runner.add(["sg_format", "--format", "--size=512", "--quick", "--early", DEV],
               capture("sg_format.txt"))
    runner.add(["sg_requests", "--progress", DEV], "")
    runner.add(["sh", "-c", "echo 1 > /sys/block/sda/device/rescan"])
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-512.txt"))


def test_prepare_recorded_returns_the_records_scsi_reformat() -> None:
    """What the erase record's ``scsi_reformat`` holds: both sizes, the command, the kernel."""
    runner, clock = ScriptedRunner(), FakeClock()
    reformat_script(runner)
    host = host_of(runner, {"/sys/block/sda/size": "32768\n"})
    target, order, steps, rec = scsi.prepare_recorded(
        host, sas_target(), "scsi-sanitize", EraseOptions(clock=clock), reporter([], clock),
        reformat_to=512)
    assert order == list(scsi.ORDER) and target.logical_block_size == 512
    assert rec is not None and rec["result"] == "done"
    assert (rec["before"]["block_size"], rec["after"]["block_size"]) == (520, 512)
    assert (rec["before"]["blocks"], rec["after"]["blocks"]) == (32263, 32768)
    assert rec["command"] == f"sg_format --format --size=512 --quick --early {DEV}"
    record = EraseRecord(method="scsi-sanitize-block", secure=True, verified=True,
                         duration_s=1.0, detail="", steps=tuple(steps), scsi_reformat=rec)
    out = record.to_dict()
    assert out["scsi_reformat"] == rec and out["method"] == "scsi-sanitize-block"
    assert "scsi_reformat" not in EraseRecord("nvme-format-user-data", True, True, 1.0,
                                              "").to_dict()


def test_prepare_without_reformat_records_none() -> None:
    runner, clock = ScriptedRunner(), FakeClock()
    runner.add(["sg_opcodes", DEV], capture("sg_opcodes.txt"))
    idle_drive(runner)
    runner.add(["sg_readcap", "-l", DEV], capture("sg_readcap-512.txt"))
    *_, rec = scsi.prepare_recorded(host_of(runner), sas_target(), "scsi-sanitize-crypto",
                                    EraseOptions(clock=clock), reporter([], clock),
                                    reformat_to=None)
    assert rec is None


def test_scsi_methods_are_secure_methods_with_one_vocabulary() -> None:
    """The erase model, discovery and erase/scsi.py name the methods alike; every one is a
    secure (firmware) method, so the erase stage is not a fallback-only hook for them."""
    from ssdbench.devices import model as devices_model
    from ssdbench.erase import ALL_METHODS, SECURE_METHODS
    from ssdbench.erase import model as erase_model

    assert scsi.SCSI_METHODS == erase_model.SCSI_METHODS == (
        "scsi-sanitize", "scsi-sanitize-block", "scsi-sanitize-crypto",
        "scsi-sanitize-overwrite", "scsi-format")
    assert set(scsi.SCSI_METHODS) <= set(SECURE_METHODS) <= set(ALL_METHODS)
    assert set(scsi.SCSI_METHODS) <= set(devices_model.ERASE_METHODS)
