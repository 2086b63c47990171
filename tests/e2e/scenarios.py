"""QEMU scenarios the rig's blocking ``boot()`` cannot do: a serial console we can type into,
QEMU killed at a moment the serial console picks, the same stick booted again after that,
and the USB stick unplugged and plugged back through QMP.

The machine is the rig's (scripts/run-qemu.sh prepares the stick: grubenv entry, kernel
arguments, kiosk config; the QEMU arguments mirror run-qemu.sh's: q35, TCG with ``-cpu
max``, the stick on xHCI as ``usb-storage`` id ``stick``, NVMe drives), but QEMU runs here,
with the serial port on a Unix socket (``-chardev socket``) and QMP on ``qmp.sock``.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import threading
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.e2e.rig import (
    DEV_IMAGE,
    RUN_QEMU,
    partitions,
    qmp,
    sha256_file,
    write_pattern,
)

BOOT_S = 300.0  # boot to "ssdbench ready" (about 60 s under TCG; generous for a busy host)
PNG_MAGIC = b"\x89PNG\r\n\x1a\n"


@dataclass(frozen=True)
class Nvme:
    path: Path
    serial: str


def make_drive(path: Path, serial: str, size: int = 256 << 20, *, pattern: bool = False
               ) -> tuple[Nvme, str | None]:
    """A drive file (sparse, or filled with the rig's pattern); its sha256 when patterned."""
    if pattern:
        return Nvme(path, serial), write_pattern(path, size)
    path.unlink(missing_ok=True)
    with path.open("wb") as f:
        f.truncate(size)
    return Nvme(path, serial), None


def prepare_stick(workdir: Path, *, entry: str, append: str = "",
                  kiosk_config: Path | None = None, image: Path = DEV_IMAGE,
                  direct: bool = False) -> Path:
    """A fresh copy of the image as workdir/stick.img with the boot entry and config; with
    ``direct``, the stick's kernel, initramfs and the entry's command line beside it (for
    ``Guest(direct=True)``)."""
    # --accel tcg: Guest runs QEMU in TCG (its kernel arguments then have run-qemu.sh's
    # init_on_alloc=0)
    argv = [str(RUN_QEMU), "--prepare-only", "--image", str(image), "--workdir", str(workdir),
            "--entry", entry, "--accel", "tcg"]
    if direct:
        argv.append("--direct")
    if append:
        argv += ["--append", append]
    if kiosk_config is not None:
        argv += ["--kiosk-config", str(kiosk_config)]
    subprocess.run(argv, check=True, capture_output=True, timeout=120)
    return workdir / "stick.img"


def results_image(stick: Path) -> str:
    """The stick's SSDRESULTS partition as an mtools image argument (``-i``): no mount here."""
    return f"{stick}@@{partitions(stick)[1].start_bytes}"


def _mtools(argv: list[str], *, check: bool) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(argv, check=check, capture_output=True, timeout=120,
                          env={**os.environ, "MTOOLS_SKIP_CHECK": "1"})


def stick_files(stick: Path, dest: Path) -> Path:
    """Copy the stick's SSDRESULTS partition out to ``dest``."""
    if dest.exists():
        shutil.rmtree(dest)
    dest.mkdir(parents=True)
    _mtools(["mcopy", "-s", "-n", "-i", results_image(stick), "::*", str(dest)], check=True)
    return dest


def stick_file(image: str, rel: str) -> bytes | None:
    """One file of the SSDRESULTS partition (``results_image``) as the stick holds it now,
    read only; None when mtools cannot read it (not there, or caught mid-write)."""
    out = _mtools(["mtype", "-i", image, f"::{rel}"], check=False)
    return out.stdout if out.returncode == 0 else None


def boot_partition_sha(stick: Path) -> str:
    part = partitions(stick)[0]
    return sha256_file(stick, part.start_bytes, part.size_bytes)


def unparsable(root: Path) -> list[str]:
    """Files under ``root`` that do not parse as their kind (JSON, CSV, PNG, HTML, SVG)."""
    bad = []
    for path in sorted(p for p in root.rglob("*") if p.is_file()):
        rel = str(path.relative_to(root))
        data = path.read_bytes()
        try:
            if path.suffix == ".json":
                json.loads(data)
            elif path.suffix == ".csv":
                rows = list(csv.reader(io.StringIO(data.decode("utf-8"))))
                if not rows:
                    raise ValueError("empty CSV")
            elif path.suffix == ".png":
                if not data.startswith(PNG_MAGIC) or not data.endswith(b"IEND\xaeB`\x82"):
                    raise ValueError("not a whole PNG")
            elif path.suffix in (".html", ".svg"):
                text = data.decode("utf-8")
                if not text.rstrip().endswith(("</html>", "</svg>")):
                    raise ValueError("cut short")
            elif path.suffix in (".txt", ".log", ".toml"):
                data.decode("utf-8")
        except (ValueError, UnicodeDecodeError) as exc:
            bad.append(f"{rel}: {exc}")
    return bad


@dataclass
class Guest:
    """A running QEMU: serial console as text (``\\r`` dropped), keystrokes, QMP, kill.

    ``direct``: start the stick's kernel and initramfs with QEMU's ``-kernel``/``-initrd``
    and the command line of its boot entry, as ``prepare_stick(direct=True)`` left them
    beside the stick (firmware and GRUB skipped: about 20 s less per boot under TCG). For
    tests about what happens after boot; tests/e2e/test_boot.py boots through the firmware
    and GRUB."""

    workdir: Path
    stick: Path
    nvme: Sequence[Nvme] = ()
    memory_mib: int = 2048
    direct: bool = False
    text: str = ""
    _raw: bytearray = field(default_factory=bytearray)
    _proc: subprocess.Popen[bytes] | None = None
    _sock: socket.socket | None = None
    _lock: threading.Lock = field(default_factory=threading.Lock)
    started: float = 0.0

    @property
    def qmp_sock(self) -> Path:
        return self.workdir / "qmp.sock"

    def argv(self) -> list[str]:
        serial_sock = self.workdir / "serial.sock"
        argv = [
            "qemu-system-x86_64", "-machine", "q35", "-accel", "tcg", "-cpu", "max",
            "-m", str(self.memory_mib), "-smp", "2", "-nodefaults", "-no-reboot",
            "-vga", "std", "-nic", "none", "-display", "none", "-monitor", "none",
            "-chardev", f"socket,id=ser0,path={serial_sock},server=on,wait=on",
            "-serial", "chardev:ser0",
            "-qmp", f"unix:{self.qmp_sock},server=on,wait=off",
            "-device", "qemu-xhci,id=xhci",
            "-drive", f"if=none,id=stick-blk,file={self.stick},format=raw,cache=unsafe",
            # (-kernel takes boot index 0 itself)
            "-device", "usb-storage,id=stick,bus=xhci.0,drive=stick-blk,removable=on"
                       + ("" if self.direct else ",bootindex=0"),
        ]
        if self.direct:
            prepared = self.stick.parent  # run-qemu.sh --prepare-only --direct left them there
            argv += ["-kernel", str(prepared / "direct-vmlinuz"),
                     "-initrd", str(prepared / "direct-initrd.img"),
                     "-append", (prepared / "direct-cmdline").read_text().strip()]
        for i, d in enumerate(self.nvme):
            argv += ["-drive", f"if=none,id=nvme{i}-blk,file={d.path},format=raw,"
                               "discard=unmap,cache=unsafe",
                     "-device", f"nvme,id=nvme{i},drive=nvme{i}-blk,serial={d.serial}"]
        return argv

    def start(self) -> Guest:
        self.workdir.mkdir(parents=True, exist_ok=True)
        for name in ("serial.sock", "qmp.sock"):
            (self.workdir / name).unlink(missing_ok=True)
        log = (self.workdir / "qemu.stderr").open("ab")
        self._proc = subprocess.Popen(self.argv(), stdin=subprocess.DEVNULL,
                                      stdout=log, stderr=log)
        self.started = time.monotonic()
        serial_sock = self.workdir / "serial.sock"
        deadline = time.monotonic() + 30
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        while True:
            try:
                sock.connect(str(serial_sock))
                break
            except (FileNotFoundError, ConnectionRefusedError):
                if self._proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError(f"QEMU did not start: {self.stderr()}") from None
                time.sleep(0.05)
        self._sock = sock
        threading.Thread(target=self._read, daemon=True, name="serial").start()
        return self

    def _read(self) -> None:
        assert self._sock is not None
        with (self.workdir / "serial.log").open("ab") as log:
            while True:
                try:
                    chunk = self._sock.recv(65536)
                except OSError:
                    return
                if not chunk:
                    return
                log.write(chunk)
                log.flush()
                with self._lock:
                    self._raw += chunk
                    self.text = self._raw.decode("utf-8", errors="replace").replace("\r", "")

    def stderr(self) -> str:
        path = self.workdir / "qemu.stderr"
        return path.read_text(errors="replace") if path.is_file() else ""

    def tail(self, n: int = 40) -> str:
        return "\n".join(self.text.splitlines()[-n:])

    def wait_for(self, pattern: str, timeout_s: float, *, start: int = 0) -> re.Match[str]:
        """The first match of ``pattern`` in the serial text from ``start`` (deadline poll)."""
        rx = re.compile(pattern, re.M)
        deadline = time.monotonic() + timeout_s
        while True:
            m = rx.search(self.text, start)
            if m is not None:
                return m
            if self._proc is not None and self._proc.poll() is not None:
                m = rx.search(self.text, start)
                if m is not None:
                    return m
                raise AssertionError(f"QEMU exited ({self._proc.returncode}) before "
                                     f"{pattern!r}:\n{self.tail()}\n{self.stderr()}")
            if time.monotonic() > deadline:
                raise AssertionError(f"no {pattern!r} within {timeout_s:.0f} s:\n{self.tail()}")
            time.sleep(0.05)

    def send(self, data: str | bytes) -> None:
        assert self._sock is not None
        self._sock.sendall(data.encode() if isinstance(data, str) else data)

    def qmp(self, *commands: dict[str, Any]) -> list[dict[str, Any]]:
        return qmp(self.qmp_sock, commands)

    def kill(self) -> None:
        """The plug pulled: SIGKILL, nothing flushed by the guest."""
        assert self._proc is not None
        self._proc.send_signal(signal.SIGKILL)
        self._proc.wait(timeout=30)
        self._close()

    def wait_exit(self, timeout_s: float) -> int:
        assert self._proc is not None
        try:
            rc = self._proc.wait(timeout=timeout_s)
        except subprocess.TimeoutExpired:
            self._proc.kill()
            self._proc.wait()
            raise AssertionError(f"QEMU still running after {timeout_s:.0f} s:\n"
                                 f"{self.tail()}") from None
        self._close()
        return rc

    def _close(self) -> None:
        if self._sock is not None:
            try:
                self._sock.close()
            except OSError:
                pass

    def __enter__(self) -> Guest:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
            self._proc.wait()
        self._close()

    # ---- the stick ----

    def _peripherals(self) -> set[str]:
        reply = self.qmp({"execute": "qom-list", "arguments": {"path": "/machine/peripheral"}})
        return {p["name"] for p in reply[0].get("return", [])}

    def unplug_stick(self, timeout_s: float = 60) -> None:
        reply = self.qmp({"execute": "device_del", "arguments": {"id": "stick"}})
        assert "error" not in reply[0], reply
        deadline = time.monotonic() + timeout_s
        while "stick" in self._peripherals():
            assert time.monotonic() < deadline, "the stick was not unplugged"
            time.sleep(0.1)

    def plug_stick(self) -> None:
        """Plug the same stick image back (a new block node: -drive's went with the device)."""
        nodes = {b.get("device") for b in self.qmp({"execute": "query-block"})[0]["return"]}
        drive = "stick-blk"
        if drive not in nodes:
            drive = "stick-blk2"
            reply = self.qmp({"execute": "blockdev-add", "arguments": {
                "driver": "raw", "node-name": drive,
                "file": {"driver": "file", "filename": str(self.stick)}}})
            assert "error" not in reply[0], reply
        reply = self.qmp({"execute": "device_add", "arguments": {
            "driver": "usb-storage", "id": "stick", "bus": "xhci.0", "drive": drive,
            "removable": True}})
        assert "error" not in reply[0], reply


def kiosk_config(path: Path, serial: str, *, torture_s: int = 5, on_finish: str = "poweroff",
                 plan: str = "trim", extra: str = "") -> Path:
    """A tiny kiosk plan on the drive with ``serial``."""
    path.write_text(
        f'plan = "{plan}"\nselect = ["serial:{serial}"]\ndestroy = ["{serial}"]\n'
        f'on_finish = "{on_finish}"\n{extra}\n[params]\n'
        f"torture_seconds = {torture_s}\ntrim_torture_seconds = {torture_s}\n"
        "probe_gib = 0.03125\nrandom_read_seconds = 5\ntrim_idle_seconds = 1\n"
    )
    return path
