"""The full authenticity check (grade/capacity.py ``check_full``): every block of the claimed
span written with its own tag and read back, on the models of the fakes of
test_capacity.py (a wrap off the quick check's grid, a drop, failing writes, one bad block)
and a drive whose write speed collapses when its cache is full."""

from __future__ import annotations

import pytest

from ssdbench.grade.capacity import FullCheckResult, check_full
from tests.unit.grade.test_capacity import IDEMA_256G, Model, OneBad

B = 4096
MIB = 1 << 20


class Chunked:
    """A model that takes requests of many blocks (the full check writes 1 MiB at a time),
    with a clock that writes advance: ``fast`` MiB/s for the first ``cache`` bytes written,
    then ``slow`` MiB/s."""

    def __init__(self, model: Model, fast: float = 1000.0, slow: float = 1000.0,
                 cache: int = 0) -> None:
        self.model, self.fast, self.slow, self.cache = model, fast, slow, cache
        self.t = 0.0
        self.written = 0

    def write(self, offset: int, data: bytes) -> None:
        speed = self.fast if self.written < self.cache or not self.cache else self.slow
        self.t += len(data) / MIB / speed
        self.written += len(data)
        for i in range(0, len(data), B):
            self.model.write(offset + i, data[i:i + B])

    def read(self, offset: int, length: int) -> bytes:
        return b"".join(self.model.read(offset + i, B) for i in range(0, length, B))

    def sync(self) -> None:
        pass


def full(model: Model, **speed: float) -> FullCheckResult:
    drive = Chunked(model, **speed)  # type: ignore[arg-type]
    return check_full(drive, model.claimed, B, 512, clock=lambda: drive.t, nonce=0xFEED)


@pytest.mark.parametrize("claimed", [IDEMA_256G // 8 // B * B, 40 * MIB + 3 * B])
def test_a_genuine_drive_of_an_odd_capacity_reads_back_whole(claimed: int) -> None:
    r = full(Model(claimed, claimed))
    assert (r.verdict, r.fake, r.bad_blocks, r.first_bad_lba) == ("genuine", False, 0, None)
    assert r.verified_bytes == claimed and r.summary.startswith("genuine")


def test_a_wrap_off_the_grid_is_found_with_its_capacity() -> None:
    """The quick check's documented miss (test_capacity.py): 48 MiB + 4 KiB wrapping under
    a 96 MiB claim. Every block written: the start of the drive holds the later writes."""
    real = 48 * MIB + B
    r = full(Model(96 * MIB, real, "wrap"))
    assert (r.verdict, r.fake, r.verified_bytes) == ("wraps", True, real), r.evidence
    assert r.first_bad_lba == 0 and r.first_bad_holds == f"the tag of block {real // B:,}"
    assert r.bad_blocks == (96 * MIB - real) // B


@pytest.mark.parametrize(("mode", "verdict", "holds"), [
    ("drop", "drops", "zeros"), ("old", "drops", "other data"),
    ("error", "fails", "a read error (Input/output error)")])
def test_a_drop_or_failure_is_found_at_its_first_bad_lba(mode: str, verdict: str,
                                                          holds: str) -> None:
    real = 20 * MIB + 5 * B
    r = full(Model(64 * MIB, real, mode))
    assert (r.verdict, r.fake, r.verified_bytes) == (verdict, True, real), r.evidence
    assert (r.first_bad_lba, r.first_bad_holds) == (real // 512, holds)


def test_failing_writes_stop_the_write_pass_and_the_rest_is_bad() -> None:
    r = full(Model(64 * MIB, 8 * MIB, "error"))
    assert r.verdict == "fails" and r.verified_bytes == 8 * MIB
    assert any("writes in a row failed" in e for e in r.evidence), r.evidence


def test_one_bad_block_is_failing_not_fake() -> None:
    r = full(OneBad(32 * MIB, 32 * MIB))
    assert (r.verdict, r.fake, r.first_bad_lba) == ("unreadable", False, 2560 * 8)
    # the failing request is read again block by block: the one bad block, exactly
    assert r.bad_blocks == 1 and r.verified_bytes == 32 * MIB - B
    assert r.summary.startswith("failing (unreadable)")


def test_the_write_speed_collapse_is_found_where_the_cache_ends() -> None:
    """64 MiB at 2 MiB/s until 24 MiB are written (12 s), then 0.5 MiB/s (80 s)."""
    r = full(Model(64 * MIB, 64 * MIB), fast=2.0, slow=0.5, cache=24 * MIB)
    assert r.verdict == "genuine"
    assert r.collapse_at_s is not None and abs(r.collapse_at_s - 12) <= 1, r.series_mib_s
    assert r.collapse_bytes is not None and abs(r.collapse_bytes - 24 * MIB) <= 2 * MIB
    assert r.collapse_from_mib_s == pytest.approx(2.0, rel=0.05)
    assert r.collapse_to_mib_s == pytest.approx(0.5, rel=0.05)
    assert min(r.series_mib_s) > 0  # a slow request is spread over its seconds: no stall
    assert f"the write speed fell from 2.0 to 0.5 MiB/s after {r.collapse_at_s} s" in r.summary


def test_bad_blocks_are_counted_block_by_block() -> None:
    """Issue #43: 3 unreadable blocks became 513: every failing 1-MiB request after the
    first counted all its 256 blocks."""
    bad = (3 * MIB + 5 * B, 9 * MIB, 20 * MIB + 17 * B)
    r = full(OneBad(32 * MIB, 32 * MIB, bad=bad))
    assert (r.verdict, r.bad_blocks, r.first_bad_lba) == ("unreadable", 3, bad[0] // 512), r
    assert r.verified_bytes == 32 * MIB - 3 * B


@pytest.mark.parametrize("claimed", [32 * MIB, 32 * MIB + 5 * 512])
def test_a_genuine_drive_whose_last_block_is_unreadable_is_failing_not_fake(
        claimed: int) -> None:
    """Issue #43: it was "FAKE (fails)": nothing is held after the last block."""
    last = claimed // B * B - B
    r = full(OneBad(claimed, claimed, bad=(last,)))
    assert (r.verdict, r.fake, r.bad_blocks) == ("unreadable", False, 1), r.evidence


@pytest.mark.parametrize("cache", [256 * 1024, 32 * MIB])
def test_a_dropping_fake_behind_a_write_cache_is_a_fake(cache: int) -> None:
    """Issue #43: the last ``cache`` bytes written read back from the cache right after
    the write pass, which made the fake "unreadable (not fake)". Read again after more
    writes elsewhere, they are gone: the drive holds 100 MiB + 40 KiB."""
    real = 100 * MIB + 40 * 1024
    model = Model(256 * MIB, real, "drop", cache=cache)
    drive = Chunked(model)
    r = check_full(drive, model.claimed, B, 512, clock=lambda: drive.t, nonce=0xFEED,
                   evict=64 * MIB)
    assert (r.verdict, r.fake, r.verified_bytes) == ("drops", True, real), r.evidence
    assert r.first_bad_lba == real // 512
    assert any("a write cache held them" in e for e in r.evidence), r.evidence
