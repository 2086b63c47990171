"""The quick authenticity check's logic (grade/capacity.py) on models of the fakes the
research names: a drive that wraps its writes onto its real capacity (f3 #176, #253), one
that drops them (ValiDrive's USB sticks: reads give zeros or old data), one that fails them,
and genuine ones of odd (IDEMA) capacities. The same check on a real block device, the
simulated counterfeit SSD: tests/integration/test_capacity_fakes.py."""

from __future__ import annotations

import pytest

from ssdbench.grade.capacity import MAGIC, CapacityResult, check_capacity, grid_for

B = 4096
MIB = 1 << 20


class Model:
    """A drive that claims ``claimed`` bytes and holds ``real``: beyond it, writes wrap
    (``wrap``), vanish and read as zeros (``drop``), as the last run's data (``old``), or
    fail (``error``)."""

    def __init__(self, claimed: int, real: int, mode: str = "genuine") -> None:
        self.claimed, self.real, self.mode = claimed, real, mode
        self.data: dict[int, bytes] = {}
        self.old = MAGIC + b"\x01" * 16 + bytes(B - len(MAGIC) - 16)

    def _where(self, offset: int) -> int | None:
        if offset < self.real or self.mode == "genuine":
            return offset
        return offset % self.real if self.mode == "wrap" else None

    def write(self, offset: int, data: bytes) -> None:
        assert offset % B == 0 and len(data) == B and offset + B <= self.claimed
        where = self._where(offset)
        if where is None and self.mode == "error":
            raise OSError(5, "Input/output error")
        if where is not None:
            self.data[where] = data

    def read(self, offset: int, length: int) -> bytes:
        where = self._where(offset)
        if where is None:
            if self.mode == "error":
                raise OSError(5, "Input/output error")
            return self.old if self.mode == "old" else bytes(length)
        return self.data.get(where, bytes(length))

    def sync(self) -> None:
        pass


class OneBad(Model):
    """A genuine drive whose block 2560 (10 MiB) fails to read."""

    def read(self, offset: int, length: int) -> bytes:
        if offset == 2560 * B:
            raise OSError(5, "Input/output error")
        return super().read(offset, length)


def check(model: Model) -> CapacityResult:
    return check_capacity(model, model.claimed, B, nonce=b"n" * 16)


IDEMA_256G = 500_118_192 * 512 // 1024  # an IDEMA sector count, scaled down: 244 GB / 1024


@pytest.mark.parametrize("claimed", [256 * MIB, IDEMA_256G, 64 * MIB + 3 * 512 * 8])
def test_genuine_drives_of_odd_capacities_pass(claimed: int) -> None:
    claimed -= claimed % B
    r = check(Model(claimed, claimed))
    assert (r.verdict, r.real_bytes, r.fake) == ("genuine", claimed, False)
    assert r.tags_written == r.reads >= claimed // grid_for(claimed, B)


@pytest.mark.parametrize(("claimed", "real"), [
    (2 * 48 * MIB, 48 * MIB),  # twice over, like a device-mapper table
    (IDEMA_256G - IDEMA_256G % B, 40 * MIB),  # an odd claim onto a whole number of MiB
    (3 * 17 * MIB + 5 * B, 17 * MIB),  # three times over and a bit
])
def test_a_wrapping_fake_is_found_with_its_exact_capacity(claimed: int, real: int) -> None:
    r = check(Model(claimed, real, "wrap"))
    assert (r.verdict, r.real_bytes) == ("wraps", real), r.evidence
    assert "read back the tag of block" in r.evidence[0]
    assert r.evidence[-1].startswith(f"a block written at block {real // B:,} landed on block 0")


@pytest.mark.parametrize("mode", ["drop", "old", "error"])
@pytest.mark.parametrize("real", [48 * MIB, 48 * MIB + 7 * B, 1 * MIB + B])
def test_a_dropping_or_failing_fake_is_found_to_the_block(mode: str, real: int) -> None:
    claimed = 96 * MIB + 3 * B
    r = check(Model(claimed, real, mode))
    assert r.verdict == ("fails" if mode == "error" else "drops"), r
    assert r.real_bytes == real, (r.real_bytes, real, r.evidence)
    assert r.reads < 200  # the grid and a bisection, not a scan


def test_a_wrap_off_the_grid_is_not_seen_by_the_quick_check() -> None:
    """The documented limit: a real capacity that is not a whole number of grid steps
    aliases between the tags; the full check finds it (docs/grading.md)."""
    r = check(Model(96 * MIB, 48 * MIB + B, "wrap"))
    assert r.verdict == "genuine"


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
