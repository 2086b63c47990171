"""Boot the host's Debian kernel in QEMU (TCG) with an emulated NVMe drive and run a script.

Minimal on purpose (the full rig is scripts/run-qemu.sh): a busybox initramfs loads the
virtio/9p modules, mounts the host root read-only over 9p, chroots into it (so the guest runs
the host's real nvme-cli, dd and Python) and runs ``job.sh`` from a writable 9p share.
(Not ``cache=loose`` on the host root: with it the chroot lost its /proc mount, and with it
/proc/sysrq-trigger, the power cut of test_ata_emu_qemu.py, 2026-11-27.)
Everything the job writes under ``/run/out`` inside the guest lands in ``share_dir``.

The NVMe drive is a sparse file created here, so the guest may write to it freely.
"""

from __future__ import annotations

import json
import os
import shutil
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ssdbench.system import CommandTimeout, SystemRunner


def _kernel_release() -> str:
    """The newest installed Debian kernel that has its modules (linux-image-amd64)."""
    releases = sorted(
        p.name.removeprefix("vmlinuz-")
        for p in Path("/boot").glob("vmlinuz-*")
        if (Path("/lib/modules") / p.name.removeprefix("vmlinuz-") / "modules.dep").exists()
    )
    if not releases:
        raise RuntimeError("no /boot/vmlinuz-* with /lib/modules: install linux-image-amd64")
    return releases[-1]


KERNEL_RELEASE = _kernel_release()
KERNEL = Path(f"/boot/vmlinuz-{KERNEL_RELEASE}")
MODULES = Path(f"/lib/modules/{KERNEL_RELEASE}")
# Only what is needed to reach the host root; nvme is loaded later by the host's modprobe.
INITRAMFS_MODULES = (
    "kernel/drivers/virtio/virtio_ring.ko",
    "kernel/drivers/virtio/virtio.ko",
    "kernel/drivers/virtio/virtio_pci_legacy_dev.ko",
    "kernel/drivers/virtio/virtio_pci_modern_dev.ko",
    "kernel/drivers/virtio/virtio_pci.ko",
    "kernel/net/9p/9pnet.ko",
    "kernel/net/9p/9pnet_virtio.ko",
    "kernel/fs/netfs/netfs.ko",
    "kernel/fs/fscache/fscache.ko",
    "kernel/fs/9p/9p.ko",
)

INIT = """#!/bin/busybox sh
/bin/busybox --install -s /bin
mount -t proc proc /proc
mount -t sysfs sys /sys
mount -t devtmpfs dev /dev
for m in {modules}; do insmod /mods/$m; done
mount -t 9p -o trans=virtio,version=9p2000.L,ro hostroot /hostroot
R=/hostroot
mount -t proc proc $R/proc
mount -t sysfs sys $R/sys
mount -t devtmpfs dev $R/dev
mount -t tmpfs run $R/run
mkdir -p $R/run/out $R/run/tmp
mount -t 9p -o trans=virtio,version=9p2000.L out $R/run/out
chroot $R /bin/sh -c 'export TMPDIR=/run/tmp; modprobe nvme; udevadm settle 2>/dev/null; \
  i=0; while [ ! -e {wait_for} ] && [ $i -lt 100 ]; do sleep 0.1; i=$((i+1)); done; \
  cd /run/out && /bin/sh /run/out/job.sh >/run/out/job.log 2>&1; echo $? >/run/out/job.rc'
sync
echo SSDBENCH-GUEST-DONE
poweroff -f
"""


@dataclass(frozen=True)
class GuestRun:
    returncode: int | None  # the job's exit code; None when it never finished
    share_dir: Path
    console: str

    def read(self, name: str) -> str:
        return (self.share_dir / name).read_text(encoding="utf-8", errors="replace")

    def erase_record(self, out: str) -> dict[str, Any]:
        """The record a guest erase script (guest_*_erase.py) wrote to ``out``/record.json;
        its error.txt, or the job's log, as the failure when there is none."""
        folder = self.share_dir / out
        assert not (folder / "error.txt").exists(), (folder / "error.txt").read_text()
        assert (folder / "record.json").exists(), self.read("job.log")[-3000:]
        data: dict[str, Any] = json.loads((folder / "record.json").read_text())
        return data


def _cpio_newc(entries: list[tuple[str, int, bytes]]) -> bytes:
    """An uncompressed newc cpio archive of (name, mode, data) entries."""
    out = bytearray()

    def add(name: str, mode: int, data: bytes, ino: int) -> None:
        name_b = name.encode() + b"\0"
        fields = [ino, mode, 0, 0, 1, 0, len(data), 0, 0, 0, 0, len(name_b), 0]
        out.extend(b"070701" + b"".join(f"{v:08X}".encode() for v in fields))
        out.extend(name_b)
        out.extend(b"\0" * (-len(out) % 4))
        out.extend(data)
        out.extend(b"\0" * (-len(out) % 4))

    for ino, (name, mode, data) in enumerate(entries, start=1):
        add(name, mode, data, ino)
    add("TRAILER!!!", 0, b"", 0)
    return bytes(out)


def build_initramfs(path: Path, wait_for: str = "/dev/nvme0n1") -> None:
    busybox = shutil.which("busybox")
    if busybox is None:
        raise RuntimeError("busybox-static is not installed")
    d = stat.S_IFDIR | 0o755
    entries: list[tuple[str, int, bytes]] = [
        (name, d, b"") for name in ("bin", "proc", "sys", "dev", "hostroot", "mods")
    ]
    entries.append(("bin/busybox", stat.S_IFREG | 0o755, Path(busybox).read_bytes()))
    names = []
    for rel in INITRAMFS_MODULES:
        base = Path(rel).name
        names.append(base)
        entries.append((f"mods/{base}", stat.S_IFREG | 0o644, (MODULES / rel).read_bytes()))
    init = INIT.replace("{modules}", " ".join(names)).replace("{wait_for}", wait_for).encode()
    entries.append(("init", stat.S_IFREG | 0o755, init))
    path.write_bytes(_cpio_newc(entries))


def run_guest(
    job: str,
    work_dir: Path,
    *,
    nvme_size_mib: int = 64,
    logical_block_size: int = 512,
    serial: str = "SSDB0001",
    timeout_s: float = 300.0,
    cpu: str = "max",
    nbd_nvme: tuple[tuple[str, str], ...] = (),
    extra_qemu: tuple[str, ...] = (),
) -> GuestRun:
    """Boot, run ``job`` (a /bin/sh script, cwd = the share) in the guest, power off.

    ``nvme_size_mib=0``: no NVMe drive (the guest does not wait for one). ``nbd_nvme``:
    more NVMe drives, each (an NBD server's unix socket, its serial): a simulated SSD
    (scripts/simdrive start) the guest sees as /dev/nvmeNn1 after the first. ``extra_qemu``:
    more QEMU arguments (USB or SCSI drives; the job loads their drivers)."""
    work_dir.mkdir(parents=True, exist_ok=True)
    share = work_dir / "share"
    share.mkdir(exist_ok=True)
    (share / "job.sh").write_text(job, encoding="utf-8")
    initramfs = work_dir / "initramfs.cpio"
    build_initramfs(initramfs, "/dev/nvme0n1" if nvme_size_mib else "/dev/null")
    disk = work_dir / "nvme.img"
    with open(disk, "wb") as f:
        f.truncate(nvme_size_mib * 1024 * 1024)
    nvme = [
        "-drive", f"file={disk},if=none,id=nv0,format=raw",
        "-device",
        f"nvme,serial={serial},drive=nv0,logical_block_size={logical_block_size},"
        f"physical_block_size={logical_block_size}",
    ] if nvme_size_mib else []
    for n, (socket, nbd_serial) in enumerate(nbd_nvme, start=1):
        nvme += ["-drive", f"file=nbd:unix:{socket},if=none,id=nv{n},format=raw,"
                           "cache=none,discard=unmap",
                 "-device", f"nvme,serial={nbd_serial},drive=nv{n}"]
    argv = [
        "qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-cpu", cpu, "-m", "1024", "-smp", "1",
        "-nographic", "-no-reboot", "-nodefaults", "-serial", "stdio",
        "-kernel", str(KERNEL), "-initrd", str(initramfs),
        "-append", "console=ttyS0 panic=-1 quiet loglevel=3",
        *nvme,
        *extra_qemu,
        "-virtfs", "local,path=/,mount_tag=hostroot,security_model=none,readonly=on",
        "-virtfs", f"local,path={share},mount_tag=out,security_model=none",
    ]
    runner = SystemRunner()
    try:
        res = runner.run(argv, timeout=timeout_s)
        console = res.text
    except CommandTimeout as exc:
        console = exc.stdout.decode("utf-8", errors="replace")
    rc_file = share / "job.rc"
    rc = int(rc_file.read_text().strip()) if rc_file.exists() else None
    return GuestRun(rc, share, console)


def cleanup(work_dir: Path) -> None:
    if work_dir.exists():
        shutil.rmtree(work_dir)
    os.sync()
