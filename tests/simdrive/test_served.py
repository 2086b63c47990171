"""The simulated SSD served by nbdkit and attached as a loop device (root): data read-back,
TRIM (zeros vs old data), whole-device zero = sanitize, the truth log, clean stop."""

from __future__ import annotations

import mmap
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from simdrive import cli, truth
from simdrive.cli import SimdriveError
from tests.conftest import require_root
from tests.simknown import SimDrive

pytestmark = pytest.mark.root

MIB = 2**20
SIZE = 228937 * 512  # IDEMA 240 GB (468862128 sectors) / 2048, odd: a partial last page


def run(*argv: str) -> str:
    return subprocess.run(argv, check=True, capture_output=True, text=True).stdout


def pread(dev: str, offset: int, n: int) -> bytes:
    fd = os.open(dev, os.O_RDONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, n)
        got = os.preadv(fd, [buf], offset)
        assert got == n
        return bytes(buf)
    finally:
        os.close(fd)


def pwrite(dev: str, offset: int, data: bytes) -> None:
    fd = os.open(dev, os.O_WRONLY | os.O_DIRECT)
    try:
        buf = mmap.mmap(-1, len(data))
        buf.write(data)
        assert os.pwritev(fd, [buf], offset) == len(data)
    finally:
        os.close(fd)


@pytest.fixture
def workdir() -> Iterator[Path]:
    require_root()
    with tempfile.TemporaryDirectory(prefix="simdrive-test-") as tmp:
        yield Path(tmp)


def leftovers(d: Path) -> list[str]:
    found = []
    if str(d) in run("losetup", "--list", "--noheadings", "--output", "BACK-FILE"):
        found.append("loop device")
    if str(d) in Path("/proc/mounts").read_text():
        found.append("fuse mount")
    for line in run("ps", "-eo", "args").splitlines():
        if str(d) in line:
            found.append(line)
    return found


@pytest.mark.parametrize(("preset", "zeros_after_trim"), [("consumer", True),
                                                            ("hostprio", False)])
def test_data_trim_and_sanitize_through_the_loop_device(
    workdir: Path, preset: str, zeros_after_trim: bool
) -> None:
    size = SIZE if preset == "consumer" else 2 * SIZE
    data = os.urandom(3 * MIB)
    with cli.running(workdir, preset, size, fob_iops=4000.0) as (sock, dev):
        assert sock.exists() and dev is not None and dev.startswith("/dev/loop")
        assert int(run("blockdev", "--getsize64", dev)) == size
        # a drive is hardware: its server and nbdfuse run as real-time tasks (root)
        for pidfile in ("nbd.pid", "nbdfuse.pid"):
            pid = int((workdir / pidfile).read_text())
            assert os.sched_getscheduler(pid) == os.SCHED_FIFO, pidfile
            assert os.sched_getparam(pid).sched_priority == cli.DRIVE_RT_PRIORITY
        pwrite(dev, 5 * MIB, data)
        pwrite(dev, size - 4096, data[:4096])  # the drive's last, partial page
        assert pread(dev, 5 * MIB, 3 * MIB) == data
        assert pread(dev, size - 4096, 4096) == data[:4096]
        run("blkdiscard", "--offset", str(5 * MIB), "--length", str(MIB), dev)
        got = pread(dev, 5 * MIB, 2 * MIB)
        if zeros_after_trim:
            assert got == bytes(MIB) + data[MIB:2 * MIB]
        else:
            assert got == data[:2 * MIB]
        if zeros_after_trim:  # whole-device zero in chunks, out of order (as QEMU may)
            half = size // 2 // MIB * MIB
            run("blkdiscard", "-z", "--offset", str(half), "--length", str(size - half), dev)
            assert pread(dev, 5 * MIB, MIB) == bytes(MIB) and pread(dev, 6 * MIB, 4096) != \
                bytes(4096)  # the first half still holds data until its own zero
            run("blkdiscard", "-z", "--offset", "0", "--length", str(half), dev)
        else:
            run("blkdiscard", "-z", dev)  # whole-device zero: the model's sanitize
        assert pread(dev, 5 * MIB, 3 * MIB) == bytes(3 * MIB)
        pwrite(dev, 0, data[:MIB])
        assert pread(dev, 0, MIB) == data[:MIB]
        # the drive says up to where its log is complete (truth.complete): the harness's
        # read waits for it to pass this second, and the log then has the last write
        running = SimDrive(workdir, sock, dev).truth(timeout_s=5)
        assert sum(s.host_pages for s in running.seconds) == 768 + 2 + 256
        assert float((workdir / "truth.complete").read_text()) <= time.time()
    assert leftovers(workdir) == []
    assert (workdir / "truth.complete").read_text() == "inf\n"  # stopped: all of it
    log = truth.load(workdir / "truth.jsonl")
    kinds = [e["event"] for e in log.events]
    assert kinds[0] == "start" and kinds[-1] == "stop"
    assert "sanitize" in kinds
    trims = log.events_of("trim")
    assert trims[0]["offset"] == 5 * MIB and trims[0]["invalidated_pages"] == 256
    # every 4 KiB page written is in the log: 3 MiB, then 4 KiB straddling the last two
    # pages (the drive ends 512 bytes into a page), then 1 MiB after the sanitize
    assert sum(s.host_pages for s in log.seconds) == 768 + 2 + 256
    # and every write's reply, no earlier than the model's completion
    assert sum(map(sum, (s.r10ms for s in log.seconds))) == sum(
        s.host_writes for s in log.seconds)
    first = min(s.t for s in log.seconds if s.host_writes)
    assert min(s.t for s in log.seconds if s.r10ms) >= first
    assert log.events_of("stop")[0]["totals"]["host_pages"] == 256  # counters reset
    assert not (workdir / "data.img").exists()


def test_bad_start_is_refused_and_leaves_nothing(workdir: Path) -> None:
    with pytest.raises(SimdriveError, match="too small"):
        cli.start_drive(workdir, "sandforce", "64M")
    with pytest.raises(ValueError, match="unknown preset"):
        cli.start_drive(workdir, "nope", "1G")
    with pytest.raises(SimdriveError, match="multiple of the 4096"):
        cli.start_drive(workdir, "enterprise", "1831491s", sector_size=4096)
    assert leftovers(workdir) == []
    assert cli.main(["start", "--preset", "enterprise", "--size", "12x", "--dir",
                     str(workdir)]) == 1


def test_4kn_drive_double_start_and_host_sanitize(workdir: Path) -> None:
    with cli.running(workdir, "enterprise", "1831488s", sector_size=4096) as (_, dev):
        assert dev is not None
        assert run("blockdev", "--getss", dev).strip() == "4096"
        with pytest.raises(SimdriveError, match="already runs"):
            cli.start_drive(workdir, "enterprise", "1831488s")
        pwrite(dev, 8192, b"\x5a" * 8192)
        assert cli.main(["sanitize", "--dir", str(workdir)]) == 0  # host-side secure erase
        assert pread(dev, 8192, 8192) == bytes(8192)
    assert leftovers(workdir) == []
    sanitized = truth.load(workdir / "truth.jsonl").events_of("sanitize")
    assert [e["via"] for e in sanitized] == ["host"]
    assert cli.main(["sanitize", "--dir", str(workdir)]) == 1  # stopped: a clear error
