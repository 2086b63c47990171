"""Where results go: the `SSDRESULTS` partition, or RAM until such a stick appears.

Rules (SPEC "Results on the stick"):

* a FAT (vfat) or exFAT partition labelled ``SSDRESULTS`` is the destination — found by its
  label with ``blkid``, never by guessing the first FAT partition;
* if it is already mounted read-write (the image's init mounts it at boot) that mount is
  used; otherwise it is mounted at ``/run/ssdbench/stick`` (vfat with ``sync``, as the image's
  init mounts it: every write reaches the stick in the order it was made, so a power cut
  leaves a consistent FAT, docs/kiosk.md "Power loss");
* a vfat partition is checked and repaired (``fsck.fat -a``) before it is mounted, here and
  by the image's init (which names the checked device in ``/run/ssdbench/results-checked``):
  a power cut in the middle of a FAT rename leaves two names on the same clusters, and the
  next rename over one of them would free the other's (``Destination.checked``);
* with several such partitions, one already mounted wins, then the one on the boot medium
  (``/run/initramfs/ssdbench-boot-device``), then the first by device name;
* without one, results are kept in RAM under ``/run/ssdbench/ram`` and copied to the stick
  with :func:`copy_pending` when one appears (the UI and kiosk screen say so).

Results live in the ``ssdbench/`` folder of the destination (``Destination.results_dir``).
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

from ssdbench.results import atomic
from ssdbench.system import CommandError, Host

LABEL = "SSDRESULTS"
FSTYPES = ("vfat", "exfat")
STICK_MOUNT = Path("/run/ssdbench/stick")
RAM_ROOT = Path("/run/ssdbench/ram")
BOOT_DEVICE_FILE = "/run/initramfs/ssdbench-boot-device"
CHECKED_FILE = "/run/ssdbench/results-checked"  # rcS: the device fsck.fat checked at boot
FSCK_FAT = "fsck.fat"


@dataclass(frozen=True)
class ResultsPartition:
    device: str  # /dev/sdb2
    fstype: str  # vfat or exfat


@dataclass(frozen=True)
class Destination:
    root: Path  # the mount point (stick) or the RAM folder
    on_stick: bool
    device: str | None
    description: str  # one line for the header / kiosk screen
    checked: bool = False  # fsck.fat checked (and repaired) its FAT before it was mounted

    @property
    def results_dir(self) -> Path:
        return self.root / "ssdbench"


def parse_blkid_export(text: str) -> list[dict[str, str]]:
    """`blkid -o export` output: blocks of KEY=value lines separated by blank lines."""
    blocks: list[dict[str, str]] = []
    current: dict[str, str] = {}
    for raw in text.splitlines():
        line = raw.strip()
        if not line:
            if current:
                blocks.append(current)
                current = {}
            continue
        key, sep, value = line.partition("=")
        if sep:
            current[key] = value
    if current:
        blocks.append(current)
    return blocks


def find_results_partitions(host: Host) -> list[ResultsPartition]:
    """Every FAT/exFAT partition labelled SSDRESULTS (blkid exits 2 when there is none)."""
    result = host.runner.run(
        ["blkid", "-c", "/dev/null", "-o", "export", "-t", f"LABEL={LABEL}"],
        ok_codes=(0, 2), timeout=30,
    )
    found = []
    for block in parse_blkid_export(result.text):
        device, fstype = block.get("DEVNAME"), block.get("TYPE", "")
        if device and fstype in FSTYPES and block.get("LABEL") == LABEL:
            found.append(ResultsPartition(device, fstype))
    return sorted(found, key=lambda p: p.device)


def _unescape_mount_field(field: str) -> str:
    return field.replace("\\040", " ").replace("\\011", "\t").replace("\\134", "\\")


def mount_point(host: Host, device: str) -> tuple[Path, bool] | None:
    """(mount point, read-write) of a device from /proc/mounts, or None."""
    text = host.fs.read_text("/proc/mounts") or ""
    real = os.path.realpath(device)
    for line in text.splitlines():
        fields = line.split()
        if len(fields) < 4:
            continue
        source = _unescape_mount_field(fields[0])
        if source in (device, real) or os.path.realpath(source) == real:
            return Path(_unescape_mount_field(fields[1])), "rw" in fields[3].split(",")
    return None


def _boot_disk(host: Host) -> str | None:
    text = host.fs.read_text(BOOT_DEVICE_FILE)
    return text.strip() or None if text else None


def _rank(host: Host, parts: list[ResultsPartition]) -> list[ResultsPartition]:
    boot = _boot_disk(host)

    def key(p: ResultsPartition) -> tuple[int, int, str]:
        mounted = mount_point(host, p.device)
        on_boot = bool(boot) and p.device.startswith(boot or "\0")
        return (0 if mounted and mounted[1] else 1, 0 if on_boot else 1, p.device)

    return sorted(parts, key=key)


def find_destination(
    host: Host,
    *,
    mount: bool = True,
    stick_mount: Path = STICK_MOUNT,
    ram_root: Path = RAM_ROOT,
) -> Destination:
    """The stick's SSDRESULTS partition (mounted if needed), else the RAM folder."""
    problems = []
    try:
        parts = _rank(host, find_results_partitions(host))
    except CommandError as exc:
        parts = []
        problems.append(f"blkid failed: {exc.reason}")
    for part in parts:
        mounted = mount_point(host, part.device)
        if mounted and mounted[1]:
            checked = (host.fs.read_text(CHECKED_FILE) or "").strip() == part.device
            return Destination(mounted[0], True, part.device,
                               f"results on stick {part.device} ({LABEL}) at {mounted[0]}",
                               checked)
        if mounted:
            problems.append(f"{part.device} is mounted read-only at {mounted[0]}")
            continue
        if not mount:
            continue
        checked = part.fstype == "vfat" and check_fat(host, part.device)
        try:
            stick_mount.mkdir(parents=True, exist_ok=True)
            options = "rw,sync,noatime" if part.fstype == "vfat" else "rw,noatime"
            host.runner.run(
                ["mount", "-t", part.fstype, "-o", options, part.device, str(stick_mount)],
                timeout=60,
            )
        except (CommandError, OSError) as exc:
            problems.append(f"mounting {part.device} failed: {exc}")
            continue
        return Destination(stick_mount, True, part.device,
                           f"results on stick {part.device} ({LABEL}) at {stick_mount}", checked)
    why = "; ".join(problems) if problems else f"no partition labelled {LABEL}"
    return Destination(
        ram_root, False, None,
        f"results held in RAM ({why}): plug in a stick with a FAT partition labelled {LABEL}",
    )


def check_fat(host: Host, device: str) -> bool:
    """``fsck.fat -a -w DEVICE`` (not mounted): repairs what a power cut or a pulled stick
    left (two names on one cluster chain, a file on freed clusters, lost clusters, the dirty
    bit). True when the FAT is now consistent: exit 0 (nothing to do) or 1 (repaired)."""
    try:
        host.runner.run([FSCK_FAT, "-a", "-w", device], ok_codes=(0, 1), timeout=300)
    except CommandError:
        return False  # not repaired (or no fsck.fat): the mirror stays careful
    return True


def sync_destination() -> None:
    """Flush every filesystem (after each stage: a pulled stick loses at most that stage)."""
    os.sync()


def copy_pending(source: Path, dest: Path) -> int:
    """Copy results kept in RAM (source/ssdbench) onto a stick's (dest/ssdbench).

    Files missing on the stick, or of another size or older, are written atomically;
    nothing on the stick is deleted. Returns the number of files copied.
    """
    src_root, dst_root = source / "ssdbench", dest / "ssdbench"
    copied = 0
    if not src_root.is_dir():
        return 0
    for path in sorted(src_root.rglob("*")):
        if not path.is_file() or atomic.is_temp(path.name):
            continue
        target = dst_root / path.relative_to(src_root)
        st = path.stat()
        if target.exists():
            tst = target.stat()
            # FAT keeps mtimes to 2 s: newer by less than that is the same file
            if tst.st_size == st.st_size and tst.st_mtime >= st.st_mtime - 2:
                continue
        atomic.write_bytes(target, path.read_bytes())
        try:
            os.utime(target, (st.st_atime, st.st_mtime))
        except OSError:
            pass  # a stick that refuses times still has the data
        copied += 1
    sync_destination()
    return copied
