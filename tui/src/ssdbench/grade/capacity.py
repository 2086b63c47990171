"""The quick authenticity check: does the drive hold what it claims? (docs/grading.md
"Fake capacity"). Destructive: it writes blocks across the whole claimed span.

Blocks tagged with their own position and a per-run nonce are written on a grid across the
claimed capacity (one every ``grid`` bytes: 1 MiB, or more on a large drive so that at most
65,536 are written), then read back with O_DIRECT:

* a block that reads back its own tag is held;
* a block that reads back ANOTHER position's tag shows a wrap: the drive maps both
  positions onto one place (a fake that claims more than it has and wraps its writes). The
  two positions differ by a multiple of the real capacity: the greatest common divisor of
  every such difference is the real capacity, checked by one more write at it (which must
  land on block 0) and one just below it (which must not);
* a block that reads zeros, data of an earlier run, or fails, shows a drop: the real
  capacity lies between the last held block below it and it, found by bisection to the
  block (each step one tagged write and its read-back), not assuming a power of two.

A wrap is seen when the real capacity is a whole number of grid steps (flash comes in
whole erase blocks of a power of two MiB; the dm and simulated fakes of the tests are); a
wrap onto a real capacity that is not one is missed here and found by the full check (every
block written and verified). A drive that caches recent writes can hide a drop from a
read-back right after the write: the grid pass reads each block long after it was written.
"""

from __future__ import annotations

import hashlib
import math
import mmap
import os
import secrets
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

MAGIC = b"SSDBENCH-CAPACITY-TAG\n"
# the verdicts of a drive that claims more than it holds ("unreadable": a failing drive
# that holds its span; "genuine"), of the quick and the full check alike
FAKE_VERDICTS = ("wraps", "drops", "fails")
MIN_GRID = 1 << 20
MAX_TAGS = 65_536


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
    """The run's tags: position (block index), a per-run nonce and a sequence number."""

    def __init__(self, block: int, nonce: bytes | None = None) -> None:
        self.block = block
        self.nonce = nonce or secrets.token_bytes(16)
        self.seq = 0

    def tag(self, index: int) -> bytes:
        self.seq += 1
        head = MAGIC + self.nonce + index.to_bytes(8, "little") + self.seq.to_bytes(8, "little")
        fill = hashlib.sha256(head).digest()
        return (head + fill * (self.block // len(fill) + 1))[: self.block]

    def owner(self, data: bytes) -> int | str:
        """The block index whose tag ``data`` is, or what it is instead: "zeros", "old"
        (a tag of another run), "other"."""
        n = len(MAGIC)
        if data[:n] == MAGIC and len(data) >= n + 32:
            if data[n:n + 16] != self.nonce:
                return "old"
            head = data[:n + 32]
            fill = hashlib.sha256(head).digest()
            if data == (head + fill * (self.block // len(fill) + 1))[: self.block]:
                return int.from_bytes(data[n + 16:n + 24], "little")
            return "other"
        return "zeros" if not data.strip(b"\0") else "other"


def grid_for(claimed: int, block: int) -> int:
    """The grid step (bytes): 1 MiB, doubled until at most MAX_TAGS blocks span the drive."""
    grid = max(MIN_GRID, block)
    while claimed // grid > MAX_TAGS:
        grid *= 2
    return grid


def check_capacity(io: BlockIO, claimed: int, block: int = 4096, *,
                   progress: Callable[[str], None] = lambda _s: None,
                   clock: Callable[[], float] = time.monotonic,
                   nonce: bytes | None = None) -> CapacityResult:
    """The quick check (module docstring) of a drive that claims ``claimed`` bytes."""
    t0 = clock()
    blocks = claimed // block
    if blocks < 2:
        raise ValueError(f"{claimed} bytes is too small to check")
    grid = grid_for(claimed, block)
    step = grid // block
    tagger = Tagger(block, nonce)
    grid_idx = sorted({*range(0, blocks, step), blocks - 1})
    reads = 0
    evidence: list[str] = []

    def read(index: int) -> int | str:
        nonlocal reads
        reads += 1
        try:
            return tagger.owner(io.read(index * block, block))
        except OSError as exc:
            return f"error ({exc.strerror or exc})"

    def write(index: int) -> str | None:
        try:
            io.write(index * block, tagger.tag(index))
            return None
        except OSError as exc:
            return f"error ({exc.strerror or exc})"

    progress(f"writing {len(grid_idx):,} tagged blocks, one every {grid // 2**20} MiB")
    failed_writes = {i: w for i in grid_idx if (w := write(i)) is not None}
    _sync(io)
    progress(f"reading them back ({len(grid_idx):,} blocks)")
    got = {i: failed_writes.get(i) or read(i) for i in grid_idx}
    aliases = [(i, o) for i, o in got.items() if isinstance(o, int) and o != i]
    bad = [i for i, o in got.items() if o != i]

    def result(verdict: str, real: int | None) -> CapacityResult:
        return CapacityResult(verdict, claimed, real, block, grid, tagger.seq, reads,
                              round(clock() - t0, 2), tuple(evidence))

    if not bad:
        return result("genuine", claimed)
    if aliases:
        for i, o in aliases[:5]:
            evidence.append(f"block {i:,} (byte {i * block:,}) read back the tag of block "
                            f"{o:,} (byte {o * block:,}): both are one place on the drive")
        real = _wrap_capacity(aliases, blocks, write, read, lambda: _sync(io),
                              evidence=evidence)
        return result("wraps", None if real is None else real * block)
    first = bad[0]
    below = [i for i in grid_idx if i < first]
    what = got[first]
    evidence.append(f"block {first:,} (byte {first * block:,}) read back {what} instead of "
                    "its tag" if isinstance(what, str) else f"block {first:,} differs")
    held_above = [i for i in grid_idx if i > first and got[i] == i]
    if held_above:  # blocks beyond it hold: bad blocks on a drive that holds its span
        evidence.append(f"{len(bad)} of {len(grid_idx):,} tagged blocks did not read back; "
                        f"block {held_above[-1]:,} beyond them did")
        return result("unreadable", claimed)
    if not below:
        return result("fails", 0)
    lo, hi = below[-1], first
    progress(f"bisecting between byte {lo * block:,} and {hi * block:,}")
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if write(mid) is None:
            _sync(io)
            held = read(mid) == mid
        else:
            held = False
        lo, hi = (mid, hi) if held else (lo, mid)
    evidence.append(f"the last block that holds its data is block {lo:,}; block {hi:,} "
                    f"(byte {hi * block:,}) does not")
    verdict = "fails" if isinstance(what, str) and what.startswith("error") else "drops"
    return result(verdict, hi * block)


def _sync(io: BlockIO) -> None:
    try:
        io.sync()
    except OSError:
        pass  # a drive that cannot flush: the reads below still decide


def _wrap_capacity(aliases: list[tuple[int, int]], blocks: int,
                   write: Callable[[int], str | None], read: Callable[[int], int | str],
                   sync: Callable[[], None], *, evidence: list[str]) -> int | None:
    """The real capacity (blocks) of a wrapping drive: the gcd of the aliased positions'
    distances, confirmed by a write at it landing on block 0 and one below it not."""
    real = 0
    for i, o in aliases:
        real = math.gcd(real, abs(i - o))
    if not 0 < real < blocks:
        evidence.append("the aliased positions give no capacity below the claimed one")
        return None
    for probe in (real - 1, real):
        if write(probe) is not None:
            return None
    sync()
    below, at_zero = read(real - 1), read(0)
    if below == real - 1 and at_zero == real:
        real = _smallest_period(real, write, read, sync)
        evidence.append(f"a block written at block {real:,} landed on block 0; block "
                        f"{real - 1:,} holds its own")
        return real
    evidence.append(f"block {real:,} (the aliases' common distance) did not land on block 0 "
                    f"(block 0 read {at_zero!r}, block {real - 1:,} read {below!r})")
    return None


def _smallest_period(real: int, write: Callable[[int], str | None],
                     read: Callable[[int], int | str], sync: Callable[[], None]) -> int:
    """The aliases' common distance may be a multiple of the real capacity (when that is
    not a whole number of grid steps): while a divisor's block also lands on block 0, the
    real capacity is that divisor."""
    changed = True
    while changed:
        changed = False
        for p in _prime_factors(real):
            candidate = real // p
            if candidate < 1 or write(candidate) is not None:
                continue
            sync()
            if read(0) == candidate:
                real, changed = candidate, True
                break
    return real


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
               nonce: int | None = None) -> FullCheckResult:
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
    bad = 0
    first_bad: int | None = None
    holds: str | None = None
    for first in range(0, blocks, per_chunk):
        count = min(per_chunk, blocks - first)
        if first >= written_to:
            bad += blocks - first
            if first_bad is None:
                first_bad, holds = first, "never written (the writes before it failed)"
            break
        try:
            got = np.frombuffer(io.read(first * block, count * block), dtype=np.uint64)
        except OSError as exc:
            if first_bad is not None:  # past the first damage: the request counts whole
                bad += count
                continue
            # the first failing request, block by block: the first bad LBA exactly
            for i in range(first, first + count):
                try:
                    one = np.frombuffer(io.read(i * block, block), dtype=np.uint64)
                    ok = bool((one == _full_pattern(i, 1, block, nonce)[0]).all())
                    what = "" if ok else _full_owner(one, nonce)
                except OSError as one_exc:
                    what = f"a read error ({one_exc.strerror or one_exc or exc})"
                if what:
                    bad += 1
                    if first_bad is None:
                        first_bad, holds = i, what
            continue
        rows = got.reshape(count, block // 8)
        wrong = np.flatnonzero((rows != _full_pattern(first, count, block, nonce)).any(axis=1))
        if wrong.size:
            bad += int(wrong.size)
            if first_bad is None:
                first_bad = first + int(wrong[0])
                holds = _full_owner(rows[int(wrong[0])], nonce)
        if first % (per_chunk * 64) == 0:
            progress(f"verifying: {first * block / 2**30:,.1f} of {claimed / 2**30:,.1f} GiB",
                     0.5 + 0.5 * first / blocks)
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
    if verdict in ("drops", "fails") and first_bad is not None and bad < blocks - first_bad:
        verdict = "unreadable"  # bad blocks with good ones beyond them: failing, not a fake
    if first_bad is not None:
        evidence.append(f"block {first_bad:,} (byte {first_bad * block:,}) holds {holds}")
    scale = block // lba_bytes
    return FullCheckResult(
        verdict, claimed, (blocks - bad) * block, bad,
        None if first_bad is None else first_bad * scale, holds, block, lba_bytes,
        round(write_s, 2), round(read_s, 2),
        round(claimed / 2**20 / write_s, 1) if write_s > 0 else None,
        collapse, collapse_bytes, before, after, tuple(series), tuple(evidence))
