"""Kiosk results in RAM, mirrored onto the stick: seeded from it, copied at each stage, the
stick pulled (noticed from sysfs or a failed write, stale mount dropped) and plugged back
(found again by label with blkid and mounted)."""

from __future__ import annotations

import json
import threading
import time
from pathlib import Path

from ssdbench.devices.bundle import FSRecord, ReplayFS, ReplayRunner
from ssdbench.kiosk.mirror import StickMirror, remove_torn
from ssdbench.results.destination import Destination, find_destination
from ssdbench.system import Host

BLKID = ["blkid", "-c", "/dev/null", "-o", "export", "-t", "LABEL=SSDRESULTS"]
# real `blkid -o export` layout (util-linux 2.38): the stick back as sdb after a pull
BACK_AS_SDB = "DEVNAME=/dev/sdb2\nLABEL=SSDRESULTS\nUUID=1A2B-3C4D\nBLOCK_SIZE=512\nTYPE=vfat\n"


class Rig:
    def __init__(self, tmp: Path) -> None:
        self.first = tmp / "mnt-ssdresults"  # where rcS mounted /dev/sda2
        self.second = tmp / "run-stick"  # where find_destination mounts it when it is back
        self.ram = tmp / "ram"
        self.record = FSRecord(
            files={"/proc/mounts": f"/dev/sda2 {self.first} vfat rw,noatime 0 0\n",
                   "/run/initramfs/ssdbench-boot-device": None},
            exists={"/sys/class/block/sda2": True},
        )
        self.runner = ReplayRunner()
        self.runner.add(["umount", "-l", str(self.first)])
        self.runner.add(BLKID, returncode=2)  # first: nothing labelled SSDRESULTS
        self.runner.add(BLKID, stdout=BACK_AS_SDB)  # then: the stick is back
        self.runner.add(["mount", "-t", "vfat", "-o", "rw,sync,noatime", "/dev/sdb2",
                         str(self.second)])
        self.host = Host(self.runner, ReplayFS(self.record))
        self.lines: list[str] = []
        stick = Destination(self.first, True, "/dev/sda2", "results on stick /dev/sda2")
        self.mirror = StickMirror(self.host, self.ram, stick, self.lines.append,
                                  find=lambda h: find_destination(
                                      h, stick_mount=self.second, ram_root=self.ram))

    def pull(self) -> None:
        self.record.exists["/sys/class/block/sda2"] = False


def _write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_seed_reads_the_stick_and_drops_torn_copies(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    journal = {"schema": 1, "drives": {"S1": {"state": "running"}}}
    _write(rig.first / "ssdbench/state.json", json.dumps(journal))
    _write(rig.first / "ssdbench/d1/trim/run.json", "{}")
    _write(rig.first / "ssdbench/d1/trim/.run.json.tmp-412", '{"sta')  # torn by a power cut
    assert rig.mirror.seed() == 2
    assert json.loads((rig.ram / "ssdbench/state.json").read_text()) == journal
    assert not (rig.first / "ssdbench/d1/trim/.run.json.tmp-412").exists()
    assert any("torn" in line for line in rig.lines)
    # what came from the stick is not copied back
    assert rig.mirror.sync() == 0


def test_changes_go_to_the_stick_and_wait_in_ram_while_it_is_pulled(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.mirror.seed()
    ram = rig.ram / "ssdbench"
    _write(ram / "state.json", '{"a": 1}')
    _write(ram / "d1/trim/run.json", '{"state": "running"}')
    assert rig.mirror.sync() == 2
    assert (rig.first / "ssdbench/d1/trim/run.json").read_text() == '{"state": "running"}'
    # same size, rewritten: the memo (not FAT's 2 s mtime) sees the change
    _write(ram / "state.json", '{"a": 2}')
    assert rig.mirror.sync() == 1
    assert (rig.first / "ssdbench/state.json").read_text() == '{"a": 2}'

    rig.pull()
    _write(ram / "d1/trim/torture.csv", "1,100\n")
    _write(ram / "state.json", '{"a": 3}')
    assert rig.mirror.sync() == 0  # noticed gone; blkid finds nothing yet
    assert rig.mirror.on_stick() is None
    assert ("umount", "-l", str(rig.first)) in rig.runner.calls
    assert any(line.startswith("stick gone (removed)") for line in rig.lines)
    assert not (rig.first / "ssdbench/d1/trim/torture.csv").exists()

    # plugged back: found by its label as sdb2, mounted, everything copied
    assert rig.mirror.sync() == 3
    assert rig.mirror.on_stick() == f"results on stick /dev/sdb2 (SSDRESULTS) at {rig.second}"
    assert (rig.second / "ssdbench/d1/trim/torture.csv").read_text() == "1,100\n"
    assert (rig.second / "ssdbench/state.json").read_text() == '{"a": 3}'
    assert any(line.startswith("stick back") for line in rig.lines)


def test_a_failed_write_means_the_stick_is_gone_and_never_raises(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.mirror.seed()
    _write(rig.ram / "ssdbench/d1/run.json", "{}")
    rig.first.mkdir()
    rig.first.joinpath("ssdbench").write_text("not a folder")  # every write there fails
    assert rig.mirror.sync() == 0
    assert rig.mirror.on_stick() is None
    assert any(line.startswith("stick gone (writing failed") for line in rig.lines)


def test_background_copies_on_request_and_close_syncs_last(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.mirror.seed()
    rig.mirror.start()
    _write(rig.ram / "ssdbench/state.json", "{}")
    rig.mirror.request()
    deadline = time.monotonic() + 10
    while not (rig.first / "ssdbench/state.json").exists():
        assert time.monotonic() < deadline, rig.lines
        time.sleep(0.01)
    _write(rig.ram / "ssdbench/index.html", "<html></html>")
    assert rig.mirror.close() == 1
    assert (rig.first / "ssdbench/index.html").is_file()
    assert "results copied to the stick (1 files)" in rig.lines


def test_wait_for_stick_until_it_is_back_or_cancelled(tmp_path: Path) -> None:
    rig = Rig(tmp_path)
    rig.mirror.seed()
    _write(rig.ram / "ssdbench/summary.csv", "drive\n")
    rig.pull()
    rig.mirror.sync()  # gone; blkid finds nothing
    cancel = threading.Event()
    assert rig.mirror.wait_for_stick(cancel, poll_s=0.01)  # the second blkid finds sdb2
    assert (rig.second / "ssdbench/summary.csv").read_text() == "drive\n"
    assert any("waiting for the SSDRESULTS stick" in line for line in rig.lines)

    never = Rig(tmp_path / "never")
    never.runner = ReplayRunner().add(["umount", "-l", str(never.first)]).add(BLKID, returncode=2)
    never.mirror.host = Host(never.runner, ReplayFS(never.record))
    never.pull()
    cancel.set()
    assert not never.mirror.wait_for_stick(cancel, poll_s=0.01)


def test_remove_torn_leaves_a_temp_that_is_its_final_file(tmp_path: Path) -> None:
    """A power cut in the middle of a FAT rename can leave the temp name and the final name on
    the same clusters (seen in QEMU: docs/kiosk.md, "Power loss"): deleting the temp would
    free the final file's clusters. Same bytes: left; other bytes: a torn copy, deleted."""
    _write(tmp_path / "trim/run.json", '{"state": "done"}\n')
    _write(tmp_path / "trim/.run.json.tmp-412", '{"state": "done"}\n')
    _write(tmp_path / "trim/fill.csv", "time_s,mib_s\n0,1\n")
    _write(tmp_path / "trim/.fill.csv.tmp-412", "time_s,mib_s\n0,")
    _write(tmp_path / "trim/.gone.csv.tmp-412", "x")  # its final file never made it
    assert remove_torn(tmp_path) == ([tmp_path / "trim/.fill.csv.tmp-412",
                                      tmp_path / "trim/.gone.csv.tmp-412"], [])
    assert (tmp_path / "trim/.run.json.tmp-412").exists()
    assert (tmp_path / "trim/run.json").read_text() == '{"state": "done"}\n'


def test_remove_torn_on_a_checked_fat(tmp_path: Path) -> None:
    """After fsck.fat (the image's init runs it before the mount) no two names share clusters:
    a temp with its final file's bytes is a plain copy (deleted), and an empty final file
    beside a non-empty temp is a pair fsck.fat parted by emptying the final name (the temp,
    fsynced before its rename began, is put back). A torn temp of a file that never made it
    is still deleted, never promoted (tests/integration/test_fat_power_cut.py on real FATs)."""
    _write(tmp_path / "trim/run.json", '{"state": "done"}\n')
    _write(tmp_path / "trim/.run.json.tmp-412", '{"state": "done"}\n')
    _write(tmp_path / "state.json", "")
    _write(tmp_path / ".state.json.tmp-266-1", '{"drives": {}}\n')
    _write(tmp_path / "trim/.gone.csv.tmp-412", "time_s,mib")
    assert remove_torn(tmp_path, checked=True) == (
        [tmp_path / "trim/.gone.csv.tmp-412", tmp_path / "trim/.run.json.tmp-412"],
        [tmp_path / "state.json"])
    assert (tmp_path / "state.json").read_text() == '{"drives": {}}\n'
    assert sorted(p.name for p in tmp_path.rglob("*") if p.is_file()) == ["run.json",
                                                                          "state.json"]


def test_remove_torn_keeps_real_dotfiles(tmp_path: Path) -> None:
    _write(tmp_path / ".hidden", "x")
    _write(tmp_path / "a/.b.csv.tmp-7", "x")
    assert remove_torn(tmp_path) == ([tmp_path / "a/.b.csv.tmp-7"], [])
    assert (tmp_path / ".hidden").exists()
