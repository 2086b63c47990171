"""Clear by overwrite (#44): the method choice and fallback, the pass over a regular file
(O_DIRECT on ext4/tmpfs), bad blocks, the sampled verification, the params, the record."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from ssdbench.erase import (
    OVERWRITE,
    AtaSecurityState,
    EraseOptions,
    EraseTarget,
    NoEraseMethod,
    choose_method,
)
from ssdbench.erase import overwrite as ow
from ssdbench.erase.model import EraseError
from ssdbench.record.build import build_record
from ssdbench.stages.params import ParamError, RunParams
from ssdbench.stages.secure_erase import EraseHook, serves

MIB = 2**20
SEED = bytes(range(16))


def sata(frozen: bool = True, locked: bool = False, transport: str = "sata") -> EraseTarget:
    return EraseTarget(
        path="/dev/sdz", name="sdz", transport=transport, serial="S1", model="M",
        size_bytes=64 * MIB, logical_block_size=512,
        ata=AtaSecurityState(supported=True, enabled=locked, locked=locked, frozen=frozen,
                             expired=False, enhanced_supported=True))


def test_every_sector_of_the_random_pattern_is_distinct_and_incompressible() -> None:
    """The key block repeats every 8 MiB; the sector stamp keeps each 512-byte sector apart
    (a deduplicating drive cannot shortcut the pass), across the block's seam too."""
    import zlib

    p = ow.Pattern.new("random", SEED)
    span = 2 * ow.CHUNK_BYTES + 64 * 1024  # over two seams of the repeated block
    data = p.expected(0, span)
    sectors = [data[i:i + 512] for i in range(0, span, 512)]
    assert len(set(sectors)) == len(sectors)
    assert data[ow.CHUNK_BYTES + 8:ow.CHUNK_BYTES + 512] == data[8:512]  # the block repeats
    assert len(zlib.compress(data[:MIB], 6)) > 0.99 * MIB
    # any sector-aligned window equals the same bytes of the whole, across the seam
    at = ow.CHUNK_BYTES - 3 * 512
    assert p.expected(at, 8 * 512) == data[at:at + 8 * 512]
    with pytest.raises(EraseError, match="not whole sectors"):
        p.expected(100, 512)


def test_the_pass_restamps_each_write_as_the_whole_pattern_says(tmp_path: Path) -> None:
    path = tmp_path / "disk"
    size = 2 * ow.CHUNK_BYTES + 5 * 4096  # the last write cut short
    path.write_bytes(bytes(size))
    pattern = ow.Pattern.new("random", SEED)
    ow.overwrite_pass(ow.Device(str(path)), size, 512, pattern)
    assert path.read_bytes() == pattern.expected(0, size)


def test_a_frozen_sata_drive_falls_back_to_the_overwrite_when_the_plan_allows_it() -> None:
    with pytest.raises(NoEraseMethod, match="overwrite"):  # the advice names it
        choose_method(sata())
    assert choose_method(sata(), options=EraseOptions(erase_fallback="overwrite")) == OVERWRITE
    # not frozen: the firmware erase stays first
    assert choose_method(sata(frozen=False), options=EraseOptions(
        erase_fallback="overwrite")) == "ata-security-erase-enhanced"


@pytest.mark.parametrize("transport", ["usb", "loop", "virtio", "sas"])
def test_drives_without_a_firmware_erase_fall_back_to_the_overwrite(transport: str) -> None:
    target = sata(frozen=False, transport=transport)
    assert choose_method(target, options=EraseOptions(erase_fallback="overwrite")) == OVERWRITE
    assert choose_method(target, OVERWRITE) == OVERWRITE  # chosen by name: any drive


def test_a_locked_drive_is_not_overwritten() -> None:
    with pytest.raises(NoEraseMethod, match="locked"):
        choose_method(sata(locked=True), OVERWRITE)
    sed = EraseTarget(path="/dev/sdy", name="sdy", transport="sata", serial="S", model="",
                      size_bytes=MIB, logical_block_size=512, sed_lock="locked range")
    with pytest.raises(NoEraseMethod, match="locked"):
        choose_method(sed, options=EraseOptions(erase_fallback="overwrite"))


def test_the_random_pattern_is_addressable_and_depends_on_the_seed() -> None:
    p = ow.Pattern.new("random", SEED)
    whole = p.expected(0, 3 * MIB)
    assert p.expected(MIB + 4096, 4096) == whole[MIB + 4096:MIB + 8192]
    buf = bytearray(MIB + 16)
    p.fill(2 * MIB, buf, MIB)
    assert bytes(buf[:MIB]) == whole[2 * MIB:]
    assert ow.Pattern.new("random", bytes(16)).expected(0, 4096) != whole[:4096]
    assert whole[:4096] != whole[4096:8192] and whole.count(0) < len(whole) // 100
    assert ow.Pattern.new("zero").expected(512, 4096) == bytes(4096)
    with pytest.raises(EraseError):
        ow.Pattern("random", b"short")
    with pytest.raises(EraseError):
        ow.Pattern.new("ones")


def test_the_sample_covers_every_subsection_first_and_last() -> None:
    size = 1000 * MIB + 512  # an odd tail: the last unit is short
    units = 1001
    offsets = ow.sample_units(size, MIB, 10.0, 64, seed=7)
    assert offsets[0] == 0 and offsets[-1] == 1000 * MIB
    assert 101 <= len(offsets) <= 101 + 64 // 2 + 2
    parts = {max(s for s in range(64) if s * units // 64 <= o // MIB) for o in offsets}
    assert parts == set(range(64))
    assert offsets == ow.sample_units(size, MIB, 10.0, 64, seed=7)  # the seed replays it
    # 1% of a small drive is 1%, not one unit in each of 64 parts
    one = ow.sample_units(size, MIB, 1.0, 64, seed=7)
    assert one[0] == 0 and one[-1] == 1000 * MIB and 11 <= len(one) <= 13
    assert len({max(s for s in range(11) if s * units // 11 <= o // MIB) for o in one}) == 11
    assert len(ow.sample_units(size, MIB, 100, 64, seed=1)) == units
    few = ow.sample_units(10 * MIB, MIB, 10.0, 64, seed=3)
    assert few[0] == 0 and few[-1] == 9 * MIB and len(set(few)) == len(few)


def image(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "disk.img"
    path.write_bytes(b"\xa5" * size)
    return path


def test_a_pass_writes_every_byte_and_the_check_passes(tmp_path: Path) -> None:
    size = 20 * MIB + 7 * 512  # not a whole chunk: the last region is cut to the size
    path = image(tmp_path, size)
    pattern = ow.Pattern.new("random", SEED)
    seen: list[tuple[int, int]] = []
    result = ow.overwrite_pass(ow.Device(str(path)), size, 512, pattern,
                               progress=lambda d, t, m, e: seen.append((d, t)))
    assert result.bytes_written == size and result.bad_count == 0
    assert path.read_bytes() == pattern.expected(0, size)
    assert seen[-1] == (size, size)
    check = ow.verify_sample(ow.Device(str(path)), size, 512, pattern, 100.0)
    assert check.passed and check.bytes_checked == size and check.units_checked == 21


def test_changed_blocks_after_the_pass_fail_the_check(tmp_path: Path) -> None:
    size = 16 * MIB
    path = image(tmp_path, size)
    pattern = ow.Pattern.new("random", SEED)
    ow.overwrite_pass(ow.Device(str(path)), size, 512, pattern)
    with open(path, "r+b") as f:  # the old content back in three blocks: first, middle, last
        for off in (4096, 8 * MIB + 512, size - 512):
            f.seek(off)
            f.write(b"\xa5" * 512)
    full = ow.verify_sample(ow.Device(str(path)), size, 512, pattern, 100.0)
    assert not full.passed and full.mismatch_count == 3
    assert full.mismatches == (4096, 8 * MIB + 512, size - 512)
    # 1% in 4 parts: the first and the last unit are always read
    sampled = ow.verify_sample(ow.Device(str(path)), size, 512, pattern, 1.0, seed=11,
                               subsections=4)
    assert not sampled.passed and sampled.units_checked < 8
    assert {4096, size - 512} <= set(sampled.mismatches)


def test_bad_blocks_are_skipped_counted_and_recorded(tmp_path: Path) -> None:
    size = 16 * MIB
    path = image(tmp_path, size)
    bad = {5 * MIB, 5 * MIB + 512, 12 * MIB + 4096}

    def pwrite(fd: int, data: Any, offset: int) -> int:
        if any(offset <= b < offset + len(data) for b in bad):
            raise OSError(5, "Input/output error")
        return os.pwrite(fd, data, offset)

    pattern = ow.Pattern.new("random", SEED)
    dev = ow.Device(str(path), pwrite=pwrite)
    result = ow.overwrite_pass(dev, size, 512, pattern)
    assert result.bad_count == 3 and result.bytes_written == size - 3 * 512
    assert [b.offset for b in result.bad_blocks] == sorted(bad)
    assert all(b.readable for b in result.bad_blocks)  # a file: the old bytes still read
    data = path.read_bytes()
    for b in bad:
        assert data[b:b + 512] == b"\xa5" * 512
    assert data[5 * MIB + 1024:6 * MIB] == pattern.expected(5 * MIB + 1024, MIB - 1024)
    check = ow.verify_sample(dev, size, 512, pattern, 100.0,
                             bad_offsets=frozenset(b.offset for b in result.bad_blocks))
    assert check.passed and check.skipped_bad == 2
    rec = ow.record(pattern, result, check)
    assert rec["bad_blocks"] == 3 and rec["bad_block_list"][0]["still_reads"] is True


def test_a_device_whose_size_changed_is_not_overwritten(tmp_path: Path) -> None:
    path = image(tmp_path, 4 * MIB)
    with pytest.raises(EraseError, match="discovery said"):
        ow.overwrite_pass(ow.Device(str(path)), 8 * MIB, 512, ow.Pattern.new("zero"))
    with pytest.raises(EraseError, match="logical block size"):
        ow.overwrite_pass(ow.Device(str(path)), 4 * MIB, 520, ow.Pattern.new("zero"))
    assert path.read_bytes() == b"\xa5" * 4 * MIB


def test_the_params_take_the_fallback_and_the_verify_percent() -> None:
    params = RunParams().with_values({"erase_fallback": "overwrite",
                                      "overwrite_verify_percent": "100"}, source="plan")
    assert params.erase_fallback == "overwrite" and params.overwrite_verify_percent == 100.0
    assert RunParams().overwrite_verify_percent == 1.0
    for bad in ("0", "101", "nan", "x"):
        with pytest.raises(ParamError, match="overwrite_verify_percent"):
            RunParams().with_values({"overwrite_verify_percent": bad}, source="plan")
    with pytest.raises(ParamError, match="overwrite"):
        RunParams().with_values({"erase_fallback": "wipe"}, source="plan")
    assert RunParams().overwrite_pattern == "random"
    assert RunParams().with_values({"overwrite_pattern": "zero"},
                                   source="plan").overwrite_pattern == "zero"
    with pytest.raises(ParamError, match="random or zero"):
        RunParams().with_values({"overwrite_pattern": "ones"}, source="plan")


def test_a_fallback_only_hook_serves_only_a_plan_that_allows_the_overwrite() -> None:
    hook = EraseHook(lambda ctx: {}, fallback_only=True)
    ctx: Any = SimpleNamespace(params=SimpleNamespace(erase_fallback="discard"))
    assert not serves(hook, ctx) and not serves(None, ctx)
    ctx.params.erase_fallback = "overwrite"
    assert serves(hook, ctx)
    ctx.params.erase_fallback = "fail"
    assert serves(EraseHook(lambda c: {}), ctx)


def _erase(bad: list[dict[str, Any]] | None = None, passed: bool = True) -> dict[str, Any]:
    return {"method": "overwrite", "secure": True, "verified": passed, "duration_s": 3.0,
            "detail": "overwrite in 3.0 s", "steps": ["method overwrite"],
            "overwrite": {"passes": 1, "pattern": "random", "pattern_detail": "AES",
                          "seed": SEED.hex(), "bytes": 64 * MIB, "bytes_written": 64 * MIB,
                          "seconds": 1.0, "mb_s": 67.1, "bad_blocks": len(bad or []),
                          "bad_block_list": bad or [],
                          "verification": {"percent": 1.0, "unit_bytes": MIB,
                                           "subsections": 64, "units_checked": 64,
                                           "bytes_checked": 64 * MIB, "seconds": 0.1,
                                           "sample_seed": 5, "mismatches": 0 if passed else 2,
                                           "mismatch_offsets": [] if passed else [0, 512],
                                           "unreadable_offsets": [], "skipped_bad": 0,
                                           "passed": passed}}}


def _record(erase: dict[str, Any], **drive: Any) -> dict[str, Any]:
    return build_record(drive={"model": "M", "serial": "S", "transport": "usb",
                               "size_bytes": 64 * MIB, **drive},
                        erase=erase, error=None, hidden={}, tools={}, people={},
                        health_before=None, health_after=None, started="", finished="",
                        duration_s=3.0)


def test_the_record_says_clear_and_what_nist_says_of_an_overwrite_on_flash() -> None:
    rec = _record(_erase())
    san = rec["sanitization"]
    assert san["category"] == "Clear" and san["method"] == "overwrite"
    assert "Clear at best" in san["note"] and "spare area" in san["note"]
    assert san["overwrite"]["pattern"] == "random" and san["overwrite"]["seed"] == SEED.hex()
    assert rec["result"]["status"] == "PASS", rec["result"]
    assert "Clear by one overwrite pass" in rec["result"]["reason"]
    assert rec["verification"]["percent"] == 1.0 and rec["verification"]["sampled"] == 64
    disk = _record(_erase(), rotational=True)["sanitization"]
    assert disk["category"] == "Clear" and "hard disk" in disk["note"]


def test_the_record_fails_a_mismatch_and_a_bad_block_that_still_reads() -> None:
    rec = _record(_erase(passed=False))
    assert rec["result"]["status"] == "FAIL"
    assert rec["verification"]["mismatch_offsets"] == [0, 512]
    bad = [{"offset": 4096, "error": "EIO", "still_reads": True}]
    rec = _record(_erase(bad))
    assert rec["result"]["status"] == "FAIL" and "still read" in rec["result"]["reason"]
    assert any("bad blocks" in w for w in rec["warnings"])
    gone = [{"offset": 4096, "error": "EIO", "still_reads": False}]
    rec = _record(_erase(gone))
    assert rec["result"]["status"] == "PASS" and any("bad blocks" in w for w in rec["warnings"])


def test_the_stage_hook_takes_the_fallback_pattern_and_percent_from_the_plan(
        tmp_path: Path) -> None:
    from ssdbench.erase import MemoryPasswordJournal, stage_hook
    from ssdbench.system import Host, LiveFS, SystemRunner

    path = image(tmp_path, 8 * MIB)
    target = EraseTarget(path=str(path), name="usb9", transport="usb", serial="U9",
                         model="", size_bytes=8 * MIB, logical_block_size=512)
    hook = stage_hook(target, journal=MemoryPasswordJournal())
    params = RunParams().with_values({"erase_fallback": "overwrite", "overwrite_pattern": "zero",
                                      "overwrite_verify_percent": "100"}, source="plan")
    events: list[Any] = []
    ctx = SimpleNamespace(host=Host(SystemRunner(), LiveFS()), run_name="erase",
                          params=params, progress=events.append)
    rec = hook(ctx)
    assert [e.stage for e in events] == ["erase"] * len(events)
    assert any(e.eta_s == 0.0 and e.fraction and e.fraction > 0.9 for e in events), events
    assert events[-1].state == "done" and events[-1].fraction == 1.0
    assert rec["method"] == OVERWRITE and rec["verified"] is True and rec["secure"] is True
    over = rec["overwrite"]
    assert over["pattern"] == "zero" and over["seed"] is None
    assert over["verification"]["percent"] == 100 and over["verification"]["bytes_checked"] == (
        8 * MIB)
    assert path.read_bytes() == bytes(8 * MIB)
    assert any("USB bridge" in s for s in rec["steps"])
    ctx.cancel = threading.Event()  # the run was cancelled: no write
    ctx.cancel.set()
    path.write_bytes(b"\xa5" * 8 * MIB)
    with pytest.raises(EraseError, match="cancelled"):
        hook(ctx)
    assert path.read_bytes() == b"\xa5" * 8 * MIB
    ctx.params = RunParams()  # fail: the plan does not allow it, nothing is written
    path.write_bytes(b"\xa5" * 8 * MIB)
    with pytest.raises(NoEraseMethod, match="overwrite"):
        hook(ctx)
    assert path.read_bytes() == b"\xa5" * 8 * MIB


@pytest.mark.parametrize("chunk", [ow.CHUNK_BYTES, 4 * MIB, 3 * MIB])
def test_the_pipelined_pass_writes_the_plain_stream_from_bounded_buffers(
        tmp_path: Path, chunk: int) -> None:
    """The writer thread writes buffers the calling thread restamped ahead of it: each write
    holds exactly the plain pattern of its region (computed alone, ``expected``), no buffer
    changes while it is being written, and the pass never holds more than BUFFERS buffers.
    A chunk that is not the key block's size refills (the buffers' rotation then differs)."""
    size = 4 * ow.CHUNK_BYTES + 3 * 512
    path = image(tmp_path, size)
    pattern = ow.Pattern.new("random", SEED)
    writes: list[tuple[int, bytes]] = []
    changed: list[int] = []
    buffers: set[int] = set()

    def pwrite(fd: int, data: Any, offset: int) -> int:
        before = bytes(data)
        time.sleep(0.002)  # let the calling thread run: it must not touch this buffer
        if bytes(data) != before:
            changed.append(offset)
        buffers.add(id(data.obj))
        writes.append((offset, before))
        return os.pwrite(fd, data, offset)

    result = ow.overwrite_pass(ow.Device(str(path), pwrite=pwrite), size, 512, pattern,
                               chunk=chunk)
    assert result.bytes_written == size and not changed
    assert [o for o, _ in writes] == list(range(0, size, chunk))  # in order, back to back
    for offset, data in writes:
        assert data == pattern.expected(offset, len(data)), offset
    assert len(buffers) <= ow.BUFFERS
    assert path.read_bytes() == pattern.expected(0, size)


def test_a_failing_drive_stops_the_pipelined_pass_with_its_error(tmp_path: Path) -> None:
    """The writer thread's error (too many bad blocks) is the pass's, raised in the calling
    thread; no writer thread is left behind, and a cancel stops the writes it has queued."""
    size = 16 * MIB
    path = image(tmp_path, size)

    def broken(fd: int, data: Any, offset: int) -> int:
        raise OSError(5, "Input/output error")

    with pytest.raises(EraseError, match="the drive is failing"):
        ow.overwrite_pass(ow.Device(str(path), pwrite=broken), size, 512,
                          ow.Pattern.new("random", SEED))
    cancel = threading.Event()
    offsets: list[int] = []

    def cancel_at_the_second(fd: int, data: Any, offset: int) -> int:
        offsets.append(offset)
        if len(offsets) == 2:
            cancel.set()
        return os.pwrite(fd, data, offset)

    with pytest.raises(EraseError, match="cancelled"):
        ow.overwrite_pass(ow.Device(str(path), pwrite=cancel_at_the_second), size, 512,
                          ow.Pattern.new("random", SEED), cancel=cancel, chunk=MIB)
    assert 2 <= len(offsets) <= 2 + ow.BUFFERS
    assert not [t for t in threading.enumerate() if t.name == "overwrite-writer"]


def test_the_pass_writes_the_documented_stream_computed_independently(tmp_path: Path) -> None:
    """The stream from its definition alone (docs/erase.md "The pattern"): the AES-128-CTR
    key stream of the seed (counter block 0), repeated every 8 MiB, each 512-byte sector's
    first 8 bytes XORed with its sector number (little-endian). The pass's stamps (one XOR
    of precomputed words per block-aligned write) and ``expected`` (any window) agree."""
    from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

    key_stream = Cipher(algorithms.AES(SEED), modes.CTR(bytes(16))).encryptor().update(
        bytes(ow.CHUNK_BYTES))
    size = 3 * ow.CHUNK_BYTES + 5 * 512
    path = image(tmp_path, size)
    pattern = ow.Pattern.new("random", SEED)
    ow.overwrite_pass(ow.Device(str(path)), size, 512, pattern)
    data = path.read_bytes()
    per_block = ow.CHUNK_BYTES // 512
    for sector in (0, 1, 7, per_block - 1, per_block, per_block + 3, 2 * per_block + 4095,
                   3 * per_block + 4):
        at = (sector % per_block) * 512
        word = int.from_bytes(key_stream[at:at + 8], "little") ^ sector
        want = word.to_bytes(8, "little") + key_stream[at + 8:at + 512]
        assert data[sector * 512:sector * 512 + 512] == want, sector
        assert pattern.expected(sector * 512, 512) == want, sector
