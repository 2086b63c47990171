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


@contextmanager
def loop_device(
    size_mib: int, *, fill: int | None = None, prefix: str = "ssdbench-"
) -> Iterator[tuple[str, Path]]:
    """A loop device the test owns: a file on /dev/shm (sparse zeros, or every byte ``fill``
    so stray writes show), attached with losetup; detached and removed afterwards.
    Yields (device path, backing file)."""
    require_root()
    folder = Path(tempfile.mkdtemp(prefix=prefix, dir="/dev/shm"))
    image = folder / "disk.img"
    try:
        if fill is None:
            with open(image, "wb") as f:
                f.truncate(size_mib * MIB)
        else:
            image.write_bytes(bytes([fill]) * (size_mib * MIB))
        dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                             capture_output=True, text=True).stdout.strip()
        try:
            yield dev, image
        finally:
            subprocess.run(["losetup", "-d", dev], check=False)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
