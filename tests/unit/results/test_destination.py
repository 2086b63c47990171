from __future__ import annotations

from pathlib import Path

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.results.destination import (
    copy_pending,
    find_destination,
    parse_blkid_export,
)
from ssdbench.system import Host

BLKID = ["blkid", "-c", "/dev/null", "-o", "export", "-t", "LABEL=SSDRESULTS"]
# real `blkid -o export` layout (util-linux 2.38)
TWO = (
    "DEVNAME=/dev/sdb2\nLABEL=SSDRESULTS\nUUID=1A2B-3C4D\nBLOCK_SIZE=512\nTYPE=vfat\n"
    "PARTUUID=5e3f-02\n\nDEVNAME=/dev/sdc1\nLABEL=SSDRESULTS\nUUID=0f\nTYPE=ext4\n\n"
    "DEVNAME=/dev/sdd1\nLABEL=SSDRESULTS\nUUID=77\nTYPE=exfat\n"
)


def host(blkid_out: str, rc: int = 0, mounts: str = "", boot: str | None = None,
         checked: str | None = None) -> Host:
    runner = ReplayRunner().add(BLKID, stdout=blkid_out, returncode=rc)
    files: dict[str, str | None] = {"/proc/mounts": mounts}
    files["/run/initramfs/ssdbench-boot-device"] = boot
    files["/run/ssdbench/results-checked"] = checked
    return Host(runner, ReplayFS(FSRecord(files=files)))


def test_parse_blkid_export() -> None:
    blocks = parse_blkid_export(TWO)
    assert [b["DEVNAME"] for b in blocks] == ["/dev/sdb2", "/dev/sdc1", "/dev/sdd1"]


def test_no_stick_means_ram_and_says_so(tmp_path: Path) -> None:
    dest = find_destination(host("", rc=2), ram_root=tmp_path / "ram")
    assert not dest.on_stick and dest.root == tmp_path / "ram"
    assert "held in RAM" in dest.description and "SSDRESULTS" in dest.description


def test_mounted_stick_is_used_and_ext4_is_ignored(tmp_path: Path) -> None:
    mounts = "/dev/sdd1 /media/my\\040stick exfat rw,relatime 0 0\n"
    dest = find_destination(host(TWO, mounts=mounts), mount=False, ram_root=tmp_path)
    assert dest.on_stick and dest.device == "/dev/sdd1"
    assert dest.results_dir == Path("/media/my stick/ssdbench")


def test_read_only_mount_is_not_a_destination(tmp_path: Path) -> None:
    mounts = "/dev/sdb2 /mnt vfat ro,relatime 0 0\n"
    dest = find_destination(host(TWO, mounts=mounts), mount=False, ram_root=tmp_path)
    # sdd1 not mounted and mounting disabled -> RAM, with the reason
    assert not dest.on_stick and "read-only" in dest.description


def test_unmounted_stick_gets_mounted(tmp_path: Path) -> None:
    h = host(TWO, boot="/dev/sdd")
    mount_argv = ["mount", "-t", "exfat", "-o", "rw,noatime", "/dev/sdd1", str(tmp_path / "m")]
    assert isinstance(h.runner, ReplayRunner)
    h.runner.add(mount_argv)
    dest = find_destination(h, stick_mount=tmp_path / "m", ram_root=tmp_path / "ram")
    assert dest.on_stick and dest.device == "/dev/sdd1"  # on the boot medium: preferred
    assert tuple(mount_argv) in h.runner.calls


def test_a_fat_stick_is_checked_before_it_is_mounted(tmp_path: Path) -> None:
    """fsck.fat -a first (exit 1: it repaired something, still checked); a failed check
    mounts anyway, unchecked (the mirror then leaves a temp beside an equal final file)."""
    for fsck_rc, checked in ((1, True), (0, True), (4, False)):
        h = host(TWO.split("\n\n", maxsplit=1)[0] + "\n")  # the vfat one only
        assert isinstance(h.runner, ReplayRunner)
        h.runner.add(["fsck.fat", "-a", "-w", "/dev/sdb2"], returncode=fsck_rc,
                     stdout="/SSDBENCH/state.json  and\n/SSDBENCH/.state.json.tmp-266-1\n")
        mount_argv = ["mount", "-t", "vfat", "-o", "rw,sync,noatime", "/dev/sdb2",
                      str(tmp_path / "m")]
        h.runner.add(mount_argv)
        dest = find_destination(h, stick_mount=tmp_path / "m", ram_root=tmp_path / "ram")
        assert dest.on_stick and dest.checked is checked, fsck_rc
        assert h.runner.calls.index(("fsck.fat", "-a", "-w", "/dev/sdb2")) < \
            h.runner.calls.index(tuple(mount_argv))


def test_a_stick_the_init_checked_is_checked(tmp_path: Path) -> None:
    mounts = "/dev/sdb2 /mnt/ssdresults vfat rw,sync,noatime 0 0\n"
    dest = find_destination(host(TWO, mounts=mounts, checked="/dev/sdb2\n"), mount=False,
                            ram_root=tmp_path)
    assert dest.on_stick and dest.checked
    dest = find_destination(host(TWO, mounts=mounts), mount=False, ram_root=tmp_path)
    assert dest.on_stick and not dest.checked


def test_copy_pending_copies_new_and_changed_only(tmp_path: Path) -> None:
    ram, stick = tmp_path / "ram", tmp_path / "stick"
    (ram / "ssdbench" / "d1").mkdir(parents=True)
    (ram / "ssdbench" / "d1" / "iops.csv").write_text("time_s,iops\n0,1\n")
    (ram / "ssdbench" / "summary.csv").write_text("x\n")
    assert copy_pending(ram, stick) == 2
    assert (stick / "ssdbench" / "d1" / "iops.csv").read_text() == "time_s,iops\n0,1\n"
    assert copy_pending(ram, stick) == 0
    (ram / "ssdbench" / "summary.csv").write_text("x\ny\n")
    assert copy_pending(ram, stick) == 1
    assert (stick / "ssdbench" / "summary.csv").read_text() == "x\ny\n"
