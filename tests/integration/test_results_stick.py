"""A real FAT partition labelled SSDRESULTS on a loop device is found, mounted and used."""

from __future__ import annotations

import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from ssdbench.results.destination import (
    copy_pending,
    find_destination,
    find_results_partitions,
)
from ssdbench.system import live_host
from tests.conftest import require_root


@pytest.fixture
def fat_stick(tmp_path: Path) -> Iterator[str]:
    require_root()
    image = Path("/dev/shm") / f"ssdbench-stick-{tmp_path.name}.img"
    subprocess.run(["truncate", "-s", "40M", str(image)], check=True)
    subprocess.run(["mkfs.vfat", "-F", "32", "-n", "SSDRESULTS", str(image)], check=True,
                   capture_output=True)
    dev = subprocess.run(["losetup", "-f", "--show", str(image)], check=True,
                         capture_output=True, text=True).stdout.strip()
    try:
        yield dev
    finally:
        subprocess.run(["umount", dev], check=False, capture_output=True)
        subprocess.run(["losetup", "-d", dev], check=False)
        image.unlink(missing_ok=True)


def vfat_supported() -> bool:
    return any(line.split()[-1] == "vfat" for line in Path("/proc/filesystems").read_text().splitlines())


def test_stick_found_by_label_and_used_or_reported(fat_stick: str, tmp_path: Path) -> None:
    """blkid finds the partition by its label. Where the kernel has vfat it is mounted and
    written; where it has not (this CI sandbox), results stay in RAM and the description
    names the device and the mount failure. The mount itself is also tested in QEMU (e2e)."""
    host = live_host()
    assert fat_stick in [p.device for p in find_results_partitions(host)]
    ram = tmp_path / "ram"
    (ram / "ssdbench" / "drive").mkdir(parents=True)
    (ram / "ssdbench" / "drive" / "run.json").write_text("{}\n")
    dest = find_destination(host, stick_mount=tmp_path / "stick", ram_root=ram)
    try:
        if not vfat_supported():
            assert not dest.on_stick and dest.root == ram
            assert f"mounting {fat_stick} failed" in dest.description
            return
        assert dest.on_stick, dest.description
        if dest.device == fat_stick:  # a developer machine may have other SSDRESULTS sticks
            assert copy_pending(ram, dest.root) == 1
            assert (dest.results_dir / "drive" / "run.json").read_text() == "{}\n"
            again = find_destination(host, stick_mount=tmp_path / "other", ram_root=ram)
            assert again.root == tmp_path / "stick"  # already mounted: reused, not remounted
    finally:
        subprocess.run(["umount", str(tmp_path / "stick")], check=False, capture_output=True)
