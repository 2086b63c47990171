"""Byte counts as text (ssdbench/units.py) on real capacities: IDEMA sector counts, not powers
of two."""

from ssdbench.units import binary_size, decimal_size

IDEMA_500GB = 976_773_168 * 512  # a 500 GB drive's LBA count (IDEMA LBA1-03)


def test_decimal_units_as_drive_labels() -> None:
    assert decimal_size(IDEMA_500GB) == "500.1 GB"
    assert decimal_size(3_840_755_982_336) == "3.8 TB"  # a 3.84 TB data-centre drive
    assert decimal_size(999) == "999 B"


def test_binary_units_as_the_kernel() -> None:
    assert binary_size(IDEMA_500GB) == "465.8 GiB"
    assert binary_size(4096) == "4 KiB"
    assert binary_size(3 << 29) == "1.5 GiB"
    assert binary_size(1 << 41) == "2 TiB"
    assert binary_size(512) == "512 B"
