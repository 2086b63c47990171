"""The quick authenticity check: does the drive hold what it claims? (docs/grading.md
"Fake capacity"). Destructive: it writes tagged blocks across the whole claimed span.

Every block written carries a tag: the run's nonce, the byte offset it was written at and
the pass that wrote it, so whatever a read returns says where it was written. In order:

1. a dense **canary** region at the start (every block tagged; one grid step long);
2. the **grid**: one tagged block every ``grid`` bytes beyond it (1 MiB, or more on a large
   drive so that at most 65,536 are written) and the last block;
3. the **flush**: ``evict`` bytes (1 GiB; all of a smaller drive) of tagged blocks
   between the grid's, with a flush request: a drive that holds recent writes in a
   cache (and drops or loses them behind it) holds the flush there, not the tags;
4. the read-back of the canary region and the grid (O_DIRECT).

* every tag back where it was written: ``genuine``;
* a tag read back somewhere else shows a wrap: both places are one on the drive, and they
  lie a multiple of the real capacity apart. A far tag that wraps lands a little past a
  multiple of the real capacity: the first one past it lands inside the canary region
  (it is one grid step long), at any real size and at any 512-byte offset (the canary is
  searched sector by sector). The greatest common divisor of every such distance is the
  real capacity, confirmed by one more write at it, which must land on byte 0, and
  narrowed by the divisors that land there too;
* a block that reads zeros, data of an earlier run or pass, or fails, with every block
  beyond it bad too: the drive drops or fails writes beyond its real capacity. The grid
  step where that starts is written again densely, flushed again and read back sector by
  sector: the first sector that does not hold is the real capacity, to the logical block;
* bad blocks with held ones beyond them, or only the last ``MIN_SHORTFALL`` bytes bad:
  ``unreadable``, a failing drive, not a fake.

Cost: the canary (one grid step, 256 MiB at most), the grid (65,536 blocks at most), the
flush (1 GiB), each written once and read once (the flush is not read).
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import secrets
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

MAGIC = b"SSDBENCH-CAPACITY-TAG\n"
# the verdicts of a drive that claims more than it holds ("unreadable": a failing drive
# that holds its span; "genuine"), of the quick and the full check alike
FAKE_VERDICTS = ("wraps", "drops", "fails")
MIN_GRID = 1 << 20
MAX_TAGS = 65_536
EVICT_BYTES = 1 << 30  # written after the tags: a write cache of up to 1 GiB holds none
CHUNK = 1 << 20  # bytes a request of the dense passes
MIN_SHORTFALL = 1 << 20  # bad only in the last MiB: failing blocks at the end, not a fake
# the passes (a tag's sequence word): which write a block read back holds
CANARY, GRID, FLUSH, DENSE, PROBE = 1, 2, 3, 4, 5


class BlockIO(Protocol):
    """Whole blocks at byte offsets (a block device with O_DIRECT; a model in tests)."""

    def write(self, offset: int, data: bytes) -> None: ...
    def read(self, offset: int, length: int) -> bytes: ...
    def sync(self) -> None: ...


@dataclass(frozen=True)
class CapacityResult:
    verdict: str  # "genuine" | "wraps" | "drops" | "fails" | "unreadable" (bad blocks)
    claimed_bytes: int
    real_bytes: int | None  # what the drive holds (None: not found)
    block: int
    grid_bytes: int
    tags_written: int
    reads: int
    seconds: float
    evidence: tuple[str, ...] = field(default=())
    flushed_bytes: int = 0  # written between the tags and their read-back (a cache's)

    @property
    def fake(self) -> bool:
        """Claims more than it holds ("unreadable": it holds its span, with bad blocks)."""
        return self.verdict in FAKE_VERDICTS

    def to_json(self) -> dict[str, Any]:
        return {**asdict(self), "evidence": list(self.evidence), "fake": self.fake}

    @property
    def summary(self) -> str:
        if self.verdict == "unreadable":
            return ("not a fake, but failing: blocks across the claimed span hold their "
                    "tags and some do not: " + "; ".join(self.evidence[:2]))
        if not self.fake:
            return (f"genuine: {self.tags_written:,} tagged blocks across the claimed "
                    f"{self.claimed_bytes:,} bytes all held")
        real = "unknown" if self.real_bytes is None else (
            f"{self.real_bytes:,} bytes ({self.real_bytes / self.claimed_bytes:.1%} of it)")
        return f"FAKE ({self.verdict}): claims {self.claimed_bytes:,} bytes, holds {real}"


class Tagger:
    """The run's tags: the nonce, the byte offset written at, and the pass."""

    HEAD = len(MAGIC) + 32

    def __init__(self, block: int, nonce: bytes | None = None) -> None:
        self.block = block
        self.nonce = nonce or secrets.token_bytes(16)
        self.count = 0

    def tag(self, offset: int, seq: int) -> bytes:
        self.count += 1
        return self._body(MAGIC + self.nonce + offset.to_bytes(8, "little")
                          + seq.to_bytes(8, "little"))

    def _body(self, head: bytes) -> bytes:
        fill = hashlib.sha256(head).digest()
        return (head + fill * (self.block // len(fill) + 1))[: self.block]

    def owner(self, data: bytes) -> int | str:
        """The byte offset whose tag ``data`` is, or what it is instead: "zeros", "old"
        (a tag of another run), "other"."""
        n = len(MAGIC)
        if data[:n] == MAGIC and len(data) >= self.HEAD:
            if data[n:n + 16] != self.nonce:
                return "old"
            if data == self._body(data[:self.HEAD]):
                return int.from_bytes(data[n + 16:n + 24], "little")
            return "other"
        return "zeros" if not data.strip(b"\0") else "other"

    def find(self, data: bytes, base: int, lba: int) -> Iterator[tuple[int, int]]:
        """(where, whose): this run's tags in ``data`` (read at byte ``base``) at any
        ``lba``-aligned offset, each checked over as much of it as ``data`` holds."""
        key = MAGIC + self.nonce
        i = data.find(key)
        while i >= 0:
            if i % lba == 0 and i + self.HEAD <= len(data):
                body = self._body(data[i:i + self.HEAD])
                n = min(self.block, len(data) - i)
                if data[i:i + n] == body[:n]:
                    yield base + i, int.from_bytes(data[i + len(key):i + len(key) + 8],
                                                   "little")
            i = data.find(key, i + 1)


def grid_for(claimed: int, block: int) -> int:
    """The grid step (bytes): 1 MiB, doubled until at most MAX_TAGS blocks span the drive."""
    grid = max(MIN_GRID, block)
    while claimed // grid > MAX_TAGS:
        grid *= 2
    return grid


def _err(exc: OSError) -> str:
    return f"error ({exc.strerror or exc})"


class _Run:
    """One quick check's I/O: counted reads and writes, failed writes remembered."""

    def __init__(self, io: BlockIO, block: int, lba: int, tagger: Tagger) -> None:
        self.io, self.block, self.lba, self.tagger = io, block, lba, tagger
        self.reads = 0
        self.failed: dict[int, str] = {}  # block offset -> why its write failed

    def write_tags(self, offsets: list[int], seq: int, *, split: bool = True) -> None:
        """Tags at ``offsets`` (ascending), contiguous ones in one request of <= CHUNK; a
        request that fails is written again block by block (``split``: which ones fail)."""
        i = 0
        while i < len(offsets):
            j = i + 1
            while (j < len(offsets) and offsets[j] == offsets[j - 1] + self.block
                   and (j - i) * self.block < CHUNK):
                j += 1
            run = offsets[i:j]
            try:
                self.io.write(run[0], b"".join(self.tagger.tag(o, seq) for o in run))
                for o in run:
                    self.failed.pop(o, None)
            except OSError as exc:
                if split and len(run) > 1:
                    self.tagger.count -= len(run)
                    for o in run:
                        self.write_tags([o], seq)
                else:
                    self.failed.update(dict.fromkeys(run, _err(exc)))
            i = j

    def read(self, offset: int, length: int) -> bytes | str:
        self.reads += 1
        try:
            return self.io.read(offset, length)
        except OSError as exc:
            return _err(exc)

    def sync(self) -> None:
        _sync(self.io)


def check_capacity(io: BlockIO, claimed: int, block: int = 4096, *, lba: int = 512,
                   evict: int = EVICT_BYTES,
                   progress: Callable[[str], None] = lambda _s: None,
                   clock: Callable[[], float] = time.monotonic,
                   nonce: bytes | None = None) -> CapacityResult:
    """The quick check (module docstring) of a drive that claims ``claimed`` bytes, in
    tags of ``block`` bytes, its real capacity found to the ``lba`` (logical block)."""
    t0 = clock()
    blocks = claimed // block
    if blocks < 2:
        raise ValueError(f"{claimed} bytes is too small to check")
    if block % lba:
        raise ValueError(f"a {block}-byte tag is no whole number of {lba}-byte blocks")
    end = blocks * block
    last = end - block
    grid = grid_for(claimed, block)
    canary = min(grid, last)
    far = sorted({*range(canary, last, grid), last})
    tagger = Tagger(block, nonce)
    run = _Run(io, block, lba, tagger)
    evidence: list[str] = []
    flushed = 0

    def result(verdict: str, real: int | None) -> CapacityResult:
        return CapacityResult(verdict, claimed, real, block, grid, tagger.count, run.reads,
                              round(clock() - t0, 2), tuple(evidence), flushed)

    progress(f"writing {canary // 2**20 or 1:,} MiB of canary blocks, then {len(far):,} "
             f"tagged blocks, one every {grid // 2**20} MiB")
    run.write_tags(list(range(0, canary, block)), CANARY)
    run.write_tags(far, GRID)
    far_set = set(far)
    progress(f"flushing: {evict // 2**20:,} MiB written between the tags")
    flushed = _flush(run, canary, last, lambda o: o in far_set, evict)
    progress(f"reading back the canary region and {len(far):,} tagged blocks")
    got: dict[int, int | str] = {}  # block offset -> its own offset, or what it holds
    aliases: list[tuple[int, int]] = []
    for base in range(0, canary, CHUNK):
        _read_blocks(run, base, min(base + CHUNK, canary), got, aliases)
    for o in far:
        _read_blocks(run, o, o + block, got, aliases)
    bad = [o for o in sorted(got) if got[o] != o]
    if not bad:
        return result("genuine", claimed)
    if aliases:
        for where, whose in aliases[:5]:
            evidence.append(f"byte {where:,} read back the tag written at byte {whose:,}: "
                            "both are one place on the drive")
        real = _wrap_capacity(run, aliases, end, evidence)
        return result("wraps", real)
    first = bad[0]
    held = [o for o in got if got[o] == o]
    what = got[first]
    evidence.append(f"the block at byte {first:,} read back {what} instead of its tag"
                    if isinstance(what, str) else f"the block at byte {first:,} differs")
    if any(o > first for o in held):  # blocks beyond it hold: bad blocks, not a fake
        evidence.append(f"{len(bad):,} of {len(got):,} tagged blocks did not read back; "
                        f"the block at byte {max(held):,} beyond them did")
        return result("unreadable", claimed)
    lo = max((o + block for o in held if o < first), default=0)
    progress(f"writing bytes {lo:,} to {first + block:,} densely to find where it ends")
    dense = list(range(lo, first + block, block))
    run.write_tags(dense, DENSE)
    flushed += _flush(run, canary, last,
                      lambda o: o in far_set or lo <= o <= first, evict)
    found = _first_lost(run, dense)
    if found is None:
        evidence.append(f"bytes {lo:,} to {first + block:,}, written again, all held: "
                        "the blocks that did not read back are bad, not missing")
        return result("unreadable", claimed)
    real, lost, held_after = found
    if held_after is not None:
        evidence.append(f"byte {real:,} does not hold ({lost}) and the block at byte "
                        f"{held_after:,} beyond it does: bad blocks, not a fake")
        return result("unreadable", claimed)
    if claimed - real < MIN_SHORTFALL:
        evidence.append(f"only the last {claimed - real:,} bytes (from byte {real:,}) do not "
                        f"hold ({lost}): failing blocks at the end, not a fake")
        return result("unreadable", claimed)
    evidence.append(f"the drive holds bytes 0 to {real:,}; byte {real:,} onwards does not "
                    f"({lost})")
    return result("fails" if lost.startswith("error") else "drops", real)


def _read_blocks(run: _Run, start: int, stop: int, got: dict[int, int | str],
                 aliases: list[tuple[int, int]]) -> None:
    """Read [start, stop) back (one request; block by block when it fails): what each
    block holds into ``got``, tags found elsewhere into ``aliases``."""
    block = run.block
    data = run.read(start, stop - start)
    if isinstance(data, str):
        if stop - start > block:
            for o in range(start, stop, block):
                _read_blocks(run, o, o + block, got, aliases)
            return
        got[start] = run.failed.get(start) or data
        return
    for o in range(start, stop, block):
        one = data[o - start:o - start + block]
        owner = run.tagger.owner(one)
        got[o] = run.failed.get(o) or owner
    if any(got[o] != o for o in range(start, stop, block)):
        aliases.extend((w, p) for w, p in run.tagger.find(data, start, run.lba) if w != p)


def _flush(run: _Run, start: int, stop: int, skip: Callable[[int], bool],
           total: int) -> int:
    """``total`` bytes of tags over the blocks of [start, stop) that ``skip`` leaves (all
    of them on a smaller drive: a cache that holds its last writes by address holds no
    more places than the drive has), then a flush request: bytes written."""
    block = run.block
    written = 0
    batch: list[int] = []
    for o in range(start, stop, block):
        if written >= total:
            break
        if skip(o):
            continue
        batch.append(o)
        written += block
        if len(batch) * block >= CHUNK:
            run.write_tags(batch, FLUSH, split=False)
            batch = []
    if batch:
        run.write_tags(batch, FLUSH, split=False)
    run.sync()
    return written


def _first_lost(run: _Run, dense: list[int]) -> tuple[int, str, int | None] | None:
    """The first byte of the densely rewritten blocks that does not hold (to the lba),
    what it holds instead, and a block beyond it that does hold (None: none does)."""
    block, lba, tagger = run.block, run.lba, run.tagger
    lost: tuple[int, str] | None = None
    for base in range(dense[0], dense[-1] + block, CHUNK):
        stop = min(base + CHUNK, dense[-1] + block)
        data = run.read(base, stop - base)
        for o in range(base, stop, block):
            want = tagger._body(MAGIC + tagger.nonce + o.to_bytes(8, "little")
                                + DENSE.to_bytes(8, "little"))
            if isinstance(data, str):
                one: bytes | str = run.read(o, block)
            else:
                one = data[o - base:o - base + block]
            if one == want and o not in run.failed:
                if lost is not None:
                    return lost[0], lost[1], o
                continue
            if lost is not None:
                continue
            if o in run.failed:
                lost = (o, run.failed[o])
                continue
            for s in range(0, block, lba):  # which sector: the real capacity to the lba
                part = one[s:s + lba] if isinstance(one, bytes) else run.read(o + s, lba)
                if part != want[s:s + lba]:
                    what = part if isinstance(part, str) else str(tagger.owner(
                        part + bytes(block - len(part))))
                    lost = (o + s, what)
                    break
    return None if lost is None else (lost[0], lost[1], None)


def _sync(io: BlockIO) -> None:
    try:
        io.sync()
    except OSError:
        pass  # a drive that cannot flush: the reads below still decide


def _wrap_capacity(run: _Run, aliases: list[tuple[int, int]], end: int,
                   evidence: list[str]) -> int | None:
    """The real capacity (bytes) of a wrapping drive: the gcd of the aliased places'
    distances, confirmed by a tag written at it landing on byte 0 and narrowed to the
    smallest divisor that lands there too."""
    real = 0
    for where, whose in aliases:
        real = math.gcd(real, abs(whose - where))
    if not 0 < real < end or real % run.lba:
        evidence.append("the aliased places give no capacity below the claimed one")
        return None
    if not _lands_on_zero(run, real, end):
        evidence.append(f"a tag written at byte {real:,} (the aliases' common distance) did "
                        "not read back at byte 0 (a cache may hold it): the capacity is "
                        "the aliases' distance")
        return real
    changed = True
    while changed:
        changed = False
        for p in _prime_factors(real // run.lba):
            if _lands_on_zero(run, real // p, end):
                real, changed = real // p, True
                break
    evidence.append(f"a tag written at byte {real:,} landed on byte 0")
    return real


def _lands_on_zero(run: _Run, offset: int, end: int) -> bool:
    if offset + run.block > end:
        return False
    run.write_tags([offset], PROBE)
    if offset in run.failed:
        return False
    run.sync()
    data = run.read(0, run.block)
    return not isinstance(data, str) and run.tagger.owner(data) == offset


def _prime_factors(n: int) -> list[int]:
    out, p = [], 2
    while p * p <= n:
        if n % p == 0:
            out.append(p)
            while n % p == 0:
                n //= p
        p += 1
    if n > 1:
        out.append(n)
    return out


# ---- the drive's one verdict ----------------------------------------------------------

_RANK = {"genuine": 0, "unreadable": 1, **dict.fromkeys(FAKE_VERDICTS, 2)}


def _int(value: Any) -> int | None:
    return value if type(value) is int and value >= 0 else None


def drive_capacity(meta: Mapping[str, Any]) -> dict[str, Any] | None:
    """The drive's ONE capacity verdict from a run.json's quick check (``authenticity``)
    and full check (``capacity_full``): the stronger evidence wins. A fake found by either
    beats a failing drive, which beats genuine; at a tie the full check (every block)
    speaks, with the quick check's real capacity when it found one (to the byte). Every
    writer (summary.csv, report.html, the record, the certificate, the fleet page) shows
    this, never one check alone. None: the run has no capacity check."""
    found: list[dict[str, Any]] = []
    for key, by in (("capacity_full", "full check"), ("authenticity", "quick check")):
        c = meta.get(key)
        if not isinstance(c, Mapping) or c.get("verdict") not in _RANK:
            continue
        verdict = str(c["verdict"])
        claimed = _int(c.get("claimed_bytes"))
        if by == "full check":
            real = _int(c.get("verified_bytes")) if verdict in FAKE_VERDICTS else claimed
        else:
            real = _int(c.get("real_bytes"))
        summary = c.get("summary")
        found.append({"verdict": verdict, "fake": verdict in FAKE_VERDICTS,
                      "claimed_bytes": claimed, "real_bytes": real,
                      "summary": summary if isinstance(summary, str) else verdict, "by": by})
    if not found:
        return None
    best = max(found, key=lambda f: _RANK[str(f["verdict"])])  # the first (full) at a tie
    quick = next((f for f in found if f["by"] == "quick check"), None)
    if best["fake"] and quick and quick["fake"] and quick["real_bytes"] is not None:
        best = {**best, "real_bytes": quick["real_bytes"]}
    return best


class DirectIO:
    """A block device (or file) with O_DIRECT: page-aligned buffers, whole blocks."""

    def __init__(self, path: str, block: int) -> None:
        self.block = block
        flags = os.O_RDWR | getattr(os, "O_DIRECT", 0)
        self.fd = os.open(path, flags)
        self.buf = mmap.mmap(-1, block)

    def _room(self, length: int) -> memoryview:
        """The aligned buffer's first ``length`` bytes (grown for a larger request)."""
        if length > len(self.buf):
            self.buf.close()
            self.buf = mmap.mmap(-1, length)
        return memoryview(self.buf)[:length]

    def write(self, offset: int, data: bytes) -> None:
        room = self._room(len(data))
        room[:] = data
        try:
            n = os.pwritev(self.fd, [room], offset)
        finally:
            room.release()
        if n != len(data):
            raise OSError(5, f"short write at {offset}: {n} of {len(data)} bytes")

    def read(self, offset: int, length: int) -> bytes:
        room = self._room(length)
        try:
            n = os.preadv(self.fd, [room], offset)
            if n != length:
                raise OSError(5, f"short read at {offset}: {n} of {length} bytes")
            return bytes(room)
        finally:
            room.release()

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)
        self.buf.close()

    def size(self) -> int:
        return os.lseek(self.fd, 0, os.SEEK_END)


# ---- the full check -------------------------------------------------------------------

FULL_MAGIC = 0x5353_4442_464C_4C31  # "SSDBFLL1": word 0 of every block of the full check
FULL_CHUNK = 1 << 20  # bytes written or read per request
FULL_ERROR_RUN = 16  # consecutive chunks whose writes fail: the rest is not written
FULL_RECOUNT = 64  # failing read requests read again block by block (the rest count whole)
_MIX_A, _MIX_B = 0x9E37_79B9_7F4A_7C15, 0xBF58_476D_1CE4_E5B9


@dataclass(frozen=True)
class FullCheckResult:
    """Every block of the claimed span written with its own tag, then read back."""

    verdict: str  # "genuine" | "wraps" | "drops" | "fails" | "unreadable"
    claimed_bytes: int
    verified_bytes: int  # blocks that read back their own tag
    bad_blocks: int
    first_bad_lba: int | None  # in logical blocks of ``lba_bytes``
    first_bad_holds: str | None  # what the first bad block read instead of its tag
    block: int
    lba_bytes: int
    write_seconds: float
    read_seconds: float
    write_mib_s: float | None
    collapse_at_s: int | None  # where the write speed fell and stayed down (fill_stats)
    collapse_bytes: int | None  # bytes written by then
    collapse_from_mib_s: float | None
    collapse_to_mib_s: float | None
    series_mib_s: tuple[float, ...] = ()  # the write speed per second
    evidence: tuple[str, ...] = field(default=())

    @property
    def fake(self) -> bool:
        return self.verdict in FAKE_VERDICTS

    def to_json(self) -> dict[str, Any]:
        d = {**asdict(self), "evidence": list(self.evidence), "fake": self.fake}
        d["series_mib_s"] = [round(v, 1) for v in self.series_mib_s]
        return d

    @property
    def summary(self) -> str:
        speed = "" if self.collapse_at_s is None else (
            f"; the write speed fell from {_mib(self.collapse_from_mib_s)} to "
            f"{_mib(self.collapse_to_mib_s)} MiB/s after {self.collapse_at_s} s "
            f"({(self.collapse_bytes or 0) / 2**20:,.0f} MiB written)")
        if self.verdict == "genuine":
            return (f"genuine: all {self.claimed_bytes:,} bytes written and read back "
                    f"intact{speed}")
        first = f"first bad LBA {self.first_bad_lba:,} ({self.first_bad_holds})"
        return (f"{'FAKE (' + self.verdict + ')' if self.fake else 'failing (unreadable)'}: "
                f"{self.verified_bytes:,} of {self.claimed_bytes:,} bytes read back intact, "
                f"{self.bad_blocks:,} blocks of {self.block} bytes bad, {first}{speed}")


def _mib(value: float | None) -> str:
    return "?" if value is None else f"{value:,.0f}" if value >= 10 else f"{value:.1f}"


def _full_pattern(first: int, count: int, block: int, nonce: int) -> Any:
    """The tags of blocks ``first .. first+count-1`` as uint64 rows: the magic, the run's
    nonce, the block's index, then words that differ in every block and run."""
    import numpy as np

    words = block // 8
    idx = np.arange(first, first + count, dtype=np.uint64)[:, None]
    col = np.arange(words, dtype=np.uint64)[None, :]
    with np.errstate(over="ignore"):
        rows = (idx * np.uint64(_MIX_A) + col * np.uint64(_MIX_B)) ^ np.uint64(nonce)
    rows[:, 0] = FULL_MAGIC
    rows[:, 1] = nonce
    rows[:, 2] = idx[:, 0]
    return rows


def _full_owner(row: Any, nonce: int) -> str:
    """What a block that is not its own tag holds."""
    if not row.any():
        return "zeros"
    if int(row[0]) == FULL_MAGIC:
        if int(row[1]) != nonce:
            return "an earlier run's data"
        return f"the tag of block {int(row[2]):,}"
    return "other data"


def _spread(buckets: dict[int, float], start: float, end: float, nbytes: int) -> None:
    """A request's bytes over the seconds it took (a slow drive's 1 MiB may take several
    seconds: every one of them wrote, none was a stall)."""
    if end <= start:
        buckets[int(end)] = buckets.get(int(end), 0.0) + nbytes
        return
    second = int(start)
    while second < end:
        part = min(end, second + 1) - max(start, second)
        buckets[second] = buckets.get(second, 0.0) + nbytes * part / (end - start)
        second += 1


def check_full(io: BlockIO, claimed: int, block: int = 4096, lba_bytes: int = 512, *,
               progress: Callable[[str, float], None] = lambda _s, _f: None,
               clock: Callable[[], float] = time.monotonic,
               nonce: int | None = None, evict: int = EVICT_BYTES) -> FullCheckResult:
    """The full check: every block of the claimed span written in order with its own tag
    (FULL_CHUNK at a time, timed: the write speed per second), then read back and
    compared. A wrap shows as blocks holding another block's tag, a drop as zeros or old
    data, a failure as read or write errors; the first bad LBA is where the damage starts
    (on a wrap that is the start of the drive: the later writes overwrote it)."""
    import numpy as np

    from ssdbench.analysis.fill import fill_stats

    blocks = claimed // block
    if blocks < 1:
        raise ValueError(f"{claimed} bytes is too small to check")
    nonce = secrets.randbits(64) if nonce is None else nonce
    per_chunk = max(1, FULL_CHUNK // block)
    evidence: list[str] = []
    # the write pass, timed per second of the clock
    t0 = clock()
    buckets: dict[int, float] = {}
    last = 0.0
    write_errors: list[int] = []
    error_run = 0
    written_to = blocks
    for first in range(0, blocks, per_chunk):
        count = min(per_chunk, blocks - first)
        data = _full_pattern(first, count, block, nonce).tobytes()
        try:
            io.write(first * block, data)
            error_run = 0
        except OSError as exc:
            write_errors.append(first)
            error_run += 1
            if len(write_errors) == 1:
                evidence.append(f"the write at byte {first * block:,} failed: "
                                f"{exc.strerror or exc}")
            if error_run >= FULL_ERROR_RUN:
                written_to = first + count
                evidence.append(f"{FULL_ERROR_RUN} writes in a row failed: the rest of the "
                                f"span (from byte {written_to * block:,}) was not written")
                break
        now = clock() - t0
        _spread(buckets, last, now, count * block)
        last = now
        if first % (per_chunk * 64) == 0:
            progress(f"writing: {first * block / 2**30:,.1f} of {claimed / 2**30:,.1f} GiB",
                     0.5 * first / blocks)
    _sync(io)
    write_s = clock() - t0
    # the read pass
    t1 = clock()
    tally = _BadBlocks()
    recounts = 0

    def verify(first: int, count: int) -> None:
        """Blocks first .. first+count-1 read back and compared; a failing request is
        read again block by block (FULL_RECOUNT requests at most: then it counts whole)."""
        nonlocal recounts
        if count > 1 and recounts >= FULL_RECOUNT:
            _full_verify(io, first, count, block, nonce=nonce, tally=tally)
            return
        if not _full_verify(io, first, count, block, nonce=nonce, tally=tally,
                            whole=count == 1):
            recounts += 1
            for i in range(first, first + count):
                verify(i, 1)

    for first in range(0, blocks, per_chunk):
        count = min(per_chunk, blocks - first)
        if first >= written_to:
            tally.add(first, blocks - first, "never written (the writes before it failed)")
            break
        verify(first, count)
        if first % (per_chunk * 64) == 0:
            progress(f"verifying: {first * block / 2**30:,.1f} of {claimed / 2**30:,.1f} GiB",
                     0.5 + 0.5 * first / blocks)
    if recounts >= FULL_RECOUNT:
        evidence.append(f"more than {FULL_RECOUNT} requests failed to read: the later ones "
                        "count every block they span as bad")
    if tally.first is not None and tally.last < blocks - 1 and not tally.wrapped:
        # bad blocks with held ones beyond them: the held ones may come from a write cache
        # (the last writes): write past it and read the end of the drive again
        _full_recheck(io, blocks, block, nonce=nonce, tally=tally, evidence=evidence,
                      evict=evict)
    bad, first_bad, holds = tally.count, tally.first, tally.holds
    read_s = clock() - t1
    # whole seconds only: the last, partial one would read as a fall at the end
    whole = int(write_s) if write_s >= 1 else len(buckets)
    series = [buckets.get(s, 0.0) / 2**20 for s in range(whole)]
    collapse = collapse_bytes = before = after = None
    if series:
        gib = np.cumsum(np.asarray(series)) / 1024
        stats = fill_stats(np.asarray(series), gib)
        if stats.cliff_at_s is not None:
            collapse, before, after = (stats.cliff_at_s, stats.before_cliff_mib_s,
                                       stats.after_cliff_mib_s)
            collapse_bytes = int((stats.cliff_gib or 0) * 2**30)
    if first_bad is None:
        verdict = "genuine"
    elif holds is not None and holds.startswith("the tag of block"):
        verdict = "wraps"
    elif write_errors or (holds or "").startswith("a read error"):
        verdict = "fails"
    else:
        verdict = "drops"
    if verdict in ("drops", "fails") and first_bad is not None and (
            bad < blocks - first_bad or (blocks - first_bad) * block < MIN_SHORTFALL):
        # bad blocks with good ones beyond them, or only the last MiB bad: failing, not
        # a fake (a genuine drive's unreadable last block is no missing capacity)
        verdict = "unreadable"
    if first_bad is not None:
        evidence.append(f"block {first_bad:,} (byte {first_bad * block:,}) holds {holds}")
    scale = block // lba_bytes
    return FullCheckResult(
        verdict, claimed, (blocks - bad) * block, bad,
        None if first_bad is None else first_bad * scale, holds, block, lba_bytes,
        round(write_s, 2), round(read_s, 2),
        round(claimed / 2**20 / write_s, 1) if write_s > 0 else None,
        collapse, collapse_bytes, before, after, tuple(series), tuple(evidence))


class _BadBlocks:
    """The full check's bad blocks, counted (never listed: a fake has billions)."""

    def __init__(self) -> None:
        self.count = 0
        self.first: int | None = None
        self.holds: str | None = None
        self.last = -1
        self.wrapped = False

    def add(self, first: int, count: int, what: str) -> None:
        self.count += count
        if self.first is None or first < self.first:
            self.first, self.holds = first, what
        self.last = max(self.last, first + count - 1)
        self.wrapped = self.wrapped or what.startswith("the tag of block")


def _full_verify(io: BlockIO, first: int, count: int, block: int, *, nonce: int,
                 tally: _BadBlocks, whole: bool = True) -> bool:
    """Blocks first .. first+count-1 read and compared, the bad ones tallied; False when
    the request failed and ``whole`` is not set (the caller reads it block by block)."""
    import numpy as np

    try:
        got = np.frombuffer(io.read(first * block, count * block), dtype=np.uint64)
    except OSError as exc:
        if whole:
            tally.add(first, count, f"a read error ({exc.strerror or exc})")
        return whole
    rows = got.reshape(count, block // 8)
    wrong = np.flatnonzero((rows != _full_pattern(first, count, block, nonce)).any(axis=1))
    for w in wrong.tolist():
        tally.add(first + w, 1, _full_owner(rows[w], nonce))
    return True


def _full_recheck(io: BlockIO, blocks: int, block: int, *, nonce: int, tally: _BadBlocks,
                  evidence: list[str], evict: int) -> None:
    """The held blocks after the last bad one, once more after ``evict`` bytes written
    elsewhere (over the bad blocks, then the start: their own tags again) and a flush: a
    drive that dropped the writes and held the last ones in a cache reads them bad now."""
    per_chunk = max(1, FULL_CHUNK // block)
    bad_from = tally.first or 0
    start = max(tally.last + 1, blocks - evict // block)
    room = [*range(bad_from, start, per_chunk), *range(0, bad_from, per_chunk)]
    written = 0
    for first in room:
        if written >= evict:
            break
        count = min(per_chunk, start - first)
        try:
            io.write(first * block, _full_pattern(first, count, block, nonce).tobytes())
        except OSError:
            pass  # a bad place: the writes elsewhere still push the cache
        written += count * block
    _sync(io)
    before = tally.count
    for first in range(start, blocks, per_chunk):
        count = min(per_chunk, blocks - first)
        if not _full_verify(io, first, count, block, nonce=nonce, tally=tally, whole=False):
            for i in range(first, first + count):
                _full_verify(io, i, 1, block, nonce=nonce, tally=tally)
    if tally.count > before:
        evidence.append(f"{tally.count - before:,} blocks at the end read back their tags "
                        f"right after the write pass and not after {written // 2**20:,} MiB "
                        "more were written: a write cache held them, the drive did not")
