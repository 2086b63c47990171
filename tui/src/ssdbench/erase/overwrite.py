"""Clear by overwrite (NIST SP 800-88 Clear): one pass over every block, then a sampled
read-back of what the pass wrote.

For every drive with no firmware erase that works (USB bridges without pass-through,
drives that stay frozen, hard disks, virtual disks) or that the operator chooses it for.

The pass writes with ``O_DIRECT`` from page-aligned ``mmap`` buffers of
:data:`CHUNK_BYTES` (a multiple of every logical block size), the last region cut to the
device's size (odd IDEMA sector counts, 4Kn). A region whose write fails is retried block
by block; a block that still fails is a bad block: counted, recorded (and whether it still
reads), skipped - not an abort.

The pattern is ``random`` (the default) or ``zero``. ``random`` is one :data:`CHUNK_BYTES`
block of the AES-128-CTR key stream (keyed by a 16-byte seed recorded in run.json) repeated
over the drive, with the first 8 bytes of every 512-byte sector XORed with that sector's
number (little-endian): no two sectors of the drive are alike, and none compresses, so a
drive that compresses or deduplicates (at 512 bytes or more) cannot shortcut the pass. Any
block's content is recomputed from its offset alone, so the verification reads blocks
anywhere. Why not the whole stream: AES-NI makes it about 0.1 s of CPU per GiB, 28% of a
core at an NVMe drive's 3 GB/s and more than fio's own pass on a fast device; the repeated
block costs one 16,384-word stamp per 8 MiB write (0.017-0.020 s of CPU per GiB in the
pass on a loaded host, the buffer cold from its write: under 2% of a core at 1 GB/s, 5% at
2.5 GB/s; ``make bench``). Each of the :data:`BUFFERS` write buffers gets the block at its
first write; each write then only restamps its sectors, in this thread, while a writer
thread writes the buffers already stamped back to back. Knowing the seed reveals nothing
of the data that was overwritten.

The verification reads ``verify_percent`` of the drive in :data:`SAMPLE_BYTES` units,
chosen at random in each of :data:`SUBSECTIONS` equal parts of the drive (the first and
last unit always), with ``O_DIRECT``, and compares each with the pattern. 100 reads all.
"""

from __future__ import annotations

import functools
import math
import mmap
import os
import queue
import secrets
import threading
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from cryptography.hazmat.primitives.ciphers import Cipher, algorithms, modes

from ssdbench.erase.model import Clock, EraseError, SystemClock

PATTERNS = ("random", "zero")
CHUNK_BYTES = 8 << 20  # one write: a multiple of 512 and 4096, large enough for any drive
BUFFERS = 3  # in turn: one being written, one ready, one being restamped
SAMPLE_BYTES = 1 << 20  # one verification unit (read at sequential speed, not 4K QD1)
SUBSECTIONS = 64
MAX_LISTED = 64  # bad blocks / mismatches named in the record (all are counted)
PROGRESS_EVERY_S = 1.0
SEED_BYTES = 16  # the AES-128 key

# A progress callback: (bytes done, bytes total, message, eta_s or None).
OverwriteProgress = Callable[[int, int, str, float | None], None]


def _ignore(done: int, total: int, message: str, eta: float | None) -> None:
    pass


@dataclass(frozen=True)
class Pattern:
    """What the pass writes at every byte offset."""

    kind: str  # "random" | "zero"
    seed: bytes = b""  # 16 bytes (the AES-128 key) for "random"

    def __post_init__(self) -> None:
        if self.kind not in PATTERNS:
            raise EraseError(f"unknown overwrite pattern {self.kind!r}; one of {PATTERNS}")
        if self.kind == "random" and len(self.seed) != SEED_BYTES:
            raise EraseError(f"the random overwrite pattern needs a {SEED_BYTES}-byte seed")

    @classmethod
    def new(cls, kind: str, seed: bytes | None = None) -> Pattern:
        if kind == "zero":
            return cls("zero")
        return cls(kind, seed if seed is not None else secrets.token_bytes(SEED_BYTES))

    def describe(self) -> str:
        if self.kind == "zero":
            return "a fixed value: every byte 0x00"
        return (f"an {CHUNK_BYTES >> 20} MiB block of the AES-128-CTR key stream (a CSPRNG) "
                "keyed by the recorded seed, repeated, each 512-byte sector's first 8 bytes "
                "XORed with its sector number: every sector distinct")

    def fill(self, offset: int, out: Any, length: int, zeros: bytes | None = None) -> None:
        """Write the pattern of ``[offset, offset+length)`` into ``out[:length]``
        (``offset`` and ``length`` whole 512-byte sectors for "random")."""
        if self.kind == "zero":
            out[:length] = bytes(length) if zeros is None else zeros[:length]
            return
        if offset % SECTOR or length % SECTOR:
            raise EraseError(f"pattern of [{offset}, {offset + length}): not whole sectors")
        block = memoryview(_key_block(self.seed))  # sliced without a copy
        view = memoryview(out)
        start, done = offset % CHUNK_BYTES, 0
        while done < length:
            n = min(CHUNK_BYTES - start, length - done)
            view[done:done + n] = block[start:start + n]
            done += n
            start = 0
        view.release()
        block.release()
        self.restamp(offset, out, length)

    def restamp(self, offset: int, out: Any, length: int) -> None:
        """Stamp the sectors of ``[offset, offset+length)`` into ``out``, which already holds
        the repeated key block from ``offset`` on (the pass's buffers: ``offset`` a multiple
        of :data:`CHUNK_BYTES`, or as :meth:`fill` left it)."""
        import numpy as np

        if self.kind == "zero":
            return
        sectors = length // SECTOR
        words = np.frombuffer(out, dtype="<u8", count=length // 8)[::SECTOR // 8]
        first = offset // SECTOR
        per_block = CHUNK_BYTES // SECTOR
        at = first % per_block
        if at == 0 and sectors <= per_block:  # the pass: one write, one block
            # first + k == first ^ k (first a multiple of the power of two per_block, k
            # below it): one XOR straight into the buffer's sector words, no temporaries
            np.bitwise_xor(_stamped_words(self.seed)[:sectors], np.uint64(first), out=words)
            return
        base = _key_words(self.seed)
        if at + sectors <= per_block:  # within one key block
            key = base[at:at + sectors]
        else:
            key = base[(first + np.arange(sectors, dtype=np.uint64)) % per_block]
        words[:] = key ^ (np.arange(first, first + sectors, dtype=np.uint64))

    def expected(self, offset: int, length: int) -> bytes:
        if self.kind == "zero":
            return bytes(length)
        out = bytearray(length)
        self.fill(offset, out, length)
        return bytes(out)


SECTOR = 512  # the stamp's unit: every 512-byte sector of any drive is distinct


@functools.lru_cache(maxsize=4)
def _key_block(seed: bytes) -> bytes:
    """The first :data:`CHUNK_BYTES` of the AES-128-CTR key stream of ``seed``."""
    enc = Cipher(algorithms.AES(seed), modes.CTR(bytes(16))).encryptor()
    return enc.update(bytes(CHUNK_BYTES))


@functools.lru_cache(maxsize=4)
def _key_words(seed: bytes) -> Any:
    """The first 8 bytes of every sector of :func:`_key_block` (little-endian words)."""
    import numpy as np

    return np.frombuffer(_key_block(seed), dtype="<u8")[::SECTOR // 8].copy()


@functools.lru_cache(maxsize=4)
def _stamped_words(seed: bytes) -> Any:
    """:func:`_key_words` XORed with each sector's number within the block (0, 1, ...):
    a block-aligned write's stamps are these XORed with its first sector's number."""
    import numpy as np

    words = _key_words(seed)
    return words ^ np.arange(len(words), dtype=np.uint64)


@dataclass(frozen=True)
class BadBlock:
    offset: int  # bytes
    error: str
    readable: bool  # it still reads after the failed write: old data may be there


@dataclass(frozen=True)
class PassResult:
    bytes_total: int
    bytes_written: int
    seconds: float
    chunk_bytes: int
    bad_blocks: tuple[BadBlock, ...] = ()
    bad_count: int = 0

    @property
    def mb_s(self) -> float:
        return self.bytes_written / self.seconds / 1e6 if self.seconds > 0 else 0.0


@dataclass(frozen=True)
class SampleResult:
    percent: float
    unit_bytes: int
    subsections: int
    units_checked: int
    bytes_checked: int
    seconds: float
    sample_seed: int  # numpy/random seed of the sample: the same units can be read again
    mismatches: tuple[int, ...] = ()  # byte offsets of logical blocks that differ
    mismatch_count: int = 0
    unreadable: tuple[int, ...] = ()
    skipped_bad: int = 0  # sampled units that hold a recorded bad block (not compared)

    @property
    def passed(self) -> bool:
        return not self.mismatch_count and not self.unreadable and self.units_checked > 0


@dataclass
class Device:
    """The I/O the pass and the check need (os calls; tests swap ``pwrite`` to fail)."""

    path: str
    pwrite: Callable[[int, Any, int], int] = field(default=os.pwrite)
    preadv: Callable[[int, list[Any], int], int] = field(default=os.preadv)

    def open(self, write: bool) -> int:
        flags = (os.O_WRONLY if write else os.O_RDONLY) | os.O_DIRECT | os.O_CLOEXEC
        # O_EXCL on a block device: refused while it is mounted or held by the kernel
        try:
            return os.open(self.path, flags | os.O_EXCL)
        except OSError as exc:
            raise EraseError(f"{self.path}: cannot open for the overwrite: {exc.strerror}"
                             ) from None


def _device_size(fd: int) -> int:
    return os.lseek(fd, 0, os.SEEK_END)


def _check_geometry(path: str, size: int, block: int, actual: int) -> None:
    if block <= 0 or block % 512 or CHUNK_BYTES % block:
        raise EraseError(f"{path}: logical block size {block} is not a power-of-two "
                         "multiple of 512: no aligned overwrite")
    if size <= 0 or size % block:
        raise EraseError(f"{path}: size {size} is not whole {block}-byte blocks")
    if actual != size:
        raise EraseError(f"{path}: the device now has {actual} bytes, discovery said {size}: "
                         "not overwritten (rediscover the drive)")


def _write_all(dev: Device, fd: int, view: memoryview, offset: int) -> None:
    done = 0
    while done < len(view):
        n = dev.pwrite(fd, view[done:], offset + done)
        if n <= 0:
            raise OSError(5, "short write")
        done += n


def _still_reads(dev: Device, offset: int, block: int) -> bool:
    try:
        fd = os.open(dev.path, os.O_RDONLY | os.O_DIRECT | os.O_CLOEXEC)
    except OSError:
        return False
    buf = mmap.mmap(-1, max(block, mmap.PAGESIZE))
    try:
        return dev.preadv(fd, [memoryview(buf)[:block]], offset) == block
    except OSError:
        return False
    finally:
        os.close(fd)
        buf.close()


_Region = tuple[int, int, int]  # (buffer, byte offset, length)


@dataclass
class _Writes:
    """The writer thread's side of the pass: the buffers it is handed (``ready``) and
    hands back (``free``), regions written, bad blocks found."""

    dev: Device
    fd: int
    size_bytes: int
    block: int
    views: list[memoryview]
    ready: queue.SimpleQueue[_Region | None] = field(default_factory=queue.SimpleQueue)
    free: queue.SimpleQueue[int] = field(default_factory=queue.SimpleQueue)
    stop: threading.Event = field(default_factory=threading.Event)
    failed: list[BaseException] = field(default_factory=list)
    written: int = 0
    bad: list[BadBlock] = field(default_factory=list)
    bad_count: int = 0

    def run(self) -> None:
        """The writer thread: write each ready buffer in turn, hand it back to be
        refilled; -1 handed back says it stopped on an error (``failed``)."""
        while (item := self.ready.get()) is not None and not self.stop.is_set():
            i, offset, n = item
            try:
                self.region(self.views[i][:n], offset)
            except BaseException as exc:  # re-raised by the pass, in its own thread
                chain: BaseException | None = exc
                while chain is not None:  # the frames' buffer slices: the pass closes them
                    traceback.clear_frames(chain.__traceback__)
                    chain = chain.__context__
                self.failed.append(exc)
                self.free.put(-1)
                return
            self.free.put(i)

    def region(self, view: memoryview, offset: int) -> None:
        try:
            _write_all(self.dev, self.fd, view, offset)
            self.written += len(view)
            return
        except OSError:
            pass
        for b in range(0, len(view), self.block):  # block by block: find the bad ones
            try:
                _write_all(self.dev, self.fd, view[b:b + self.block], offset + b)
                self.written += self.block
            except OSError as exc:
                self.bad_count += 1
                if self.bad_count > self.size_bytes // self.block // 100 + 1024:
                    raise EraseError(
                        f"{self.dev.path}: more than {self.bad_count - 1} blocks failed to "
                        f"write (last at byte {offset + b}: {exc.strerror}): the drive is "
                        "failing, overwrite stopped") from None
                if len(self.bad) < MAX_LISTED:
                    self.bad.append(BadBlock(offset + b, str(exc.strerror or exc),
                                             _still_reads(self.dev, offset + b, self.block)))


def overwrite_pass(
    dev: Device,
    size_bytes: int,
    block: int,
    pattern: Pattern,
    *,
    progress: OverwriteProgress = _ignore,
    cancel: threading.Event | None = None,
    clock: Clock | None = None,
    chunk: int = CHUNK_BYTES,
) -> PassResult:
    """Write ``pattern`` over ``[0, size_bytes)`` of ``dev`` and flush; bad blocks are
    skipped and recorded. Raises EraseError when the device cannot be written at all.

    :data:`BUFFERS` buffers: a writer thread writes the ready ones back to back (``pwrite``
    releases the GIL) while this thread restamps the free ones (the key block is written
    into each once), so a write never waits for this thread to be scheduled."""
    clock = clock or SystemClock()
    fd = dev.open(write=True)
    bufs = [mmap.mmap(-1, chunk + mmap.PAGESIZE) for _ in range(BUFFERS)]
    views = [memoryview(b) for b in bufs]
    writes = _Writes(dev, fd, size_bytes, block, views)
    writer = threading.Thread(target=writes.run, name="overwrite-writer", daemon=True)
    try:
        _check_geometry(dev.path, size_bytes, block, _device_size(fd))
        t0 = last = clock.monotonic()
        # a buffer gets the key block at its first write (the first write starts after one
        # fill, not three), then only its sectors' stamps; "zero": mmap's pages are zeros
        whole = [False] * BUFFERS  # the buffer holds the key block from its start
        for i in range(BUFFERS):
            writes.free.put(i)
        writer.start()
        offset = 0
        while offset < size_bytes:
            if cancel is not None and cancel.is_set():
                raise EraseError(f"{dev.path}: overwrite cancelled at byte {offset}")
            i = writes.free.get()  # a buffer written (or the writer's error)
            if i < 0:
                raise writes.failed[0]
            n = min(chunk, size_bytes - offset)
            if pattern.kind != "zero":
                if offset % CHUNK_BYTES == 0 and whole[i]:
                    pattern.restamp(offset, bufs[i], n)
                else:  # its first write, or a chunk not the key block's (tests)
                    pattern.fill(offset, bufs[i], n)
                    whole[i] = offset % CHUNK_BYTES == 0
            writes.ready.put((i, offset, n))
            offset += n
            now = clock.monotonic()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                rate = offset / (now - t0) if now > t0 else 0.0
                eta = (size_bytes - offset) / rate if rate > 0 else None
                progress(offset, size_bytes, f"overwriting: {rate / 1e6:.0f} MB/s", eta)
        writes.ready.put(None)
        writer.join()
        if writes.failed:
            raise writes.failed[0]
        try:
            os.fsync(fd)  # the drive's volatile write cache: FLUSH CACHE / NVMe Flush
        except OSError as exc:
            raise EraseError(f"{dev.path}: flushing the drive after the overwrite failed: "
                             f"{exc.strerror}") from None
        seconds = clock.monotonic() - t0
        progress(size_bytes, size_bytes, "overwritten", 0.0)
    finally:
        if writer.is_alive():  # an error or a cancel here: the writer stops after its write
            writes.stop.set()
            writes.ready.put(None)
            writer.join()
        for v in views:
            v.release()
        for b in bufs:
            b.close()
        os.close(fd)
    return PassResult(size_bytes, writes.written, seconds, chunk, tuple(writes.bad),
                      writes.bad_count)


def parts(size_bytes: int, unit: int, percent: float, subsections: int) -> int:
    """How many equal parts the sample is spread over: ``subsections``, fewer when fewer
    units are wanted (1% of a small drive stays 1%)."""
    units = math.ceil(size_bytes / unit)
    if percent >= 100:
        return 1
    want = max(2, math.ceil(units * percent / 100))
    return max(1, min(subsections, want, units))


def sample_units(size_bytes: int, unit: int, percent: float, subsections: int,
                 seed: int) -> list[int]:
    """Byte offsets of the units to read: ``percent`` of all units (at least one in each
    of :func:`parts` parts, the first and the last always), at random within each part."""
    import numpy as np

    units = math.ceil(size_bytes / unit)
    if percent >= 100:
        return [i * unit for i in range(units)]
    want = max(2, math.ceil(units * percent / 100))
    k = parts(size_bytes, unit, percent, subsections)
    rng = np.random.default_rng(seed)
    chosen: set[int] = {0, units - 1}
    for s in range(k):
        lo, hi = s * units // k, (s + 1) * units // k
        n = min(hi - lo, max(1, round(want * (hi - lo) / units)))
        chosen.update(int(i) for i in rng.choice(np.arange(lo, hi), size=n, replace=False))
    return sorted(i * unit for i in chosen)


def verify_sample(
    dev: Device,
    size_bytes: int,
    block: int,
    pattern: Pattern,
    percent: float,
    *,
    bad_offsets: frozenset[int] = frozenset(),
    progress: OverwriteProgress = _ignore,
    clock: Clock | None = None,
    seed: int | None = None,
    unit: int = SAMPLE_BYTES,
    subsections: int = SUBSECTIONS,
) -> SampleResult:
    """Read the sampled units with O_DIRECT and compare them with the pattern."""
    if not 0 < percent <= 100:
        raise EraseError(f"overwrite verification percent {percent} is not in (0, 100]")
    clock = clock or SystemClock()
    seed = secrets.randbits(63) if seed is None else seed
    offsets = sample_units(size_bytes, unit, percent, subsections, seed)
    fd = dev.open(write=False)
    buf = mmap.mmap(-1, unit + mmap.PAGESIZE)
    view = memoryview(buf)
    mismatches: list[int] = []
    mismatch_count = 0
    unreadable: list[int] = []
    skipped = checked = nbytes = 0
    t0 = last = clock.monotonic()
    try:
        for i, off in enumerate(offsets):
            n = min(unit, size_bytes - off)
            if any(off <= b < off + n for b in bad_offsets):
                skipped += 1
                continue
            try:
                got = dev.preadv(fd, [view[:n]], off)
            except OSError:
                got = -1
            if got != n:
                if len(unreadable) < MAX_LISTED:
                    unreadable.append(off)
                continue
            checked += 1
            nbytes += n
            want = pattern.expected(off, n)
            got_bytes = bytes(view[:n])  # bytes == bytes is memcmp; memoryview == is not
            if got_bytes != want:
                for b in range(0, n, block):
                    if got_bytes[b:b + block] != want[b:b + block]:
                        mismatch_count += 1
                        if len(mismatches) < MAX_LISTED:
                            mismatches.append(off + b)
            now = clock.monotonic()
            if now - last >= PROGRESS_EVERY_S:
                last = now
                progress(i + 1, len(offsets), "verifying the overwrite (sampled)", None)
    finally:
        view.release()
        buf.close()
        os.close(fd)
    return SampleResult(percent, unit, parts(size_bytes, unit, percent, subsections),
                        checked, nbytes,
                        clock.monotonic() - t0, seed, tuple(mismatches), mismatch_count,
                        tuple(unreadable), skipped)


def record(pattern: Pattern, result: PassResult, sample: SampleResult | None) -> dict[str, Any]:
    """run.json ``erase.overwrite``: the pass, the pattern and what was verified."""
    return {
        "passes": 1,
        "pattern": pattern.kind,
        "pattern_detail": pattern.describe(),
        "seed": pattern.seed.hex() if pattern.kind == "random" else None,
        "bytes": result.bytes_total,
        "bytes_written": result.bytes_written,
        "seconds": round(result.seconds, 3),
        "mb_s": round(result.mb_s, 1),
        "write_bytes": result.chunk_bytes,
        "io": "O_DIRECT, aligned buffers, then a cache flush (fsync)",
        "bad_blocks": result.bad_count,
        "bad_block_list": [{"offset": b.offset, "error": b.error, "still_reads": b.readable}
                           for b in result.bad_blocks],
        "verification": None if sample is None else {
            "percent": sample.percent,
            "unit_bytes": sample.unit_bytes,
            "subsections": sample.subsections,
            "units_checked": sample.units_checked,
            "bytes_checked": sample.bytes_checked,
            "seconds": round(sample.seconds, 3),
            "sample_seed": sample.sample_seed,
            "mismatches": sample.mismatch_count,
            "mismatch_offsets": list(sample.mismatches),
            "unreadable_offsets": list(sample.unreadable),
            "skipped_bad": sample.skipped_bad,
            "passed": sample.passed,
        },
    }
