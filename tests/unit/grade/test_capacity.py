"""The quick authenticity check's logic (grade/capacity.py) on models of the fakes the
research names: a drive that wraps its writes onto its real capacity (f3 #176, #253), one
that drops them (ValiDrive's USB sticks: reads give zeros or old data), one that fails them,
and genuine ones of odd (IDEMA) capacities. The same check on a real block device, the
simulated counterfeit SSD: tests/integration/test_capacity_fakes.py."""

from __future__ import annotations

from collections import OrderedDict

import pytest

from ssdbench.grade.capacity import MAGIC, CapacityResult, check_capacity, grid_for

B = 4096
S = 512  # the models' logical block
MIB = 1 << 20
GIB = 1 << 30


class Model:
    """A drive that claims ``claimed`` bytes and holds ``real``: beyond it, writes wrap
    (``wrap``: byte x is byte x mod real), vanish and read as zeros (``drop``), as the last
    run's data (``old``), or fail (``error``). ``cache``: it holds the last ``cache`` bytes
    written (by address, least recently written out first) in front of that and ignores
    flush requests, as a caching fake does. Sparse: 4 KiB pages, written ones only."""

    def __init__(self, claimed: int, real: int, mode: str = "genuine", cache: int = 0) -> None:
        self.claimed, self.real, self.mode = claimed, real, mode
        self.pages: dict[int, bytearray] = {}  # the medium, by 4 KiB page
        self.cache: OrderedDict[int, bytes] = OrderedDict()  # claimed page -> its data
        self.cache_pages = cache // B
        self.old = MAGIC + b"\x01" * 16 + bytes(B - len(MAGIC) - 16)

    def _where(self, offset: int) -> int | None:
        if offset < self.real or self.mode == "genuine":
            return offset
        return offset % self.real if self.mode == "wrap" else None

    def _put(self, offset: int, data: bytes) -> None:
        """Onto the medium (no cache), sector by sector unless the page maps whole."""
        where = self._where(offset)
        if where is not None and where % B == 0 and self._where(offset + B - S) == where + B - S:
            self.pages[where // B] = bytearray(data)
            return
        for s in range(0, len(data), S):
            where = self._where(offset + s)
            if where is None:
                if self.mode == "error":
                    raise OSError(5, "Input/output error")
                continue
            page = self.pages.setdefault(where // B, bytearray(B))
            page[where % B:where % B + S] = data[s:s + S]

    def _get(self, offset: int) -> bytes:
        """A page from the medium."""
        where = self._where(offset)
        if where is not None and where % B == 0 and self._where(offset + B - S) == where + B - S:
            return bytes(self.pages.get(where // B, bytes(B)))
        out = bytearray()
        for s in range(0, B, S):
            where = self._where(offset + s)
            if where is None:
                if self.mode == "error":
                    raise OSError(5, "Input/output error")
                out += bytes(S) if self.mode == "drop" else self.old[s:s + S]
                continue
            out += self.pages.get(where // B, bytes(B))[where % B:where % B + S]
        return bytes(out)

    def write(self, offset: int, data: bytes) -> None:
        assert offset % S == 0 and len(data) % S == 0 and offset + len(data) <= self.claimed
        pos = 0
        while pos < len(data):
            at = offset + pos
            page = at - at % B
            n = min(len(data) - pos, page + B - at)
            if not self.cache_pages:
                self._put(at, data[pos:pos + n])
            else:
                if n == B:
                    whole = data[pos:pos + B]
                else:
                    old = self.cache.get(page)
                    if old is None:
                        try:
                            old = self._get(page)
                        except OSError:
                            old = bytes(B)
                    whole = old[:at - page] + data[pos:pos + n] + old[at - page + n:]
                self.cache[page] = whole
                self.cache.move_to_end(page)
                while len(self.cache) > self.cache_pages:
                    self._put(*self.cache.popitem(last=False))
            pos += n

    def read(self, offset: int, length: int) -> bytes:
        assert offset % S == 0 and length % S == 0 and offset + length <= self.claimed
        out = bytearray()
        pos = offset
        while pos < offset + length:
            page = pos - pos % B
            data = self.cache.get(page)
            if data is None:
                data = self._get(page)
            n = min(offset + length - pos, page + B - pos)
            out += data[pos - page:pos - page + n]
            pos += n
        return bytes(out)

    def sync(self) -> None:
        pass  # a caching fake ignores it; the others have nothing to flush


class OneBad(Model):
    """A genuine drive whose 4 KiB blocks at ``bad`` (10 MiB by default) fail to read."""

    def __init__(self, claimed: int, real: int, bad: tuple[int, ...] = (2560 * B,)) -> None:
        super().__init__(claimed, real)
        self.bad = bad

    def read(self, offset: int, length: int) -> bytes:
        if any(offset < b + B and b < offset + length for b in self.bad):
            raise OSError(5, "Input/output error")
        return super().read(offset, length)


def check(model: Model, evict: int = 8 * MIB) -> CapacityResult:
    """The quick check with a small flush (the models without a cache need none; the
    caching ones below are given what the drive needs: 1 GiB)."""
    return check_capacity(model, model.claimed, B, evict=evict, nonce=b"n" * 16)


IDEMA_256G = 500_118_192 * 512 // 1024  # an IDEMA sector count, scaled down: 244 GB / 1024


@pytest.mark.parametrize("claimed", [256 * MIB, IDEMA_256G, 64 * MIB + 3 * 512 * 8])
def test_genuine_drives_of_odd_capacities_pass(claimed: int) -> None:
    claimed -= claimed % B
    r = check(Model(claimed, claimed))
    assert (r.verdict, r.real_bytes, r.fake) == ("genuine", claimed, False)
    assert r.tags_written >= claimed // grid_for(claimed, B)


@pytest.mark.parametrize(("claimed", "real"), [
    (2 * 48 * MIB, 48 * MIB),  # twice over, like a device-mapper table
    (IDEMA_256G - IDEMA_256G % B, 40 * MIB),  # an odd claim onto a whole number of MiB
    (3 * 17 * MIB + 5 * B, 17 * MIB),  # three times over and a bit
])
def test_a_wrapping_fake_is_found_with_its_exact_capacity(claimed: int, real: int) -> None:
    r = check(Model(claimed, real, "wrap"))
    assert (r.verdict, r.real_bytes) == ("wraps", real), r.evidence
    assert "read back the tag written at byte" in r.evidence[0]
    assert r.evidence[-1] == f"a tag written at byte {real:,} landed on byte 0"


@pytest.mark.parametrize("mode", ["drop", "old", "error"])
@pytest.mark.parametrize("real", [48 * MIB, 48 * MIB + 7 * B, 1 * MIB + B])
def test_a_dropping_or_failing_fake_is_found_to_the_block(mode: str, real: int) -> None:
    claimed = 96 * MIB + 3 * B
    r = check(Model(claimed, real, mode))
    assert r.verdict == ("fails" if mode == "error" else "drops"), r
    assert r.real_bytes == real, (r.real_bytes, real, r.evidence)
    assert r.reads < 400  # the grid and one grid step read densely, not a scan


@pytest.mark.parametrize(("claimed", "real"), [
    (96 * MIB, 48 * MIB + B),  # off the 1 MiB grid by one block
    (1 * GIB, 300 * MIB + 40 * 1024),  # issue #43: 314,613,760 bytes; passed as genuine
    (1 * GIB, 300 * MIB + 40 * 1024 + 3 * S),  # and not a whole 4 KiB block either
])
def test_a_wrap_off_the_grid_is_found_to_the_byte(claimed: int, real: int) -> None:
    """A real capacity that is no whole number of grid steps: the tags alias between the
    grid's; the first far tag past it lands in the canary region (it was "genuine")."""
    r = check(Model(claimed, real, "wrap"))
    assert (r.verdict, r.real_bytes, r.fake) == ("wraps", real, True), r.evidence


def test_a_2_tib_claim_wrapping_onto_60_gb_is_found_to_the_byte() -> None:
    """Issue #43: 2 TiB claimed, 60,000,000,000 bytes real (no whole number of the 32 MiB
    grid, nor of 4 KiB): genuine to the grid alone; f3probe misses it too."""
    claimed, real = 2 * 2**40, 60_000_000_000
    r = check(Model(claimed, real, "wrap"), evict=64 * MIB)
    assert grid_for(claimed, B) == 32 * MIB
    assert (r.verdict, r.real_bytes) == ("wraps", real), r.evidence


@pytest.mark.parametrize(("claimed", "cache"), [
    (1 * GIB, 256 * 1024),  # issue #43: "not a fake, but failing", 660 of 1,025 tags lost
    (1 * GIB, 32 * MIB),  # issue #43: "genuine"
    (3 * GIB, 1 * GIB),
])
def test_a_dropping_fake_behind_a_write_cache_is_found_to_the_byte(claimed: int,
                                                                  cache: int) -> None:
    """A drive that drops writes past 300 MiB + 40 KiB and holds the last ``cache`` bytes
    written in a cache it does not flush: the tags are read back after 1 GiB more was
    written, and the bisection's dense rewrite too."""
    real = 300 * MIB + 40 * 1024
    r = check(Model(claimed, real, "drop", cache=cache), evict=1 * GIB)
    assert (r.verdict, r.real_bytes, r.fake) == ("drops", real, True), r.evidence
    assert r.flushed_bytes >= 2 * min(GIB, claimed - 8 * MIB)  # past the tags, twice


def test_a_wrapping_fake_behind_a_write_cache_is_found_to_the_byte() -> None:
    real = 300 * MIB + 40 * 1024
    r = check(Model(1 * GIB, real, "wrap", cache=32 * MIB), evict=1 * GIB)
    assert (r.verdict, r.real_bytes) == ("wraps", real), r.evidence


@pytest.mark.parametrize("claimed", [64 * MIB, 64 * MIB + 3 * S])
def test_a_genuine_drive_whose_last_block_is_unreadable_is_failing_not_fake(
        claimed: int) -> None:
    """Issue #43: it was "FAKE (fails)": the rule that tells failing from fake needed a
    held block after the bad one, and there is none after the last."""
    last = claimed // B * B - B
    r = check(OneBad(claimed, claimed, bad=(last,)))
    assert (r.verdict, r.fake, r.real_bytes) == ("unreadable", False, claimed), r.evidence
    assert r.summary.startswith("not a fake, but failing")


def test_a_wrap_whose_aliases_give_a_multiple_of_its_capacity_is_narrowed_to_it() -> None:
    """1.5 MiB wrapping under a 5 MiB claim: the tags alias 3 MiB apart; 3 MiB landing on
    block 0 is not the end: 1.5 MiB does too (it was reported as 3 MiB)."""
    r = check(Model(5 * MIB, 3 * MIB // 2, "wrap"))
    assert (r.verdict, r.real_bytes) == ("wraps", 3 * MIB // 2), r.evidence


def test_one_bad_block_on_a_genuine_drive_is_failing_not_fake() -> None:
    """A 64 MiB drive whose block 2560 (10 MiB) fails: blocks beyond it hold their tags,
    so it is not a fake of 10 MiB (it was: "FAKE (fails) ... holds 10,485,760 bytes")."""
    r = check(OneBad(64 * MIB, 64 * MIB))
    assert (r.verdict, r.fake, r.real_bytes) == ("unreadable", False, 64 * MIB), r
    assert r.summary.startswith("not a fake, but failing")


def test_block_zero_failing_is_a_failing_drive_of_no_capacity() -> None:
    r = check(Model(16 * MIB, 0, "error"))
    assert (r.verdict, r.real_bytes) == ("fails", 0)


def test_the_grid_keeps_a_large_drive_to_65536_tags() -> None:
    assert grid_for(256 * MIB, B) == MIB
    assert grid_for(4 * 10**12, B) == 64 * MIB  # 4 TB: 59,605 tags
    assert 4 * 10**12 // grid_for(4 * 10**12, B) <= 65_536
