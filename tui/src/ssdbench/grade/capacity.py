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
        return self.verdict in ("wraps", "drops", "fails")

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

    def write(self, offset: int, data: bytes) -> None:
        self.buf.seek(0)
        self.buf.write(data)
        n = os.pwritev(self.fd, [self.buf], offset)
        if n != len(data):
            raise OSError(5, f"short write at {offset}: {n} of {len(data)} bytes")

    def read(self, offset: int, length: int) -> bytes:
        n = os.preadv(self.fd, [self.buf], offset)
        if n != length:
            raise OSError(5, f"short read at {offset}: {n} of {length} bytes")
        return bytes(self.buf[:length])

    def sync(self) -> None:
        os.fsync(self.fd)

    def close(self) -> None:
        os.close(self.fd)
        self.buf.close()

    def size(self) -> int:
        return os.lseek(self.fd, 0, os.SEEK_END)
