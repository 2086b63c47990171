"""The "Interactive on serial console" boot entry: the TUI runs on ttyS0. QEMU runs inside
a tmux pane (80x25) with the serial port on its stdio, so tmux is the serial terminal: the
test reads the screen with capture-pane and types with send-keys, through the trim plan
(picked and shrunk in the plan form) on an emulated NVMe drive to the results screen. One run:
the quick plan's two (the consistency run and its report too) cost four more minutes under
TCG here, and the same TUI runs the quick plan to its results in tests/ui/test_tmux.py.
The guest starts the stick's kernel with the serial entry's own command line
(``prepare_stick(direct=True)``): firmware and GRUB reading the initramfs off the emulated
stick cost about 18 s more, and test_boot.py boots through them."""

from __future__ import annotations

import re
import shlex
import subprocess
import time
from pathlib import Path

import pytest

from tests.e2e.scenarios import BOOT_S, Guest, make_drive, prepare_stick
from tests.ui.test_tmux import Screen, results_rows, shrink_quick_plan, tmux

pytestmark = [pytest.mark.e2e, pytest.mark.root, pytest.mark.slow, pytest.mark.timeout(1800)]

SERIAL = "E2ETUISERIAL1"


def _serial_log(workdir: Path) -> str:
    path = workdir / "serial.log"
    return path.read_text(errors="replace") if path.is_file() else ""


def _wait_log(workdir: Path, needle: str, timeout_s: float) -> None:
    deadline = time.monotonic() + timeout_s
    while needle not in _serial_log(workdir):
        assert time.monotonic() < deadline, f"no {needle!r}:\n{_serial_log(workdir)[-2000:]}"
        time.sleep(0.2)


def test_tui_on_the_serial_console_runs_a_plan(dev_image: Path, tmp_path: Path) -> None:
    drive, _ = make_drive(tmp_path / "nvme.img", SERIAL, size=128 << 20)
    stick = prepare_stick(tmp_path, entry="serial", append="ssdbench.term=linux", direct=True)
    work = tmp_path / "qemu"
    work.mkdir()
    guest = Guest(work, stick, (drive,), direct=True)
    argv = guest.argv()
    i = argv.index("-chardev")
    argv[i + 1] = f"stdio,id=ser0,signal=off,logfile={work / 'serial.log'}"
    session = f"ssdbench-serial-{tmp_path.name}"
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "25",
         f"{shlex.join(argv)} 2>{work / 'qemu.stderr'}")
    screen = Screen(session, patience_s=120)
    t0 = time.monotonic()

    def mark(what: str) -> None:  # where the minutes go (pytest -s; issue 31)
        print(f"tui on serial: {time.monotonic() - t0:5.1f} s {what}")

    try:
        _wait_log(work, "ssdbench ready", BOOT_S)
        mark("ssdbench ready")
        assert "mode=interactive" in _serial_log(work)
        # the TUI on the serial console: the drives screen with the emulated drive
        s = screen.wait(SERIAL, 180)
        mark("the drives screen")
        assert "results:" in s and "stick" in s
        nvme = re.search(r"(nvme\d+n1)", s)
        assert nvme is not None, s
        name = nvme.group(1)
        highlighted = f"/dev/{name}"
        screen.wait(lambda t: re.search(r"Device\s+/dev/", t) is not None, 120)
        screen.settled()
        s = screen.text()
        for _ in range(10):
            if re.search(rf"Device\s+{highlighted}", s):
                break
            s = screen.key("Down")
        assert re.search(rf"Device\s+{highlighted}", s), s
        s = screen.key("Space", until=lambda t: re.search(rf"\[x\]\s+{name} ", t) is not None)
        s = screen.key("p", until=lambda t: f"Plan for {name}" in t
                       and "Preset            quick" in t)
        # the preset list (review, quick, trim, ...): one down from quick
        screen.key("Enter")
        screen.key("Down")
        screen.key("Enter", until="Preset            trim")
        mark("the plan form, the trim preset")
        # secure erase stays (QEMU's NVMe formats); 5 s torture, 4 MiB probes
        screen.key("Tab")  # erase method
        shrink_quick_plan(screen, 120, runs="trim")
        # the serial line paints a screen in parts (a CI run read the consent screen's title
        # before the line naming the drive): each wait holds until all it checks is there
        mark("the plan shrunk")
        s = screen.key("C-s", until=lambda t: "Consent 1/1" in t and SERIAL in t)
        screen.type(SERIAL[-4:])
        screen.key("Enter", until="probe-after_trim")
        mark("consent given, the run screen")
        s = screen.wait(lambda t: f"{name}: finished: done" in t
                        and re.search(rf"{name}\s+(\d+)/\1 stages done", t) is not None, 600)
        # v opens the results screen ("steady mean" is its detail line's own text; the
        # screen has had no "steady IOPS" since its columns were narrowed for 80 columns,
        # and waiting for that cost ten minutes of every run)
        # (pressed while the index is still being written, it opens once that is done);
        # 600 s is a hang guard for a slow TCG guest, not an expected time
        mark("the plan finished")
        tmux("send-keys", "-t", session, "v")
        screen.wait("steady mean", 600)
        # a slow serial line paints the screen for a while: wait for both run rows
        mark("the results screen")
        s, rows = results_rows(screen, name, 180, count=1)
        assert "/mnt/ssdresults/ssdbench/" in s, s  # the path may wrap onto the next line
        assert rows == {"trim": "done"}, s
        # the serial stream carried the TUI itself (escape sequences and its text)
        log = _serial_log(work)
        assert "\x1b[" in log, log[-500:]
        mark("its rows painted, all checked")
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)
