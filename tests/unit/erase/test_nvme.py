"""NVMe sanitize and Format NVM at the process boundary.

Format runs replay REAL recordings made in QEMU (tests/data/erase/qemu-nvme-*/); sanitize
logs are the real captures' values in nvme-cli's JSON layout (DERIVED_* files).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ssdbench.devices.nvme import parse_id_ctrl_json, parse_id_ns_json
from ssdbench.erase import (
    EraseError,
    EraseOptions,
    EraseTarget,
    MemoryPasswordJournal,
    NvmeCaps,
    VerificationFailed,
    choose_method,
    erase_drive,
)
from ssdbench.erase.adapter import nvme_caps
from ssdbench.erase.verify import check_markers, write_markers
from ssdbench.progress import Progress
from ssdbench.system import Host

from .replay import DATA, FakeClock, FakeFS, ScriptedRunner, fixture

NONCE = bytes.fromhex("5ca1ab1e0ddba110")  # the nonce the QEMU recordings were made with
PM1733 = NvmeCaps(oacs=0x5F, fna=0x4, sanicap=0x3, oncs=0x7F)  # nvme-id-ctrl-H PM1733 fixture
PC401 = NvmeCaps(oacs=0x17, fna=0x0, sanicap=0x0, oncs=0x1F)  # nvme-id-ctrl PC401 fixture
SANLOG = ["nvme", "sanitize-log", "/dev/nvme0", "-o", "json"]


def nvme_target(caps: NvmeCaps, *, size: int = 64 * 2**20, lbs: int = 512) -> EraseTarget:
    return EraseTarget(
        path="/dev/nvme0n1", name="nvme0n1", transport="nvme", serial="S5RTNC0T104269",
        model="SAMSUNG MZWLJ7T6HALA-00AU3", size_bytes=size, logical_block_size=lbs, nvme=caps,
    )


def opts(**kw: object) -> EraseOptions:
    base: dict[str, object] = {"verify": False, "clock": FakeClock(), "poll_interval_s": 1.0}
    base.update(kw)
    return EraseOptions(**base)  # type: ignore[arg-type]


def test_method_order() -> None:
    assert choose_method(nvme_target(PM1733)) == "nvme-sanitize-block"
    assert choose_method(nvme_target(PC401)) == "nvme-format-user-data"
    assert choose_method(nvme_target(NvmeCaps(oacs=0x2, fna=0x4, sanicap=0)),
                         None, EraseOptions(crypto=True)) == "nvme-format-crypto"
    assert choose_method(nvme_target(NvmeCaps(oacs=0x2, fna=0, sanicap=0x1))) == (
        "nvme-sanitize-crypto")
    with pytest.raises(EraseError, match="not supported by this drive; it offers nvme-format"):
        choose_method(nvme_target(PC401), "nvme-sanitize-block")
    with pytest.raises(EraseError, match="not possible"):
        choose_method(nvme_target(PC401), "ata-security-erase")
    with pytest.raises(EraseError, match="offers"):
        choose_method(nvme_target(PM1733), "nvme-sanitize-overwrite")


def test_sanitize_progress_to_completion() -> None:
    runner = ScriptedRunner()
    for i in range(5):
        runner.add(SANLOG, fixture(f"nvme/DERIVED_sanitize-log-json_block-erase-seq{i}.json"))
    runner.add(["nvme", "sanitize", "/dev/nvme0", "-a", "2"])
    events: list[Progress] = []
    clock = FakeClock()
    record = erase_drive(
        Host(runner, FakeFS()), nvme_target(PM1733), journal=MemoryPasswordJournal(),
        progress=events.append, options=opts(clock=clock),
    )
    assert record.method == "nvme-sanitize-block"
    assert runner.calls[:2] == [tuple(SANLOG), ("nvme", "sanitize", "/dev/nvme0", "-a", "2")]
    fractions = [e.fraction for e in events if e.message.startswith("NVMe sanitize (SPROG")]
    assert fractions == [0.0, 0.25, 0.75]
    etas = [e.eta_s for e in events if e.message.startswith("NVMe sanitize (SPROG")]
    assert etas == [90.0, 89.0, 88.0]  # ETBE 90 s from the PM1733 log, 1 s per poll
    assert clock.sleeps == [1.0, 1.0, 1.0]
    assert "completed successfully" in record.steps[-1]


def test_sanitize_crypto_completion_with_status_text_as_key() -> None:
    runner = ScriptedRunner()
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_block-erase-seq0.json"))
    runner.add(["nvme", "sanitize", "/dev/nvme0", "-a", "4"])
    runner.add(SANLOG, fixture(
        "nvme/DERIVED_sanitize-log-json_pm1733_crypto-completed_status-as-key.json"))
    record = erase_drive(
        Host(runner, FakeFS()), nvme_target(PM1733), method="nvme-sanitize-crypto",
        journal=MemoryPasswordJournal(), options=opts(),
    )
    assert record.method == "nvme-sanitize-crypto"


def test_sanitize_stuck_fires_the_watchdog_and_never_retries() -> None:
    runner = ScriptedRunner()
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_block-erase-seq0.json"))
    runner.add(["nvme", "sanitize", "/dev/nvme0", "-a", "2"])
    stuck = fixture("nvme/DERIVED_sanitize-log-json_intel-660p_block-erase-stuck.json")
    for _ in range(40):
        runner.add(SANLOG, stuck)
    clock = FakeClock()
    with pytest.raises(EraseError, match=r"no progress for 1800 s \(SPROG stuck at 655/65536"):
        erase_drive(
            Host(runner, FakeFS()), nvme_target(PM1733), journal=MemoryPasswordJournal(),
            options=opts(clock=clock, poll_interval_s=60.0, sanitize_stall_s=1800.0),
        )
    assert runner.calls.count(("nvme", "sanitize", "/dev/nvme0", "-a", "2")) == 1
    assert clock.sleeps == [60.0] * 30


def test_sanitize_failed() -> None:
    runner = ScriptedRunner()
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_block-erase-seq0.json"))
    runner.add(["nvme", "sanitize", "/dev/nvme0", "-a", "2"])
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_block-erase-seq1.json"))
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_block-erase-failed.json"))
    with pytest.raises(EraseError, match=r"failed \(SSTAT 3\)") as err:
        erase_drive(Host(runner, FakeFS()), nvme_target(PM1733),
                    journal=MemoryPasswordJournal(), options=opts())
    assert err.value.method == "nvme-sanitize-block"
    assert runner.calls.count(("nvme", "sanitize", "/dev/nvme0", "-a", "2")) == 1


def test_sanitize_already_running_is_not_restarted() -> None:
    runner = ScriptedRunner()
    runner.add(SANLOG, fixture("nvme/DERIVED_sanitize-log-json_intel-660p_block-erase-stuck.json"))
    with pytest.raises(EraseError, match="already running"):
        erase_drive(Host(runner, FakeFS()), nvme_target(PM1733),
                    journal=MemoryPasswordJournal(), options=opts())
    assert runner.calls == [tuple(SANLOG)]


def test_format_keeps_the_current_4kn_lbaf() -> None:
    runner = ScriptedRunner()
    idns = ["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"]
    runner.add(idns, fixture("nvme/DERIVED_id-ns-json_4kn-lbaf1.json"))
    runner.add(idns, fixture("nvme/DERIVED_id-ns-json_4kn-lbaf1.json"))
    fmt = ["nvme", "format", "/dev/nvme0n1", "--ses=1", "--lbaf=1", "--force",
           "--timeout=1802236"]
    runner.add(fmt, "Success formatting namespace:1\n")
    runner.add(["nvme", "ns-rescan", "/dev/nvme0"])
    fs = FakeFS({"/sys/block/nvme0n1/size": "131072\n"})
    record = erase_drive(
        Host(runner, fs), nvme_target(PC401, lbs=4096), journal=MemoryPasswordJournal(),
        options=opts(),
    )
    assert record.method == "nvme-format-user-data"
    assert tuple(fmt) in runner.calls
    assert "sysfs size after: 67108864 bytes" in record.steps


def test_format_io_error_fails_the_stage() -> None:
    runner = ScriptedRunner()
    idns = ["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"]
    runner.add(idns, fixture("qemu-nvme-512/id-ns-before.json"))
    runner.add(
        ["nvme", "format", "/dev/nvme0n1", "--ses=2", "--lbaf=0", "--force", "--timeout=1802236"],
        stderr=fixture("qemu-nvme-512/sanitize-log-unsupported.stderr"), returncode=1,
    )
    with pytest.raises(EraseError, match=r"Invalid Field in Command") as err:
        erase_drive(
            Host(runner, FakeFS()), nvme_target(NvmeCaps(oacs=0x2, fna=0x4, sanicap=0)),
            method="nvme-format-crypto", journal=MemoryPasswordJournal(), options=opts(),
        )
    assert err.value.method == "nvme-format-crypto"
    assert ("nvme", "ns-rescan", "/dev/nvme0") not in runner.calls


def qemu_target(name: str) -> EraseTarget:
    ctrl = parse_id_ctrl_json(fixture(f"{name}/id-ctrl.json"))
    ns = parse_id_ns_json(fixture(f"{name}/id-ns-before.json"), nsid=1, name="nvme0n1")
    assert ns.size_bytes is not None and ns.block_size is not None
    return EraseTarget(
        path="/dev/nvme0n1", name="nvme0n1", transport="nvme", serial=ctrl.serial,
        model=ctrl.model, size_bytes=ns.size_bytes, logical_block_size=ns.block_size,
        nvme=nvme_caps(ctrl),
    )


@pytest.mark.parametrize(("name", "lbaf"), [("qemu-nvme-512", 0), ("qemu-nvme-4kn", 4)])
def test_real_qemu_format_with_verification_replays(name: str, lbaf: int, tmp_path: Path) -> None:
    runner = ScriptedRunner.from_recording(DATA / name / "recording", scratch=tmp_path)
    # the recording starts with the guest's own id-ctrl/id-ns reads
    runner.run(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"])
    runner.run(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"])
    fs = FakeFS({"/sys/block/nvme0n1/size": "131072\n"})
    record = erase_drive(
        Host(runner, fs), qemu_target(name), journal=MemoryPasswordJournal(),
        options=EraseOptions(nonce=NONCE, clock=FakeClock()), scratch=tmp_path,
    )
    assert record.method == "nvme-format-user-data" and record.verified is True
    assert record.verification is not None and record.verification.markers == 16
    fmt = [c for c in runner.calls if c[:2] == ("nvme", "format")]
    assert fmt and f"--lbaf={lbaf}" in fmt[0]
    assert not runner.unused()
    recorded = json.loads((DATA / name / "record.json").read_text())
    assert recorded["verification"]["offsets"] == list(record.verification.offsets)


def test_verification_catches_a_no_op_format(tmp_path: Path) -> None:
    """The real QEMU recording, but the drive 'formats' without erasing: after the format
    the marker reads return what was read before it (the real marker bytes)."""
    directory = DATA / "qemu-nvme-512" / "recording"
    calls = json.loads((directory / "commands.json").read_text())
    first_read: dict[tuple[str, ...], bytes] = {}
    runner = ScriptedRunner(scratch=tmp_path)
    formatted = False
    for call in calls:
        argv = tuple(call["argv"])
        out = (directory / call["stdout"]).read_bytes()
        if argv[:2] == ("nvme", "format"):
            formatted = True
        if argv[0] == "dd" and argv[1] == "if=/dev/nvme0n1":
            if formatted:
                out = first_read[argv]
            else:
                first_read[argv] = out
        runner.add(list(argv), out, stderr=call["stderr"], returncode=call["returncode"])
    runner.run(["nvme", "id-ctrl", "/dev/nvme0", "-o", "json"])
    runner.run(["nvme", "id-ns", "/dev/nvme0n1", "-o", "json"])
    with pytest.raises(VerificationFailed, match="reported success but did not erase: 16 of 16"):
        erase_drive(
            Host(runner, FakeFS()), qemu_target("qemu-nvme-512"),
            journal=MemoryPasswordJournal(),
            options=EraseOptions(nonce=NONCE, clock=FakeClock()), scratch=tmp_path,
        )


def test_real_qemu_markers_without_erase_are_caught(tmp_path: Path) -> None:
    runner = ScriptedRunner.from_recording(DATA / "qemu-nvme-512" / "recording-noop",
                                           scratch=tmp_path)
    host = Host(runner, FakeFS())
    target = qemu_target("qemu-nvme-512")
    markers = write_markers(host, target, 4, nonce=NONCE, scratch=tmp_path)
    with pytest.raises(VerificationFailed, match="4 of 4"):
        check_markers(host, target, markers)
