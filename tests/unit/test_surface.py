"""The surface read scan (#44, stages/surface.py): every block read once and timed, MHDD's
bands, unreadable sectors mapped by LBA, regions for the chart. The reads go to a real file
with O_DIRECT; a reader that fails or stalls at chosen offsets stands in for a disk's bad and
slow sectors (tests/integration/test_surface_qemu.py has a real disk's)."""

from __future__ import annotations

import csv
import os
from pathlib import Path
from typing import Any

import pytest

from ssdbench.stages import surface as sf
from ssdbench.stages.base import StageCancelled, StageFailed

KIB = 1024
MIB = 1024 * KIB


def disk(tmp_path: Path, size: int) -> Path:
    path = tmp_path / "disk.img"
    path.write_bytes(os.urandom(size))
    return path


class Clock:
    """Time that passes only when a read says so (the bands by construction, not luck)."""

    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def reader(path: Path, clock: Clock, *, bad: set[int] = frozenset(),  # type: ignore[assignment]
           slow: dict[int, float] | None = None, ms: float = 1.0) -> sf.Reader:
    """Reads of ``path``: each takes ``ms`` (``slow``: block offset -> ms), and any read
    that covers a byte offset in ``bad`` (a sector's start) fails with EIO."""
    slow = slow or {}

    def preadv(fd: int, bufs: list[Any], offset: int) -> int:
        n = sum(len(b) for b in bufs)
        clock.now += slow.get(offset, ms) / 1000
        if any(offset <= b < offset + n for b in bad):
            raise OSError(5, "Input/output error")
        return os.preadv(fd, bufs, offset)

    return sf.Reader(str(path), preadv)


def test_a_clean_drive_reads_every_block_in_the_fastest_band(tmp_path: Path) -> None:
    size = 4 * MIB + 3 * 512  # an odd size: the last block is short
    clock = Clock()
    result = sf.scan(reader(disk(tmp_path, size), clock), size, 512, regions=8, clock=clock)
    assert result.verdict() == "clean" and result.unreadable_blocks == 0
    assert result.blocks == 33 and result.bands == (33, 0, 0, 0, 0, 0)
    assert sum(r.end - r.start for r in result.regions) == size
    assert [r.start for r in result.regions] == sorted({r.start for r in result.regions})
    assert result.summary() == "every block read, none slower than 500 ms"


def test_slow_reads_fall_in_mhdds_bands_and_the_region_that_holds_them(tmp_path: Path) -> None:
    size = 8 * MIB
    clock = Clock()
    block = sf.BLOCK_BYTES
    slow = {10 * block: 7.0, 20 * block: 30.0, 30 * block: 120.0, 40 * block: 300.0,
            50 * block: 800.0, 51 * block: 2500.0}
    result = sf.scan(reader(disk(tmp_path, size), clock, slow=slow), size, 512, regions=4,
                     clock=clock)
    assert result.bands == (58, 1, 1, 1, 1, 2)
    assert result.verdict() == "slow" and result.slow_blocks == 2
    region = result.regions[50 * block * 4 // size]
    assert region.max_ms == pytest.approx(2500.0) and region.bands[-1] == 2
    rec = sf.record(result)
    assert rec["slowest_region"]["index"] == region.index and rec["slow_blocks"] == 2
    assert rec["bands"] == dict(zip(sf.BAND_NAMES, (58, 1, 1, 1, 1, 2), strict=True))


def test_unreadable_sectors_are_mapped_by_lba_and_the_scan_goes_on(tmp_path: Path) -> None:
    size = 4 * MIB
    clock = Clock()
    bad = {3 * MIB + 4096, 3 * MIB + 4096 + 512, size - 512}  # three sectors, two blocks
    result = sf.scan(reader(disk(tmp_path, size), clock, bad=bad), size, 512, regions=4,
                     clock=clock)
    assert result.verdict() == "unreadable"
    assert result.unreadable_blocks == 2 and result.unreadable_sectors == 3
    assert [u.lba for u in result.unreadable] == sorted(b // 512 for b in bad)
    assert result.blocks == 32  # every block tried: the scan did not stop at the first
    assert result.regions[3].unreadable_blocks == 2
    assert "3 unreadable sectors in 2 blocks" in result.summary()


def test_a_4kn_drive_maps_its_4096_byte_sectors(tmp_path: Path) -> None:
    size = 2 * MIB
    clock = Clock()
    result = sf.scan(reader(disk(tmp_path, size), clock, bad={MIB + 8192}), size, 4096,
                     regions=2, clock=clock)
    assert [u.lba for u in result.unreadable] == [(MIB + 8192) // 4096]
    with pytest.raises(StageFailed, match="not whole"):
        sf.scan(reader(disk(tmp_path, size), clock), size - 512, 4096, clock=clock)


def test_a_failing_disk_stops_mapping_but_counts_every_block(tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch
                                                            ) -> None:
    monkeypatch.setattr(sf, "MAX_MAPPED_BLOCKS", 2)
    size = MIB
    clock = Clock()
    bad = set(range(0, size, sf.BLOCK_BYTES))  # every block's first sector
    result = sf.scan(reader(disk(tmp_path, size), clock, bad=bad), size, 512, clock=clock)
    assert result.unreadable_blocks == 8 and result.unreadable_sectors == 2
    assert result.unmapped_blocks == 6 and "6 blocks not mapped" in result.summary()


def test_cancel_stops_the_scan(tmp_path: Path) -> None:
    clock = Clock()
    with pytest.raises(StageCancelled):
        sf.scan(reader(disk(tmp_path, MIB), clock), MIB, 512, clock=clock, cancel=lambda: True)


def test_the_csv_has_a_row_per_region(tmp_path: Path) -> None:
    size = 2 * MIB
    clock = Clock()
    result = sf.scan(reader(disk(tmp_path, size), clock, bad={MIB}), size, 512, regions=4,
                     clock=clock)
    sf.write_csv(tmp_path / "surface.csv", result)
    rows = list(csv.DictReader((tmp_path / "surface.csv").open()))
    assert [int(r["region"]) for r in rows] == [0, 1, 2, 3]
    assert tuple(rows[0]) == sf.CSV_COLUMNS
    assert [int(r["unreadable_blocks"]) for r in rows] == [0, 0, 1, 0]
    assert int(rows[-1]["end_byte"]) == size
