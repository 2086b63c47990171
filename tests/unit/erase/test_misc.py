"""Method choice for odd drives, the discard fallback, markers, journal, ticker, adapter."""

from __future__ import annotations

import json
import threading
from pathlib import Path
from types import SimpleNamespace

import pytest

from ssdbench.erase import (
    EraseOptions,
    EraseTarget,
    JsonPasswordJournal,
    MemoryPasswordJournal,
    NoEraseMethod,
    NvmeCaps,
    PasswordEntry,
    choose_method,
    erase_drive,
    stage_hook,
    target_from_drive,
)
from ssdbench.erase.model import EraseError
from ssdbench.erase.ticker import Reporter, Ticker
from ssdbench.erase.verify import plan_markers
from ssdbench.progress import Progress
from ssdbench.system import Host, Result

from .replay import FakeClock, FakeFS, ScriptedRunner


def loop_target(transport: str = "loop") -> EraseTarget:
    return EraseTarget(path="/dev/loop3", name="loop3", transport=transport, serial="loop3",
                       model="", size_bytes=64 * 2**20, logical_block_size=512)


@pytest.mark.parametrize("transport", ["loop", "virtio"])
def test_virtual_disks_have_no_secure_erase(transport: str) -> None:
    with pytest.raises(NoEraseMethod, match="virtual disk"):
        choose_method(loop_target(transport))
    assert choose_method(loop_target(transport), None,
                         EraseOptions(erase_fallback="discard")) == "discard"


def test_sas_path_is_refused() -> None:
    with pytest.raises(NoEraseMethod, match="SAS/RAID"):
        choose_method(loop_target("sas"))


def test_unknown_method_name() -> None:
    with pytest.raises(NoEraseMethod, match="unknown erase method"):
        choose_method(loop_target(), "shred")


def test_discard_fallback_is_recorded_as_not_secure() -> None:
    runner = ScriptedRunner()
    runner.add(["blkdiscard", "-f", "/dev/loop3"])
    record = erase_drive(
        Host(runner, FakeFS()), loop_target(), journal=MemoryPasswordJournal(),
        options=EraseOptions(erase_fallback="discard", clock=FakeClock()),
    )
    d = record.to_dict()
    assert (d["method"], d["secure"], d["verified"]) == ("discard", False, None)
    assert "NOT secure-erased" in d["detail"]
    assert runner.calls == [("blkdiscard", "-f", "/dev/loop3")]
    assert set(d) >= {"method", "secure", "verified", "duration_s", "detail"}
    json.dumps(d)


def test_marker_plan_first_last_and_spread() -> None:
    m = plan_markers(64 * 2**20, 512, "SER", 16, b"\x01" * 8)
    assert len(m.offsets) == 16 and m.block == 4096
    assert m.offsets[0] == 0 and m.offsets[-1] == 64 * 2**20 - 4096
    assert all(o % 4096 == 0 for o in m.offsets)
    assert m.offsets == tuple(sorted(set(m.offsets)))
    block = m.block_for(8192)
    assert len(block) == 4096 and block.startswith(b"SSDBENCH-MARKER serial=SER offset=8192")
    assert m.matches(8192, block) and not m.matches(8192, b"\0" * 4096)
    big = plan_markers(2**30, 16384, "S", 16, b"\x02" * 8)
    assert big.block == 16384 and all(o % 16384 == 0 for o in big.offsets)
    tiny = plan_markers(3 * 4096, 512, "S", 16, b"\x03" * 8)
    assert tiny.offsets == (0, 4096, 8192)
    with pytest.raises(EraseError, match="too small"):
        plan_markers(4096, 512, "S", 16, b"\x03" * 8)


def test_marker_that_does_not_read_back_stops_before_the_erase(tmp_path: Path) -> None:
    runner = ScriptedRunner(scratch=tmp_path)
    target = EraseTarget(path="/dev/nvme0n1", name="nvme0n1", transport="nvme", serial="S",
                         model="", size_bytes=2 * 4096, logical_block_size=512,
                         nvme=NvmeCaps(oacs=0x2, fna=0, sanicap=0))
    for off in (0, 4096):
        runner.add(["dd", "if={SCRATCH}/markers.bin", "of=/dev/nvme0n1", "bs=4096", "count=1",
                    f"skip={off}", f"seek={off}", "iflag=skip_bytes",
                    "oflag=direct,seek_bytes", "conv=notrunc,nocreat,fsync", "status=none"])
    runner.add(["dd", "if=/dev/nvme0n1", "bs=4096", "count=1", "skip=0",
                "iflag=direct,skip_bytes", "status=none"], b"\0" * 4096)
    with pytest.raises(EraseError, match="did not read back"):
        erase_drive(Host(runner, FakeFS()), target, method="nvme-format-user-data",
                    journal=MemoryPasswordJournal(),
                    options=EraseOptions(nonce=b"\0" * 8, clock=FakeClock()),
                    scratch=tmp_path)
    assert not any(c[:2] == ("nvme", "format") for c in runner.calls)


def test_json_journal_is_durable_and_keeps_other_keys(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text(json.dumps({"runs": [1, 2]}))
    j = JsonPasswordJournal(path)
    j.record_password(PasswordEntry("SER1", "pw1"))
    j.record_password(PasswordEntry("SER2", "pw2"))
    again = JsonPasswordJournal(path)  # a new process after a crash
    assert again.entries() == [PasswordEntry("SER1", "pw1"), PasswordEntry("SER2", "pw2")]
    again.clear_password(PasswordEntry("SER1", "pw1"))
    data = json.loads(path.read_text())
    assert data == {"runs": [1, 2], "ata_passwords": {"SER2": "pw2"}}
    assert [p.name for p in tmp_path.iterdir()] == ["state.json"]  # no temp files left


def test_json_journal_refuses_to_overwrite_a_broken_file(tmp_path: Path) -> None:
    path = tmp_path / "state.json"
    path.write_text("{broken")
    with pytest.raises(ValueError, match="not valid JSON"):
        JsonPasswordJournal(path).record_password(PasswordEntry("S", "p"))
    assert path.read_text() == "{broken"


def test_ticker_estimates_from_elapsed_vs_expected() -> None:
    events: list[Progress] = []
    reporter = Reporter(events.append, "sda", "run", FakeClock())
    t = Ticker(reporter, "erase", 600.0)
    assert t.estimate(150.0) == (0.25, 450.0)
    assert t.estimate(1200.0) == (0.99, 0.0)  # never claims done on its own
    assert Ticker(reporter, "erase", None).estimate(10.0) == (None, None)


def test_ticker_ticks_while_a_command_blocks() -> None:
    events: list[Progress] = []
    reporter = Reporter(events.append, "sda", "run", FakeClock())
    enough = threading.Event()

    def collect(e: Progress) -> None:
        events.append(e)
        if len(events) >= 3:
            enough.set()

    reporter = Reporter(collect, "sda", "run", FakeClock())
    with Ticker(reporter, "ATA security erase", 3600.0, interval_s=0.01):
        assert enough.wait(timeout=10.0), "the ticker did not tick while the command blocked"
    assert all(e.stage == "erase" and e.state == "running" for e in events)
    assert all(e.fraction is not None and 0 <= e.fraction < 0.01 for e in events)


def test_progress_callback_errors_do_not_break_the_erase() -> None:
    def broken(_e: Progress) -> None:
        raise RuntimeError("front end bug")

    runner = ScriptedRunner()
    runner.add(["blkdiscard", "-f", "/dev/loop3"])
    record = erase_drive(Host(runner, FakeFS()), loop_target(), journal=MemoryPasswordJournal(),
                         progress=broken, options=EraseOptions(erase_fallback="discard"))
    assert record.method == "discard"


def test_adapter_from_drive_json_and_object() -> None:
    as_json = {
        "path": "/dev/nvme0n1", "name": "nvme0n1", "transport": "nvme",
        "model": "SAMSUNG MZWLJ7T6HALA-00AU3", "serial": "S5RTNC0T104269",
        "size_bytes": 1024000, "logical_block_size": 512,
        "erase_methods": ["nvme-sanitize-block"], "ata_security": None,
        "nvme": {"oacs": 0x5F, "fna": 4, "sanicap": 3, "oncs": 0x7F, "dlfeat": 1,
                 "controller": "nvme0", "nsid": 1, "namespaces": []},
        "consent_id": "S5RTNC0T104269",
    }
    t = target_from_drive(as_json)
    assert t.nvme is not None and t.nvme.sanitize_block and t.controller_path == "/dev/nvme0"
    assert choose_method(t) == "nvme-sanitize-block"
    ata = SimpleNamespace(supported=True, enabled=False, locked=False, frozen=True,
                          expired=False, enhanced_supported=True, erase_minutes=2,
                          enhanced_erase_minutes=2, level=None)
    drive = SimpleNamespace(path="/dev/sda", name="sda", transport="sata", model="Crucial",
                            serial="14330CEF1CD1", consent_id="14330CEF1CD1",
                            size_bytes=512110190592, logical_block_size=512,
                            erase_methods=("ata-security-erase", "ata-sanitize-block"),
                            ata_security=ata, nvme=None)
    t2 = target_from_drive(drive)
    assert t2.ata is not None and t2.ata.frozen and t2.ata.sanitize_block
    assert choose_method(t2) == "ata-sanitize-block"
    assert choose_method(t2, None, EraseOptions(allow_suspend=True)) == (
        "ata-security-erase-enhanced")


def test_result_type_is_the_system_one() -> None:
    r = ScriptedRunner().add(["true"]).run(["true"])
    assert isinstance(r, Result)


def test_stage_hook_returns_the_run_json_erase_record() -> None:
    runner = ScriptedRunner()
    runner.add(["blkdiscard", "-f", "/dev/loop3"])
    events: list[Progress] = []
    ctx = SimpleNamespace(host=Host(runner, FakeFS()), progress=events.append,
                          run_name="consistency-default")
    hook = stage_hook(loop_target(), journal=MemoryPasswordJournal(),
                      options=EraseOptions(erase_fallback="discard"))
    erase = hook(ctx)
    assert erase["method"] == "discard" and erase["secure"] is False
    assert events and all(e.run == "consistency-default" for e in events)


def test_a_marker_write_to_a_vanished_drive_creates_no_file(tmp_path: Path) -> None:
    """A drive pulled mid-erase: its /dev node is gone when the next marker is written. dd
    must fail, not create a regular file there: on devtmpfs that file would stand in for
    the next drive that gets the same kernel name (seen in station mode, QEMU
    device_del): every later open with O_DIRECT fails with EINVAL, and plain reads and
    writes would go to RAM instead of the drive."""
    from ssdbench.erase.verify import _dd_write
    from ssdbench.system import CommandError, SystemRunner, live_host

    src = tmp_path / "markers.bin"
    src.write_bytes(b"m" * 4096)
    gone = tmp_path / "nvme0n1"
    with pytest.raises(CommandError):
        _dd_write(Host(SystemRunner(), live_host().fs), src, 0, str(gone), offset=0,
                  block=4096)
    assert not gone.exists()
