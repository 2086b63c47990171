"""Byte counts as text, in one place for every output: screens, `ssdbench list`, report.html
and the erase certificate.

Decimal units are what drive labels and ``nvme list`` use (500.1 GB); binary units are what
the kernel and fio use (4 KiB, 232.9 MiB)."""

from __future__ import annotations

_DECIMAL = (("TB", 10**12), ("GB", 10**9), ("MB", 10**6), ("kB", 10**3))
_BINARY = (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20), ("KiB", 1 << 10))


def decimal_size(n: int) -> str:
    """``500107862016`` → ``500.1 GB``, one decimal; under 1 kB just bytes."""
    for unit, div in _DECIMAL:
        if abs(n) >= div:
            return f"{n / div:.1f} {unit}"
    return f"{n} B"


def binary_size(n: int) -> str:
    """``4096`` → ``4 KiB``, 1.5 × 2^30 → ``1.5 GiB`` (4 significant digits); under 1 KiB
    just bytes."""
    for unit, div in _BINARY:
        if abs(n) >= div:
            return f"{n / div:.4g} {unit}"
    return f"{n} B"
