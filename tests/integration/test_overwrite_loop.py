"""Clear by overwrite on loop devices (root, #44): the erase plan end to end with
``--erase-fallback overwrite`` (a PASS record that says Clear, signed, with its certificate),
odd sizes and 4Kn, a verification that catches blocks changed after the pass, and the
fallback of a frozen SATA drive.

The frozen drive is faked at the erase adapter (``target_from_drive`` of a drive whose
``ata_security`` says frozen, at a loop device's path): the QEMU test of the emulated ATA
drive (test_ata_emu_qemu.py) freezes a drive that offers SANITIZE, so its fallback is
sanitize, not the overwrite; a drive without either would need a second emulator boot."""

from __future__ import annotations

import json
import mmap
import os
from collections.abc import Iterator
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from ssdbench.cli import main
from ssdbench.erase import (
    OVERWRITE,
    EraseOptions,
    MemoryPasswordJournal,
    VerificationFailed,
    erase_drive,
    target_from_drive,
)
from ssdbench.erase import overwrite as ow
from ssdbench.exitcodes import ExitCode
from ssdbench.system import Host, LiveFS, SystemRunner
from tests.conftest import MIB, idema_scaled, loop_device

SEED = bytes(range(100, 116))


@pytest.fixture
def loop() -> Iterator[tuple[str, Path]]:
    with loop_device(24, fill=0xA5, prefix="ssdbench-overwrite-") as found:
        yield found


def _drive(dev: str, size: int, block: int = 512, **extra: object) -> dict[str, object]:
    return {"path": dev, "name": os.path.basename(dev), "transport": "loop", "serial": "",
            "model": "", "size_bytes": size, "logical_block_size": block, **extra}


def test_the_erase_plan_clears_a_loop_device_by_overwrite_and_records_it(
        loop: tuple[str, Path], tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    dev, backing = loop
    key = tmp_path / "lab-key.pem"
    key.write_bytes(Ed25519PrivateKey.generate().private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
        serialization.NoEncryption()))
    results = tmp_path / "results"
    code = main(["run", dev, "--plan", "erase", "--destroy", os.path.basename(dev),
                 "--erase-fallback", "overwrite", "--quiet", "--results", str(results),
                 "--set", "operator=A. Tester", "--set", "overwrite_verify_percent=5",
                 "--set", f"record_key={key}"])
    assert code == ExitCode.OK, capsys.readouterr().err
    [path] = list(results.rglob("erase-record.json"))
    record = json.loads(path.read_text())
    san = record["sanitization"]
    assert record["result"]["status"] == "PASS", record["result"]
    assert san["category"] == "Clear" and san["method"] == OVERWRITE
    assert "virtual disk" in san["note"]
    over = san["overwrite"]
    assert over["passes"] == 1 and over["pattern"] == "random" and over["bad_blocks"] == 0
    assert over["bytes_written"] == over["bytes"] == 24 * MIB
    ver = record["verification"]
    assert ver["result"] == "passed" and ver["percent"] == 5.0 and ver["sampled"] >= 2
    # every byte of the drive holds the key stream of the recorded seed
    pattern = ow.Pattern.new("random", bytes.fromhex(over["seed"]))
    assert backing.read_bytes() == pattern.expected(0, 24 * MIB)
    html = (path.parent / "erase-certificate.html").read_text()
    assert "Clear" in html and "Pattern seed" in html and over["seed"] in html
    assert (path.parent / "erase-certificate.pdf").read_bytes()[:5] == b"%PDF-"
    run = json.loads((path.parent / "run.json").read_text())
    assert run["erase"]["method"] == OVERWRITE and run["erase"]["verified"] is True
    capsys.readouterr()
    assert main(["verify-record", str(path), "--key", str(key)]) == ExitCode.OK


def test_without_the_fallback_a_loop_device_still_fails_untouched(
        loop: tuple[str, Path], tmp_path: Path) -> None:
    dev, backing = loop
    code = main(["run", dev, "--plan", "erase", "--destroy", os.path.basename(dev),
                 "--quiet", "--results", str(tmp_path / "r"), "--set", "record_pdf=false"])
    assert code == ExitCode.FAILURE
    assert backing.read_bytes() == b"\xa5" * 24 * MIB


def test_a_frozen_sata_drive_falls_back_to_the_overwrite(loop: tuple[str, Path]) -> None:
    dev, backing = loop
    frozen = {"supported": True, "enabled": False, "locked": False, "frozen": True,
              "expired": False, "enhanced_supported": True}
    target = target_from_drive(_drive(dev, 24 * MIB, transport="sata", serial="FROZEN1",
                                      ata_security=frozen,
                                      erase_methods=["ata-security-erase"]))
    host = Host(SystemRunner(), LiveFS())
    rec = erase_drive(host, target, journal=MemoryPasswordJournal(), options=EraseOptions(
        erase_fallback="overwrite", overwrite_seed=SEED, overwrite_verify_percent=100))
    assert rec.method == OVERWRITE and rec.verified is True
    assert any("frozen" in s for s in rec.steps), rec.steps
    assert rec.overwrite is not None and rec.overwrite["verification"]["bytes_checked"] == (
        24 * MIB)
    assert backing.read_bytes() == ow.Pattern.new("random", SEED).expected(0, 24 * MIB)


@pytest.mark.parametrize(("size", "block"), [
    (idema_scaled(468862128, 17), 512),  # a 240 GB drive's odd tail, scaled
    (17 * MIB + 3 * 4096, 4096),  # 4Kn, not a whole chunk
])
def test_odd_sizes_and_4kn_are_overwritten_to_the_last_byte(size: int, block: int) -> None:
    with loop_device(size_bytes=size, sector_size=block, fill=0xA5,
                     prefix="ssdbench-overwrite-odd-") as (dev, backing):
        pattern = ow.Pattern.new("random", SEED)
        result = ow.overwrite_pass(ow.Device(dev), size, block, pattern)
        assert result.bytes_written == size and result.bad_count == 0
        assert backing.read_bytes() == pattern.expected(0, size)
        check = ow.verify_sample(ow.Device(dev), size, block, pattern, 100.0)
        assert check.passed and check.bytes_checked == size


def test_blocks_changed_after_the_pass_fail_the_erase(
        loop: tuple[str, Path], monkeypatch: pytest.MonkeyPatch) -> None:
    dev, _backing = loop
    target = target_from_drive(_drive(dev, 24 * MIB))
    host = Host(SystemRunner(), LiveFS())
    pattern = ow.Pattern.new("random", SEED)
    ow.overwrite_pass(ow.Device(dev), 24 * MIB, 512, pattern)
    assert ow.verify_sample(ow.Device(dev), 24 * MIB, 512, pattern, 1.0).passed
    # through the device (O_DIRECT, no page cache): old bytes back in the first and last block
    buf = mmap.mmap(-1, 4096)
    buf.write(b"\xa5" * 4096)
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        os.pwrite(fd, buf, 0)
        os.pwrite(fd, buf, 24 * MIB - 4096)
    finally:
        os.close(fd)
        buf.close()
    check = ow.verify_sample(ow.Device(dev), 24 * MIB, 512, pattern, 1.0)
    assert not check.passed and check.mismatch_count == 16
    # and an erase whose pass is followed by such a change fails: the seam is the read-back
    real_pass = ow.overwrite_pass

    def pass_then_tamper(*args: object, **kwargs: object) -> ow.PassResult:
        result = real_pass(*args, **kwargs)  # type: ignore[arg-type]
        with open(dev, "r+b", buffering=0) as f:
            f.seek(12 * MIB)
            f.write(b"\xa5" * MIB)
            os.fsync(f.fileno())
        return result

    monkeypatch.setattr(ow, "overwrite_pass", pass_then_tamper)
    with pytest.raises(VerificationFailed, match="did not stick"):
        erase_drive(host, target, method=OVERWRITE, journal=MemoryPasswordJournal(),
                    options=EraseOptions(overwrite_seed=SEED, overwrite_verify_percent=100))


def test_the_pipelined_pass_writes_the_plain_stream_to_a_block_device() -> None:
    """On a 4Kn loop device (O_DIRECT through the block layer): every write the writer
    thread makes holds the pattern of its region computed alone, in order, from at most
    BUFFERS buffers, and the device ends up holding the seed's whole stream."""
    size = 5 * ow.CHUNK_BYTES + 3 * 4096
    with loop_device(size_bytes=size, sector_size=4096, fill=0xA5,
                     prefix="ssdbench-overwrite-pipe-") as (dev, backing):
        pattern = ow.Pattern.new("random", SEED)
        offsets: list[int] = []
        wrong: list[int] = []
        buffers: set[int] = set()

        def pwrite(fd: int, data: memoryview, offset: int) -> int:
            offsets.append(offset)
            buffers.add(id(data.obj))
            if bytes(data) != pattern.expected(offset, len(data)):
                wrong.append(offset)
            return os.pwrite(fd, data, offset)

        result = ow.overwrite_pass(ow.Device(dev, pwrite=pwrite), size, 4096, pattern)
        assert result.bytes_written == size and not wrong
        assert offsets == list(range(0, size, ow.CHUNK_BYTES))
        assert len(buffers) <= ow.BUFFERS
        assert backing.read_bytes() == pattern.expected(0, size)
