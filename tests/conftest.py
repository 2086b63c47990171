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



# Loop device numbers the tests that plug a drive in (the station) take: a name not in
# /sys/block yet. A number stays in /sys/block after `losetup -d` until its node is removed
# (LOOP_CTL_REMOVE): those tests remove theirs, and reclaim the unattached ones an earlier
# run left (on a long-lived machine all 56 were taken, and the station test failed).
PLUG_NUMBERS = range(200, 256)
LOOP_CTL_REMOVE = 0x4C81


def remove_loop_node(number: int) -> None:
    """Remove the (unattached) loop device ``number``; an attached one stays (EBUSY)."""
    import fcntl

    try:
        fd = os.open("/dev/loop-control", os.O_RDWR | os.O_CLOEXEC)
    except OSError:
        return
    try:
        fcntl.ioctl(fd, LOOP_CTL_REMOVE, number)
    except OSError:
        pass
    finally:
        os.close(fd)


def unplugged_loop_numbers(count: int) -> list[int]:
    """``count`` loop device numbers of PLUG_NUMBERS not in /sys/block (unattached leftovers
    in that range are removed first when too few are free); pytest.fail when there are not."""
    def free() -> list[int]:
        return [n for n in PLUG_NUMBERS if not Path(f"/sys/block/loop{n}").exists()]

    found = free()
    if len(found) < count:
        for n in PLUG_NUMBERS:
            size = Path(f"/sys/block/loop{n}/size")
            backing = Path(f"/sys/block/loop{n}/loop/backing_file")
            if size.exists() and size.read_text().strip() == "0" and not backing.exists():
                remove_loop_node(n)
        found = free()
    if len(found) < count:
        pytest.fail(f"fewer than {count} unused loop device numbers from 200 to 255 (attached "
                    "ones are not touched): detach some (losetup -D)")
    return found[:count]

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
