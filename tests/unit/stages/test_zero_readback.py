"""TRIM zero read-back (SPEC step 6): after the whole-span discard, drives that promise zeros
(NVMe DLFEAT bits 2:0 == 1, ATA RZAT) get sampled 4 KiB blocks read back with O_DIRECT.

The drive identities are the real discovery output of a QEMU guest (NVMe with DLFEAT 1, an
AHCI disk without RZAT) from the qemu-nvme-ahci-usb bundle."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.results.layout import RunRecord
from ssdbench.stages.base import RunContext, StageFailed, Target
from ssdbench.stages.discard import TrimStage, sample_blocks, zero_promise
from ssdbench.stages.params import RunParams
from ssdbench.system import Host

BUNDLE = Path(__file__).parents[2] / "data" / "bundles" / "qemu-nvme-ahci-usb"
SPAN = 256 * 1024 * 1024
BLOCK = 4096


def _identity(name: str) -> dict[str, Any]:
    drives = json.loads((BUNDLE / "list-all.json").read_text())
    return next(d for d in drives if d["name"] == name)


def _diskstats(name: str, discards: int, sectors: int) -> str:
    # /proc/diskstats, kernel 6.1: 3 id fields, 11 I/O fields, 4 discard fields, 2 flush.
    return (f" 259       0 {name} 1200 0 96000 300 800 0 65536 900 0 1500 1200 "
            f"{discards} 0 {sectors} 40 0 0\n")


def _dd(path: str, blk: int) -> list[str]:
    return ["dd", f"if={path}", "bs=4096", f"skip={blk}", "count=1", "iflag=direct",
            "status=none"]


def _context(tmp_path: Path, identity: dict[str, Any], runner: ReplayRunner) -> RunContext:
    drive_dir = tmp_path / "drive"
    run_dir = drive_dir / "trim"
    run_dir.mkdir(parents=True)
    (drive_dir / "drive.json").write_text(json.dumps({"drive": identity, "erases": [],
                                                      "runs": []}))
    path, name = identity["path"], identity["name"]
    target = Target(path, "block", name, SPAN)
    runner.add(["blkdiscard", "--offset", "0", "--length", str(SPAN), path])
    fs = ReplayFS(FSRecord(files={"/proc/diskstats": _diskstats(name, 3, SPAN // 512)}))
    record = RunRecord.create(run_dir, run="trim", kind="trim", drive={"name": name},
                              target=target.record(0), params={}, tools={})
    ctx = RunContext(host=Host(runner, fs), run_dir=run_dir, drive_name=name,
                     run_name="trim", target=target, params=RunParams(trim_idle_seconds=0),
                     record=record)
    return ctx


def _stored(ctx: RunContext) -> dict[str, Any]:
    data: dict[str, Any] = json.loads(ctx.record.path.read_text())
    return data


def test_sampled_blocks_spread_over_the_whole_span() -> None:
    blocks = sample_blocks(SPAN)
    assert len(blocks) == 64 == len(set(blocks))
    assert blocks == sorted(blocks)
    assert blocks[0] < SPAN // BLOCK // 64 and blocks[-1] > SPAN // BLOCK * 63 // 64
    assert blocks[-1] < SPAN // BLOCK
    assert sample_blocks(10 * BLOCK) == list(range(10))  # tiny span: every block once


def test_promise_comes_from_the_drive_identity(tmp_path: Path) -> None:
    path = tmp_path / "drive.json"
    nvme, sata = _identity("nvme0n1"), _identity("sda")
    assert nvme["nvme"]["dlfeat"] == 1 and sata["rzat"] is False
    path.write_text(json.dumps({"drive": nvme}))
    assert zero_promise(path) == "dlfeat"
    path.write_text(json.dumps({"drive": sata}))
    assert zero_promise(path) is None
    path.write_text(json.dumps({"drive": {**sata, "rzat": True}}))
    assert zero_promise(path) == "rzat"
    # DLFEAT 2 (deallocated blocks read as 0xFF) promises no zeros, even if rzat was set
    path.write_text(json.dumps({"drive": {**nvme, "nvme": {**nvme["nvme"], "dlfeat": 2}}}))
    assert zero_promise(path) is None
    path.write_text("{not json")
    assert zero_promise(path) is None
    assert zero_promise(tmp_path / "missing.json") is None


def test_nvme_with_dlfeat_reads_back_64_zero_blocks(tmp_path: Path) -> None:
    runner = ReplayRunner()
    ctx = _context(tmp_path, _identity("nvme0n1"), runner)
    for blk in sample_blocks(SPAN):
        runner.add(_dd("/dev/nvme0n1", blk), stdout=bytes(BLOCK))
    TrimStage().execute(ctx)
    rb = _stored(ctx)["trim"]["zero_readback"]
    assert rb == {"checked": 64, "zero": 64, "promised": "dlfeat", "block_bytes": 4096,
                  "nonzero_offsets": []}
    dd_calls = [c for c in runner.calls if c[0] == "dd"]
    assert dd_calls == [tuple(_dd("/dev/nvme0n1", b)) for b in sample_blocks(SPAN)]


def test_stale_data_after_trim_is_counted_and_located(tmp_path: Path) -> None:
    runner = ReplayRunner()
    ctx = _context(tmp_path, {**_identity("sda"), "rzat": True}, runner)
    blocks = sample_blocks(SPAN)
    for i, blk in enumerate(blocks):
        data = bytes(BLOCK) if i % 16 else b"\x00" * 4000 + b"old data" + bytes(88)
        runner.add(_dd("/dev/sda", blk), stdout=data)
    TrimStage().execute(ctx)
    rb = _stored(ctx)["trim"]["zero_readback"]
    assert (rb["checked"], rb["zero"], rb["promised"]) == (64, 60, "rzat")
    assert rb["nonzero_offsets"] == [blocks[i] * BLOCK for i in (0, 16, 32, 48)]


def test_no_promise_no_readback(tmp_path: Path) -> None:
    runner = ReplayRunner()
    ctx = _context(tmp_path, _identity("sda"), runner)
    TrimStage().execute(ctx)
    trim = _stored(ctx)["trim"]
    assert trim["zero_readback"] is None and trim["method"] == "blkdiscard"
    assert not [c for c in runner.calls if c[0] == "dd"]


def test_unreadable_block_fails_the_stage_with_the_discard_recorded(tmp_path: Path) -> None:
    runner = ReplayRunner()
    ctx = _context(tmp_path, _identity("nvme0n1"), runner)
    blocks = sample_blocks(SPAN)
    runner.add(_dd("/dev/nvme0n1", blocks[0]), stdout=bytes(BLOCK))
    runner.add(_dd("/dev/nvme0n1", blocks[1]), returncode=1,
               stderr="dd: error reading '/dev/nvme0n1': Input/output error\n")
    with pytest.raises(StageFailed, match="zero read-back after TRIM failed"):
        TrimStage().execute(ctx)
    trim = _stored(ctx)["trim"]
    assert trim["method"] == "blkdiscard" and trim["zero_readback"] is None


def test_short_read_is_not_counted_as_zero(tmp_path: Path) -> None:
    runner = ReplayRunner()
    ctx = _context(tmp_path, _identity("nvme0n1"), runner)
    runner.add(_dd("/dev/nvme0n1", sample_blocks(SPAN)[0]), stdout=b"")
    with pytest.raises(StageFailed, match="returned 0 bytes"):
        TrimStage().execute(ctx)
