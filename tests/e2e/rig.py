"""The e2e rig: boot the dev image in QEMU through scripts/run-qemu.sh and read what happened.

Every boot gets its own work directory (drives, the stick copy, serial logs, results), a
**bystander** drive filled with a known pattern that nothing may touch, and checksums of the
stick's boot partition before and after, so each test can assert both were left alone.
"""

from __future__ import annotations

import hashlib
import json
import re
import socket
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssdbench.system import SystemRunner

REPO = Path(__file__).resolve().parents[2]
RUN_QEMU = REPO / "scripts" / "run-qemu.sh"
BUILD_DEV_IMAGE = REPO / "scripts" / "build-dev-image.sh"
DEV_IMAGE_DIR = REPO / "build" / "dev-image"
DEV_IMAGE = DEV_IMAGE_DIR / "ssdbench-dev.img"
# the Secure Boot edition (Debian's signed shim and GRUB; scripts/build-secure-boot-stick.sh)
DEV_IMAGE_SB = DEV_IMAGE_DIR / "ssdbench-dev-sb.img"

BYSTANDER_SERIAL = "SSDBBYSTANDER01"
BYSTANDER_BYTES = 64 * 1024 * 1024
BOOT_TIMEOUT_S = 420
# the kiosk powers the guest off at the end and mirrors its lines on the serial console
KIOSK_APPEND = "ssdbench.poweroff=1 ssdbench.mirror=ttyS0"
CMD_BEGIN = "=== SSDBENCH-CMD-BEGIN ==="
_CMD_END = re.compile(r"^=== SSDBENCH-CMD-END rc=(\d+) uptime=([\d.]+) ===$", re.M)
_SECTION = re.compile(r"^--- ([\w.-]+) ---$", re.M)
_KERNEL_LINE = re.compile(r"^\[\s*\d+\.\d+\] ")


def build_dev_image() -> Path:
    """Build (or reuse, when its inputs are unchanged) the dev image."""
    SystemRunner().run([str(BUILD_DEV_IMAGE)], timeout=3600)
    return DEV_IMAGE


def write_pattern(path: Path, size: int) -> str:
    """Fill ``path`` with a recognisable, position-dependent pattern; return its sha256."""
    digest = hashlib.sha256()
    block = 1024 * 1024
    with path.open("wb") as f:
        for i in range(size // block):
            chunk = (f"ssdbench-bystander block {i:08d} ".encode() * 40000)[:block]
            f.write(chunk)
            digest.update(chunk)
    return digest.hexdigest()


def sha256_file(path: Path, offset: int = 0, length: int | None = None) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as f:
        f.seek(offset)
        left = length
        while left is None or left > 0:
            want = 1024 * 1024 if left is None else min(left, 1024 * 1024)
            chunk = f.read(want)
            if not chunk:
                break
            digest.update(chunk)
            if left is not None:
                left -= len(chunk)
    return digest.hexdigest()


@dataclass(frozen=True)
class Partition:
    number: int
    start_bytes: int
    size_bytes: int
    type: str


def partitions(image: Path) -> list[Partition]:
    out = SystemRunner().run(["sfdisk", "--json", str(image)], timeout=30).text
    table = json.loads(out)["partitiontable"]
    sector = int(table.get("sectorsize", 512))
    return [
        Partition(i + 1, int(p["start"]) * sector, int(p["size"]) * sector, str(p["type"]))
        for i, p in enumerate(table["partitions"])
    ]


QmpCommand = Mapping[str, Any]


@dataclass(frozen=True)
class QmpAt:
    """Send QMP commands the first time a serial console line matches ``pattern`` (a
    regular expression). ``commands`` is a list, or a function of the match and the serial
    text so far that returns one (e.g. to pick the device by what the guest printed)."""

    pattern: str
    commands: Sequence[QmpCommand] | Callable[[re.Match[str], str], Sequence[QmpCommand]]


@dataclass(frozen=True)
class QmpFired:
    """What a :class:`QmpAt` did: when (seconds since QEMU start), the line, the replies."""

    pattern: str
    line: str
    at_s: float
    commands: tuple[QmpCommand, ...]
    replies: tuple[dict[str, Any], ...]


def qmp(sock_path: Path, commands: Sequence[QmpCommand], timeout_s: float = 30.0
        ) -> list[dict[str, Any]]:
    """Run QMP commands on QEMU's monitor socket; return each command's reply (``return``
    or ``error``; asynchronous events in between are skipped)."""
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        sock.settimeout(timeout_s)
        sock.connect(str(sock_path))
        reader = sock.makefile("r", encoding="utf-8")

        def reply() -> dict[str, Any]:
            while True:
                line = reader.readline()
                if not line:
                    raise ConnectionError(f"QMP socket {sock_path} closed")
                msg: dict[str, Any] = json.loads(line)
                if "return" in msg or "error" in msg:
                    return msg

        greeting = json.loads(reader.readline())
        assert "QMP" in greeting, greeting
        replies = []
        for cmd in [{"execute": "qmp_capabilities"}, *commands]:
            sock.sendall(json.dumps(cmd).encode() + b"\n")
            replies.append(reply())
        return replies[1:]


def nvme_hot_add(qemu_id: str, image: Path, serial: str, port: str,
                 iops: int | None = None) -> list[QmpCommand]:
    """QMP commands that plug an NVMe drive backed by ``image`` (a raw file) into the empty
    root port ``port`` (run-qemu.sh --hotplug-ports): the backing node first, then the
    device. ``iops``: reads and writes throttled to that many a second (QEMU's Format NVM
    is instant whatever the limit; the erase's marker writes and read-backs are not), so an
    erase lasts long enough to pull the drive in its middle."""
    node: dict[str, Any] = {"driver": "raw", "node-name": f"{qemu_id}-blk", "discard": "unmap",
                            "file": {"driver": "file", "filename": str(image)}}
    cmds: list[QmpCommand] = []
    if iops is not None:
        cmds.append({"execute": "object-add", "arguments": {
            "qom-type": "throttle-group", "id": f"{qemu_id}-tg",
            "limits": {"iops-total": iops}}})
        node = {"driver": "throttle", "node-name": f"{qemu_id}-blk",
                "throttle-group": f"{qemu_id}-tg", "file": {**node, "node-name": f"{qemu_id}-raw"}}
    cmds.append({"execute": "blockdev-add", "arguments": node})
    cmds.append({"execute": "device_add", "arguments": {
        "driver": "nvme", "id": qemu_id, "drive": f"{qemu_id}-blk", "bus": port,
        "serial": serial}})
    return cmds


@dataclass(frozen=True)
class Boot:
    """One finished QEMU boot."""

    workdir: Path
    returncode: int
    serial: str
    serial_times: str
    results: Path
    bystander_sha_before: str
    bystander_sha_after: str
    boot_partition_sha_before: str
    boot_partition_sha_after: str
    qemu_argv: tuple[str, ...] = field(default=())
    qmp_fired: tuple[QmpFired, ...] = field(default=())

    @property
    def ready(self) -> bool:
        return "ssdbench ready" in self.serial

    @property
    def cmd_rc(self) -> int | None:
        m = _CMD_END.search(self.serial)
        return int(m.group(1)) if m else None

    @property
    def cmd_output(self) -> str:
        """What ssdbench.cmd printed (kernel messages interleaved on ttyS0 removed)."""
        start = self.serial.find(CMD_BEGIN)
        end = _CMD_END.search(self.serial)
        assert start >= 0 and end is not None, f"no command markers on the serial console:\n{self.tail()}"
        body = self.serial[start + len(CMD_BEGIN) : end.start()]
        return "\n".join(line for line in body.splitlines() if not _KERNEL_LINE.match(line))

    def section(self, name: str) -> str:
        """A ``--- name ---`` section of the command output (see the e2e guest script)."""
        out = self.cmd_output
        marks = list(_SECTION.finditer(out))
        for i, m in enumerate(marks):
            if m.group(1) == name:
                end = marks[i + 1].start() if i + 1 < len(marks) else len(out)
                return out[m.end() : end].strip("\n")
        raise AssertionError(f"no section {name!r} in the guest output:\n{out[-3000:]}")

    def drive_dir(self, serial: str) -> Path:
        """The one results folder of the drive with ``serial`` on the stick's copy."""
        root = self.results / "ssdbench"
        found = sorted(root.glob(f"*_{serial}"))
        assert len(found) == 1, (serial, sorted(p.name for p in root.iterdir()), self.tail())
        return found[0]

    def seconds_until(self, needle: str) -> float:
        """Seconds from QEMU start until the first serial line containing ``needle``."""
        for line in self.serial_times.splitlines():
            stamp, _, text = line.strip().partition(" ")
            if needle in text:
                return float(stamp)
        raise AssertionError(f"{needle!r} never appeared on the serial console")

    def tail(self, n: int = 60) -> str:
        return "\n".join(self.serial.splitlines()[-n:])


def boot(
    workdir: Path,
    *,
    uefi: bool = False,
    secure_boot: bool = False,
    nvme: tuple[str, ...] = (),
    sata: tuple[str, ...] = (),
    cmd: str | None = None,
    entry: str | None = None,
    append: str | None = None,
    put: tuple[Path, ...] = (),
    kiosk_config: Path | None = None,
    image: Path = DEV_IMAGE,
    timeout_s: int = BOOT_TIMEOUT_S,
    qmp_at: tuple[QmpAt, ...] = (),
    nvme_hotplug: bool = False,
    hotplug_ports: int = 0,
    direct: bool = False,
    net: bool = False,
) -> Boot:
    """Boot ``image`` as a USB stick with the given drives plus a patterned bystander SATA
    drive (not selected by anything), wait for power-off, and collect the evidence.

    ``qmp_at``: QMP commands sent when a serial line first matches (e.g. ``device_del`` of a
    drive mid-run); ``secure_boot``: OVMF with Secure Boot enforcing and Microsoft's keys
    (run-qemu.sh --secure-boot; pass ``image=DEV_IMAGE_SB``); ``nvme_hotplug``: NVMe
    drives behind PCIe root ports, so they can be unplugged; ``hotplug_ports``: that many empty PCIe root ports (hotplug0, ...) for drives
    added later with QMP (:func:`nvme_hot_add`); ``direct``: the stick's kernel started by QEMU (run-qemu.sh --direct: no
    firmware, no GRUB; for tests about what follows the boot); ``net``: a NIC on QEMU's
    user network (the host's 127.0.0.1 is 10.0.2.2 to the guest)."""
    workdir.mkdir(parents=True, exist_ok=True)
    bystander = workdir / "bystander.img"
    bystander_sha = write_pattern(bystander, BYSTANDER_BYTES)
    base = [
        str(RUN_QEMU), "--batch", "--image", str(image), "--workdir", str(workdir),
        "--timeout", str(timeout_s),
    ]
    if uefi:
        base.append("--uefi")
    if secure_boot:
        base.append("--secure-boot")
    prepare = [*base, "--prepare-only"]
    if cmd is not None:
        prepare += ["--cmd", cmd]
    if entry is not None:
        prepare += ["--entry", entry]
    if append is not None:
        prepare += ["--append", append]
    for path in put:
        prepare += ["--put", str(path)]
    if kiosk_config is not None:
        prepare += ["--kiosk-config", str(kiosk_config)]
    argv = [*base, "--keep-stick"]
    if nvme_hotplug:
        argv.append("--nvme-hotplug")
    if hotplug_ports:
        argv += ["--hotplug-ports", str(hotplug_ports)]
    if direct:
        argv.append("--direct")
    if net:
        argv.append("--net")
    for spec in nvme:
        argv += ["--nvme", spec]
    for spec in sata:
        argv += ["--sata", spec]
    argv += ["--sata", f"file={bystander},serial={BYSTANDER_SERIAL},model=ssdbench bystander"]
    runner = SystemRunner()
    runner.run(prepare, timeout=120)
    stick = workdir / "stick.img"
    boot_part = partitions(stick)[0]
    boot_before = sha256_file(stick, boot_part.start_bytes, boot_part.size_bytes)
    if qmp_at:
        returncode, fired = _run_with_triggers(argv, workdir, qmp_at, timeout_s + 60)
    else:
        returncode = runner.run(argv, ok_codes=range(256), timeout=timeout_s + 60).returncode
        fired = ()
    return Boot(
        workdir=workdir,
        returncode=returncode,
        serial=(workdir / "serial.log").read_text(errors="replace"),
        serial_times=(workdir / "serial-times.log").read_text(errors="replace"),
        results=workdir / "results",
        bystander_sha_before=bystander_sha,
        bystander_sha_after=sha256_file(bystander),
        boot_partition_sha_before=boot_before,
        boot_partition_sha_after=sha256_file(stick, boot_part.start_bytes, boot_part.size_bytes),
        qemu_argv=tuple(argv),
        qmp_fired=fired,
    )


def boot_kiosk(workdir: Path, config: str, **kwargs: Any) -> Boot:
    """``boot`` of the Kiosk entry with ``config`` as the stick's ssdbench.toml (kept as
    workdir/ssdbench.toml; QEMU's files in workdir/qemu) and KIOSK_APPEND."""
    workdir.mkdir(parents=True, exist_ok=True)
    path = workdir / "ssdbench.toml"
    path.write_text(config)
    return boot(workdir / "qemu", entry="kiosk", append=KIOSK_APPEND, kiosk_config=path,
                **kwargs)


def _run_with_triggers(argv: list[str], workdir: Path, triggers: tuple[QmpAt, ...],
                       timeout_s: float) -> tuple[int, tuple[QmpFired, ...]]:
    """Run QEMU (through run-qemu.sh) while watching serial-times.log for the triggers."""
    proc = SystemRunner().stream(argv, ok_codes=range(256))
    finished = threading.Event()
    outcome: dict[str, int] = {}

    def wait() -> None:
        try:
            outcome["rc"] = proc.wait().returncode
        finally:
            finished.set()

    threading.Thread(target=wait, daemon=True).start()
    pending = list(triggers)
    fired: list[QmpFired] = []
    times = workdir / "serial-times.log"
    deadline = time.monotonic() + timeout_s
    while pending and not finished.is_set() and time.monotonic() < deadline:
        # bytes, split at "\n" only: read_text() and splitlines() also break a line at a
        # lone "\r" inside it (GRUB's messages start with one), which leaves a part without
        # its time stamp
        raw = times.read_bytes() if times.is_file() else b""
        text = raw.decode(errors="replace")
        for trig in list(pending):
            for line in text.split("\n"):
                stamp, _, body = line.strip().partition(" ")
                m = re.search(trig.pattern, body)
                if m is None:
                    continue
                serial = "\n".join(ln.strip().partition(" ")[2] for ln in text.splitlines())
                cmds = tuple(trig.commands(m, serial) if callable(trig.commands)
                             else trig.commands)
                replies = qmp(workdir / "qmp.sock", cmds)
                fired.append(QmpFired(trig.pattern, body, float(stamp), cmds, tuple(replies)))
                pending.remove(trig)
                break
        finished.wait(0.25)  # poll the serial log 4 times a second
    if not finished.wait(max(0.0, deadline - time.monotonic())):
        proc.terminate(grace_s=5.0)
        finished.wait(30)
    return outcome.get("rc", 124), tuple(fired)
