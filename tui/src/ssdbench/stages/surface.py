"""The surface read scan (#44, the hard disk's plan): every block of the drive read once, in
order, each read timed, the way MHDD and WHDD show a disk.

A hard disk's health is in how it reads: a sector the drive must retry for half a second is
a sector on its way out long before SMART counts it, and an unreadable one is data lost.
The scan reads the whole span with ``O_DIRECT`` in blocks of :data:`BLOCK_BYTES` (256
sectors of 512 bytes, MHDD's and WHDD's block) and files each read in one of MHDD's
latency bands (under 5, 20, 50, 150, 500 ms, and 500 ms or more). A block that does not
read is read again sector by sector (the drive's logical block), so the unreadable sectors
are found by LBA (the first :data:`MAX_LISTED` listed, all counted); mapping stops after
:data:`MAX_MAPPED_BLOCKS` bad blocks (a failing disk would take hours), which are then
counted whole.

The span is cut into ``surface_regions`` equal regions (the chart's x axis: the platter
from the outer edge, LBA 0, inwards): per region the speed, the mean and the slowest read,
the bands and the unreadable blocks: ``surface.csv``; the totals and the verdict in
run.json ``surface``. Reads only: nothing is written. On an SSD it works too (a quick map
of slow or unreadable regions), but the bands are a disk's.
"""

from __future__ import annotations

import csv
import itertools
import mmap
import os
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ssdbench.stages.base import RunContext, StageCancelled, StageFailed, sysfs_logical_block

BLOCK_BYTES = 128 * 1024  # 256 sectors of 512 bytes: MHDD's and WHDD's block
BANDS_MS = (5.0, 20.0, 50.0, 150.0, 500.0)  # MHDD: <5, <20, <50, <150, <500, >=500 ms
BAND_NAMES = ("lt5ms", "lt20ms", "lt50ms", "lt150ms", "lt500ms", "ge500ms")
SLOW_MS = 500.0  # a read this slow is a sector the drive struggled with (MHDD's red)
MAX_LISTED = 64
MAX_MAPPED_BLOCKS = 256
PROGRESS_EVERY_S = 1.0
CSV_NAME = "surface.csv"
CSV_COLUMNS = ("region", "start_byte", "end_byte", "mb_s", "mean_ms", "max_ms",
               *BAND_NAMES, "unreadable_blocks")

Clock = Callable[[], float]
Progress = Callable[[int, int, float | None], None]  # (bytes done, total, eta_s)


@dataclass
class Reader:
    """The reads the scan makes (tests swap ``preadv`` to fail or to stall)."""

    path: str
    preadv: Callable[[int, list[Any], int], int] = field(default=os.preadv)

    def open(self) -> int:
        try:
            return os.open(self.path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
        except OSError as exc:
            raise StageFailed(f"{self.path}: cannot open for the surface scan: "
                              f"{exc.strerror}") from None


@dataclass(frozen=True)
class Region:
    index: int
    start: int
    end: int
    seconds: float  # the reads' own time
    mean_ms: float
    max_ms: float
    bands: tuple[int, ...]  # blocks per band of BANDS_MS (len 6)
    unreadable_blocks: int

    @property
    def mb_s(self) -> float:
        return (self.end - self.start) / self.seconds / 1e6 if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class Unreadable:
    offset: int  # bytes
    lba: int  # logical block address (the drive's logical block)
    error: str


@dataclass(frozen=True)
class SurfaceScan:
    span_bytes: int
    block_bytes: int
    logical_block: int
    seconds: float
    regions: tuple[Region, ...]
    unreadable: tuple[Unreadable, ...]  # the first MAX_LISTED sectors found
    unreadable_sectors: int  # sectors mapped as unreadable
    unmapped_blocks: int  # bad blocks past MAX_MAPPED_BLOCKS, counted whole

    @property
    def bands(self) -> tuple[int, ...]:
        return tuple(sum(r.bands[i] for r in self.regions) for i in range(len(BAND_NAMES)))

    @property
    def blocks(self) -> int:
        return sum(sum(r.bands) + r.unreadable_blocks for r in self.regions)

    @property
    def unreadable_blocks(self) -> int:
        return sum(r.unreadable_blocks for r in self.regions)

    @property
    def slow_blocks(self) -> int:
        return self.bands[-1]

    def verdict(self) -> str:
        """``clean``, ``slow`` (reads of 500 ms or more) or ``unreadable``."""
        if self.unreadable_blocks:
            return "unreadable"
        return "slow" if self.slow_blocks else "clean"

    def summary(self) -> str:
        if self.unreadable_blocks:
            found = (f"{self.unreadable_sectors} unreadable sectors in "
                     f"{self.unreadable_blocks} blocks")
            if self.unmapped_blocks:
                found += f" ({self.unmapped_blocks} blocks not mapped sector by sector)"
            return found + (f"; {self.slow_blocks} slow reads (≥ 500 ms)"
                            if self.slow_blocks else "")
        if self.slow_blocks:
            return f"every block read; {self.slow_blocks} slow reads (≥ 500 ms)"
        return "every block read, none slower than 500 ms"


def band_of(ms: float) -> int:
    for i, top in enumerate(BANDS_MS):
        if ms < top:
            return i
    return len(BANDS_MS)


@dataclass
class _RegionAcc:
    start: int
    end: int
    seconds: float = 0.0
    reads: int = 0
    max_ms: float = 0.0
    bands: list[int] = field(default_factory=lambda: [0] * len(BAND_NAMES))
    unreadable: int = 0

    def done(self, index: int) -> Region:
        mean = 1000 * self.seconds / self.reads if self.reads else 0.0
        return Region(index, self.start, self.end, self.seconds, round(mean, 3),
                      round(self.max_ms, 3), tuple(self.bands), self.unreadable)


def scan(reader: Reader, span_bytes: int, logical_block: int, *, regions: int = 200,
         block: int = BLOCK_BYTES, clock: Clock = time.perf_counter,
         progress: Progress | None = None, cancel: Callable[[], bool] | None = None
         ) -> SurfaceScan:
    """Read ``[0, span_bytes)`` of ``reader.path`` once, timed block by block."""
    if logical_block <= 0 or logical_block % 512 or block % logical_block:
        raise StageFailed(f"{reader.path}: logical block size {logical_block} does not "
                          f"divide the scan's {block}-byte blocks")
    if span_bytes <= 0 or span_bytes % logical_block:
        raise StageFailed(f"{reader.path}: span {span_bytes} is not whole "
                          f"{logical_block}-byte blocks")
    # regions start on block boundaries (whole reads), the last one ends at the span's end
    regions = max(1, min(regions, -(-span_bytes // block)))
    edges = sorted({span_bytes * i // regions // block * block for i in range(regions)}
                   | {span_bytes})
    accs = [_RegionAcc(a, b) for a, b in itertools.pairwise(edges)]
    listed: list[Unreadable] = []
    sectors_bad = mapped = unmapped = 0
    fd = reader.open()
    buf = mmap.mmap(-1, block + mmap.PAGESIZE)
    view = memoryview(buf)
    t0 = last = clock()
    try:
        for acc in accs:
            offset = acc.start
            while offset < acc.end:
                if cancel is not None and cancel():
                    raise StageCancelled("surface scan cancelled")
                n = min(block, acc.end - offset)
                started = clock()
                try:
                    ok = reader.preadv(fd, [view[:n]], offset) == n
                except OSError:
                    ok = False
                took = clock() - started
                acc.seconds += took
                if ok:
                    ms = took * 1000
                    acc.reads += 1
                    acc.max_ms = max(acc.max_ms, ms)
                    acc.bands[band_of(ms)] += 1
                else:
                    acc.unreadable += 1
                    if mapped < MAX_MAPPED_BLOCKS:
                        mapped += 1
                        for s in range(offset, offset + n, logical_block):
                            try:
                                good = reader.preadv(fd, [view[:logical_block]], s) == \
                                    logical_block
                                error = "short read"
                            except OSError as exc:
                                good, error = False, str(exc.strerror or exc)
                            if not good:
                                sectors_bad += 1
                                if len(listed) < MAX_LISTED:
                                    listed.append(Unreadable(s, s // logical_block, error))
                    else:
                        unmapped += 1
                offset += n
                now = clock()
                if progress is not None and now - last >= PROGRESS_EVERY_S:
                    last = now
                    rate = offset / (now - t0) if now > t0 else 0.0
                    progress(offset, span_bytes,
                             (span_bytes - offset) / rate if rate > 0 else None)
    finally:
        view.release()
        buf.close()
        os.close(fd)
    return SurfaceScan(span_bytes, block, logical_block, clock() - t0,
                       tuple(a.done(i) for i, a in enumerate(accs)), tuple(listed),
                       sectors_bad, unmapped)


def write_csv(path: os.PathLike[str] | str, result: SurfaceScan) -> None:
    with open(path, "w", newline="", encoding="utf-8") as f:
        w = csv.writer(f, lineterminator="\n")
        w.writerow(CSV_COLUMNS)
        for r in result.regions:
            w.writerow([r.index, r.start, r.end, f"{r.mb_s:.1f}", f"{r.mean_ms:.3f}",
                        f"{r.max_ms:.3f}", *r.bands, r.unreadable_blocks])


def record(result: SurfaceScan) -> dict[str, Any]:
    """run.json ``surface``."""
    slowest = max(result.regions, key=lambda r: r.max_ms)
    return {
        "verdict": result.verdict(),
        "summary": result.summary(),
        "span_bytes": result.span_bytes,
        "block_bytes": result.block_bytes,
        "logical_block": result.logical_block,
        "seconds": round(result.seconds, 3),
        "mb_s": round(result.span_bytes / result.seconds / 1e6, 1) if result.seconds else 0.0,
        "regions": len(result.regions),
        "bands_ms": list(BANDS_MS),
        "bands": dict(zip(BAND_NAMES, result.bands, strict=True)),
        "blocks": result.blocks,
        "slow_blocks": result.slow_blocks,
        "unreadable_blocks": result.unreadable_blocks,
        "unreadable_sectors": result.unreadable_sectors,
        "unmapped_blocks": result.unmapped_blocks,
        "unreadable_list": [{"lba": u.lba, "offset": u.offset, "error": u.error}
                            for u in result.unreadable],
        "slowest_region": {"index": slowest.index, "start_byte": slowest.start,
                           "max_ms": slowest.max_ms},
        "csv": CSV_NAME,
    }


@dataclass
class SurfaceStage:
    """Read every block of the target once, timed (module docstring)."""

    name: str = "surface"

    def execute(self, ctx: RunContext) -> None:
        target = ctx.target
        logical = 512
        if target.kind == "block" and target.kernel_name:
            logical = sysfs_logical_block(ctx.host, target.kernel_name) or 512
        t0 = time.monotonic()

        def progress(done: int, total: int, eta: float | None) -> None:
            ctx.emit(self.name, "running", "reading every block, timed",
                     fraction=done / total if total else None, bytes_done=done,
                     eta_s=eta, elapsed_s=time.monotonic() - t0)

        result = scan(Reader(target.path), target.span_bytes, logical,
                      regions=ctx.params.surface_regions,
                      block=max(ctx.params.surface_block_kib * 1024, logical),
                      progress=progress,
                      cancel=ctx.cancel.is_set)
        write_csv(ctx.run_dir / CSV_NAME, result)
        ctx.record.set("surface", record(result))
