"""Shared test fixtures. Tiers: tests/unit, tests/ui, tests/integration (root, loop
devices), tests/e2e (the dev image in QEMU). Nothing is skipped: a test that lacks what it
needs fails and says what to install (`make test` installs it)."""

from __future__ import annotations

import os
import shutil
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
DATA = REPO / "tests" / "data"


@pytest.fixture
def data_dir() -> Path:
    return DATA


def require_root() -> None:
    if os.geteuid() != 0:
        pytest.fail("this test needs root (loop devices); run `make test` as root")


MIB = 2**20


def idema_scaled(sectors: int, mib: int) -> int:
    """A real drive's capacity (``sectors`` of 512 bytes, e.g. IDEMA 468862128 for 240 GB)
    scaled down to about ``mib`` MiB, keeping its remainder modulo 1 MiB (so modulo 128 KiB
    and 4 KiB too): the odd tail a real drive has, in a size a test can fill."""
    return mib * MIB + (sectors * 512) % MIB


@contextmanager
def loop_device(
    size_mib: int = 0, *, fill: int | None = None, prefix: str = "ssdbench-",
    size_bytes: int | None = None, sector_size: int = 512,
) -> Iterator[tuple[str, Path]]:
    """A loop device the test owns: a file on /dev/shm (sparse zeros, or every byte ``fill``
    so stray writes show), attached with losetup; detached and removed afterwards.
    ``size_bytes`` (any multiple of ``sector_size``: odd sector counts, scaled IDEMA sizes)
    replaces ``size_mib``; ``sector_size=4096`` makes a 4Kn device (losetup --sector-size).
    Yields (device path, backing file)."""
    require_root()
    nbytes = size_mib * MIB if size_bytes is None else size_bytes
    if nbytes <= 0 or nbytes % sector_size:
        raise ValueError(f"a loop device of {nbytes} bytes is not whole {sector_size}-byte "
                         "sectors")
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/dev/shm"))
    image = folder / "disk.img"
    try:
        if fill is None:
            with open(image, "wb") as f:
                f.truncate(nbytes)
        else:
            image.write_bytes(bytes([fill]) * nbytes)
        argv = ["losetup", "-f", "--show", "--sector-size", str(sector_size), str(image)]
        dev = subprocess.run(argv, check=True, capture_output=True, text=True).stdout.strip()
        try:
            yield dev, image
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
