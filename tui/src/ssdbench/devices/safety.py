"""Which disks must never be written: SPEC "Safety rules".

A disk is protected when it (or one of its partitions)

* is mounted (``mounted:<mountpoint>``; from /proc/self/mountinfo by major:minor, else
  /proc/mounts by source path; /dev/mapper/*, /dev/disk/by-*/*, UUID=, LABEL= resolved
  through the links; dm/md devices followed down their ``slaves/`` to the disks),
* is held by md/dm/LVM (``holder:<name>``, from sysfs ``holders/`` of the disk and of
  each partition),
* is used as swap (``swap``, /proc/swaps),
* holds the results partition (``results-partition``: filesystem label SSDRESULTS),
* is the boot medium (``boot-medium``: holds the filesystem mounted at / or /boot, is
  named by /run/initramfs/ssdbench-boot-device, or by ``ssdbench.boot=`` on
  /proc/cmdline).

Every value is read through HostFS, so a support bundle records it.
"""

from __future__ import annotations

import os.path
from collections.abc import Iterable
from dataclasses import dataclass

from ssdbench.system import HostFS

RESULTS_LABEL = "SSDRESULTS"
BOOT_DEVICE_FILE = "/run/initramfs/ssdbench-boot-device"
BOOT_CMDLINE_KEY = "ssdbench.boot="
BOOT_MOUNTPOINTS = ("/", "/boot", "/boot/efi")

REASON_SWAP = "swap"
REASON_BOOT = "boot-medium"
REASON_RESULTS = "results-partition"


@dataclass(frozen=True)
class Mount:
    source: str
    mountpoint: str
    fstype: str
    maj_min: str | None  # from mountinfo


def _unescape(field: str) -> str:
    """Octal escapes of /proc/mounts and mountinfo (\\040 = space)."""
    out, i = [], 0
    while i < len(field):
        if field[i] == "\\" and i + 3 < len(field) and field[i + 1 : i + 4].isdigit():
            out.append(chr(int(field[i + 1 : i + 4], 8)))
            i += 4
        else:
            out.append(field[i])
            i += 1
    return "".join(out)


def parse_mountinfo(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if "-" not in fields or len(fields) < 7:
            continue
        sep = fields.index("-")
        if sep + 2 >= len(fields):
            continue
        mounts.append(
            Mount(
                source=_unescape(fields[sep + 2]),
                mountpoint=_unescape(fields[4]),
                fstype=fields[sep + 1],
                maj_min=fields[2],
            )
        )
    return mounts


def parse_proc_mounts(text: str) -> list[Mount]:
    mounts = []
    for line in text.splitlines():
        fields = line.split()
        if len(fields) >= 3:
            mounts.append(Mount(_unescape(fields[0]), _unescape(fields[1]), fields[2], None))
    return mounts


def parse_swaps(text: str) -> list[str]:
    """Swap areas from /proc/swaps (the header line skipped)."""
    out = []
    for line in text.splitlines()[1:]:
        fields = line.split()
        if len(fields) >= 2 and fields[1] in ("partition", "file"):
            out.append(_unescape(fields[0]))
    return out


def cmdline_value(cmdline: str, key: str) -> str | None:
    for word in cmdline.split():
        if word.startswith(key):
            return word[len(key) :]
    return None


class BlockTopology:
    """Maps names, paths and major:minor numbers to the whole disks that hold them."""

    def __init__(
        self,
        fs: HostFS,
        disks: Iterable[str],
        by_label: dict[str, str] | None = None,
        by_uuid: dict[str, str] | None = None,
    ) -> None:
        self.fs = fs
        self.disks = set(disks)
        # From lsblk: a system without udev (the appliance's BusyBox mdev) has no
        # /dev/disk/by-label or by-uuid links.
        self.by_label = by_label or {}
        self.by_uuid = by_uuid or {}

    def name_of_majmin(self, maj_min: str) -> str | None:
        target = self.fs.readlink(f"/sys/dev/block/{maj_min}")
        return os.path.basename(target) if target else None

    def resolve_source(self, source: str) -> str | None:
        """A mount/swap source or a boot hint → kernel block device name (or None)."""
        if source.startswith("LABEL=") and source[6:] in self.by_label:
            return self.by_label[source[6:]]
        if source.startswith("UUID=") and source[5:] in self.by_uuid:
            return self.by_uuid[source[5:]]
        for prefix, folder in (("UUID=", "by-uuid"), ("LABEL=", "by-label"),
                               ("PARTUUID=", "by-partuuid"), ("PARTLABEL=", "by-partlabel")):
            if source.startswith(prefix):
                source = f"/dev/disk/{folder}/{source[len(prefix):]}"
                break
        if not source.startswith("/dev/"):
            name = source.strip()
            return name if name and self.fs.exists(f"/sys/class/block/{name}") else None
        path = source
        for _ in range(16):  # follow symlinks through HostFS
            target = self.fs.readlink(path)
            if target is None:
                break
            path = os.path.normpath(os.path.join(os.path.dirname(path), target))
        name = os.path.basename(path)
        if self.fs.exists(f"/sys/class/block/{name}"):
            return name
        return None

    def disks_of(self, name: str, _depth: int = 0) -> set[str]:
        """The whole disks under a block device: itself, a partition's parent, or the
        disks below a dm/md device (through slaves/)."""
        if name in self.disks:
            return {name}
        if _depth > 8:
            return set()
        if self.fs.exists(f"/sys/class/block/{name}/partition"):
            link = self.fs.readlink(f"/sys/class/block/{name}")
            if link:
                parent = os.path.basename(os.path.dirname(link))
                return self.disks_of(parent, _depth + 1) if parent != name else set()
        found: set[str] = set()
        for slave in self.fs.listdir(f"/sys/class/block/{name}/slaves"):
            found |= self.disks_of(slave, _depth + 1)
        return found


@dataclass(frozen=True)
class SafetyFacts:
    """Everything the classification needs, read once for all disks."""

    mounts: tuple[tuple[str, str], ...]  # (disk, mountpoint)
    swaps: frozenset[str]  # disks holding swap
    boot_disks: frozenset[str]
    boot_hint_unresolved: str | None  # a boot hint naming no block device (maybe a serial)
    results_disks: frozenset[str]


def gather(
    fs: HostFS,
    disks: Iterable[str],
    labels: dict[str, str],
    uuids: dict[str, str] | None = None,
) -> SafetyFacts:
    """Read mounts, swaps, boot hints; ``labels`` / ``uuids`` map block names to
    filesystem labels / UUIDs (from lsblk); /dev/disk/by-* links are consulted too."""
    topo = BlockTopology(
        fs,
        disks,
        by_label={label: name for name, label in labels.items()},
        by_uuid={uuid: name for name, uuid in (uuids or {}).items()},
    )
    mountinfo = fs.read_text("/proc/self/mountinfo")
    mounts = (
        parse_mountinfo(mountinfo)
        if mountinfo is not None
        else parse_proc_mounts(fs.read_text("/proc/mounts") or "")
    )
    mounted: list[tuple[str, str]] = []
    boot: set[str] = set()
    for m in mounts:
        names: set[str] = set()
        if m.maj_min and not m.maj_min.startswith("0:"):
            n = topo.name_of_majmin(m.maj_min)
            if n:
                names.add(n)
        if not names and m.source.startswith(("/dev/", "UUID=", "LABEL=")):
            n = topo.resolve_source(m.source)
            if n:
                names.add(n)
        for n in names:
            for disk in topo.disks_of(n):
                mounted.append((disk, m.mountpoint))
                if m.mountpoint in BOOT_MOUNTPOINTS:
                    boot.add(disk)
    swaps: set[str] = set()
    for src in parse_swaps(fs.read_text("/proc/swaps") or ""):
        n = topo.resolve_source(src)
        if n:
            swaps |= topo.disks_of(n)
    unresolved: str | None = None
    hints = [(fs.read_text(BOOT_DEVICE_FILE) or "").strip()]
    hints.append(cmdline_value(fs.read_text("/proc/cmdline") or "", BOOT_CMDLINE_KEY) or "")
    for hint in hints:
        if not hint:
            continue
        n = topo.resolve_source(hint)
        if n:
            boot |= topo.disks_of(n)
        else:
            unresolved = hint
    results: set[str] = set()
    for name, label in labels.items():
        if label == RESULTS_LABEL:
            results |= topo.disks_of(name)
    by_label = topo.resolve_source(f"/dev/disk/by-label/{RESULTS_LABEL}")
    if by_label and fs.readlink(f"/dev/disk/by-label/{RESULTS_LABEL}"):
        results |= topo.disks_of(by_label)
    return SafetyFacts(
        mounts=tuple(dict.fromkeys(mounted)),
        swaps=frozenset(swaps),
        boot_disks=frozenset(boot),
        boot_hint_unresolved=unresolved,
        results_disks=frozenset(results),
    )


def protect_reasons(
    fs: HostFS, facts: SafetyFacts, disk: str, partitions: Iterable[str], serial: str
) -> tuple[str, ...]:
    """The reason codes that protect ``disk`` (empty: not protected)."""
    reasons: list[str] = []
    if disk in facts.boot_disks or (
        facts.boot_hint_unresolved and serial and facts.boot_hint_unresolved == serial
    ):
        reasons.append(REASON_BOOT)
    if disk in facts.results_disks:
        reasons.append(REASON_RESULTS)
    reasons.extend(f"mounted:{mp}" for d, mp in facts.mounts if d == disk)
    if disk in facts.swaps:
        reasons.append(REASON_SWAP)
    for name in (disk, *partitions):
        for holder in fs.listdir(f"/sys/class/block/{name}/holders"):
            reasons.append(f"holder:{holder}")
    return tuple(dict.fromkeys(reasons))
