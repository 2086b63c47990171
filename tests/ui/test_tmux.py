"""The real TUI (`ssdbench`, no arguments) in tmux at 80x25 with TERM=linux, as on the Linux
console: a loop device this test creates is picked, the quick plan shrunk in the plan form
(discard, OP 0, 3 s tortures, 4 MiB probes), a wrong consent refused, the right one given,
the run followed to the end and the results screen read; then the results folder.

The TUI runs in its own mount namespace with a test folder bound over the RAM results
folder (/run/ssdbench/ram), so this machine's /run is not written (no SSDRESULTS here)."""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from tests.conftest import REPO
from tests.conftest import loop_device as make_loop_device

pytestmark = [pytest.mark.root]

SSDBENCH = REPO / ".venv" / "bin" / "ssdbench"


def tmux(*args: str) -> str:
    return subprocess.run(["tmux", *args], check=True, capture_output=True, text=True,
                          timeout=30).stdout


class Screen:
    """``patience_s``: how long a key may take to show (a TUI on an emulated serial line
    under TCG is slow)."""

    def __init__(self, session: str, patience_s: float = 10) -> None:
        self.session = session
        self.patience_s = patience_s

    def text(self) -> str:
        return tmux("capture-pane", "-p", "-t", self.session)

    def styled(self) -> str:
        """With colours: a focus change shows only there."""
        return tmux("capture-pane", "-p", "-e", "-t", self.session)

    def wait(self, what: str | Callable[[str], bool], timeout_s: float = 30) -> str:
        """The screen once ``what`` (text or a test of the screen) holds; deadline poll."""
        test = what if callable(what) else (lambda s: what in s)
        deadline = time.monotonic() + timeout_s
        while True:
            screen = self.text()
            if test(screen):
                return screen
            if time.monotonic() > deadline:
                raise AssertionError(f"no {what!r} on the screen within {timeout_s} s:\n{screen}")
            time.sleep(0.1)

    def key(self, key: str, *, until: str | Callable[[str], bool] | None = None) -> str:
        """One key (Textual reads a burst as a paste), then wait for its effect."""
        before = self.settled()
        tmux("send-keys", "-t", self.session, key)
        if until is not None:
            return self.wait(until, self.patience_s)
        self._changed(before)
        return self.text()

    def move(self, key: str) -> str:
        """A cursor key on the drives list: done once the detail pane names another device,
        or after ``patience_s`` (the cursor was at the end of the list)."""
        def device(screen: str) -> str | None:
            m = re.search(r"^ Device\s+(\S+)", screen, re.M)
            return m.group(1) if m else None

        before = device(self.text())
        tmux("send-keys", "-t", self.session, key)
        try:
            return self.wait(lambda t: device(t) not in (None, before), self.patience_s)
        except AssertionError:
            return self.text()

    def type(self, text: str) -> str:
        before = self.settled()
        tmux("send-keys", "-t", self.session, "-l", text)
        self._changed(before)
        return self.text()

    def settled(self) -> str:
        """The styled screen once it stops changing (redraws after an edit come late)."""
        deadline = time.monotonic() + self.patience_s
        last = self.styled()
        while True:
            time.sleep(0.25 if self.patience_s <= 10 else 2.0)
            now = self.styled()
            if now == last or time.monotonic() > deadline:
                return now
            last = now

    def _changed(self, before: str) -> None:
        deadline = time.monotonic() + self.patience_s
        while self.styled() == before:
            assert time.monotonic() < deadline, f"the screen did not change:\n{self.text()}"
            time.sleep(0.05)


def field_shows(label: str, value: str) -> Callable[[str], bool]:
    line = re.compile(rf"^ {re.escape(label)}\s+{re.escape(value)}\s*$", re.M)
    return lambda screen: line.search(screen) is not None


def shrink_quick_plan(screen: Screen, wait_s: float,
                      runs: str = "consistency-default, trim") -> str:
    """From the plan form's erase-method field: 5 s tortures (their steady window, the last
    30%, then holds a second fio logged: fio often leaves the last one out, and a missing
    second is never invented), OP 0, 4 MiB probes, 5 s of TRIM idle (the settle after the
    torture and the wait after the TRIM: 60 s each by default, two idle minutes of every
    run), each value typed into its field and seen there; the screen once the run list
    shows ``runs``. The form shows only the fields of the preset's runs (#45): without a
    consistency run there is no torture or OP levels field to Tab to."""
    consistency = "consistency" in runs
    for label, value in (("Torture (s)", "5"), ("TRIM torture (s)", "5"),
                         ("OP levels (%)", "0"), ("Probe (GiB)", "0.004"),
                         ("TRIM idle (s)", "5")):
        if not consistency and label in ("Torture (s)", "OP levels (%)"):
            continue
        screen.key("Tab")
        screen.type(value)
        screen.wait(field_shows(label, value), wait_s)
    return screen.wait(f"Runs: {runs}", wait_s)


def results_rows(screen: Screen, name: str, timeout_s: float,
                 count: int = 2) -> tuple[str, dict[str, str]]:
    """The results screen once "report.html" and ``count`` run rows of drive ``name`` are
    painted (the screen is drawn in parts: CI once read it with only the first row there),
    and its rows as {run: state}."""
    row = re.compile(rf"^ {re.escape(name)}\s+(\S+)\s+(done|failed|cancelled)\s+[\d,]+ ", re.M)
    # "report.html" ends a full path: on the 80-column serial console it wraps, even
    # inside the name ("/…/report." then "html" on the next line)
    painted = re.compile(r"/report\.\s*html *$", re.M)
    s = screen.wait(lambda t: bool(painted.search(t)) and len(row.findall(t)) >= count,
                    timeout_s)
    return s, dict(row.findall(s))


@pytest.fixture
def loop_device() -> Iterator[str]:
    with make_loop_device(64, prefix="ssdbench-tmux-") as (dev, _image):
        yield dev


@pytest.fixture
def tui(tmp_path: Path) -> Iterator[tuple[Screen, Path]]:
    results = tmp_path / "ram"
    results.mkdir()
    Path("/run/ssdbench/ram").mkdir(parents=True, exist_ok=True)  # the mount point
    session = f"ssdbench-test-{os.getpid()}-{tmp_path.name}"  # own, beside any other run
    inner = (f"mount --bind {results} /run/ssdbench/ram && "
             f"exec env TERM=linux {SSDBENCH}")
    tmux("new-session", "-d", "-s", session, "-x", "80", "-y", "25",
         f"unshare -m --propagation private sh -c '{inner}'")
    try:
        yield Screen(session), results
    finally:
        subprocess.run(["tmux", "kill-session", "-t", session], check=False,
                       capture_output=True)


def test_quick_plan_in_tmux_at_80x25(loop_device: str,
                                     tui: tuple[Screen, Path]) -> None:
    assert shutil.which("tmux"), "tmux is installed by make test (scripts/apt-packages.txt)"
    screen, results = tui
    name = Path(loop_device).name
    # the drive's row and the results' place come from two lookups of their own: the stick's
    # may take longer (blkid on every block device; in make test one of them is a simulated
    # drive serving 600 IOPS)
    in_ram = "results: in RAM - no SSDRESULTS stick"
    s = screen.wait(lambda t: f" {name} " in t and in_ram in t, 30)
    assert in_ram in s
    assert all(len(line) <= 80 for line in s.splitlines())
    assert len(s.splitlines()) <= 25

    # the drives screen: the detail pane follows the highlighted row. Up or down towards
    # this test's loop device: `make test` runs other jobs' loop devices beside it, and the
    # list they come and go in (a rescan) can move the highlight past it
    # A key's effect is the detail pane naming another device: a rescan repaints the screen
    # too (and keeps the highlight on its drive), so "the screen changed" is not enough — a
    # key judged done by a rescan's repaint was still queued when Space went in, and CI
    # selected the drive below this test's one
    highlighted = f"Device       {loop_device}  (loop)"
    for _ in range(40):
        s = screen.text()
        if highlighted in s:
            screen.settled()  # and still there once a key in flight (a rare race) is done
            s = screen.text()
            if highlighted in s:
                break
            continue
        listed = re.findall(r"^\s*(?:\[.\]|PROT)\s+(\S+)", s, re.M)
        at = re.search(r"^ Device\s+/dev/(\S+)", s, re.M)
        above = (at is not None and name in listed and at.group(1) in listed
                 and listed.index(at.group(1)) > listed.index(name))
        screen.move("Up" if above else "Down")
    assert highlighted in s, s
    assert "Erase        no secure erase" in s
    s = screen.key("Space", until=lambda t: re.search(rf"\[x\]\s+{name} ", t) is not None)
    s = screen.key("p", until=f"Plan for {name}")
    assert "Preset            quick" in s
    assert f"no secure erase on {name}" in s  # the default erase is refused for a loop

    # the plan form: discard, OP 0, 3 s tortures, 4 MiB probes
    screen.key("Tab")
    screen.key("Enter")
    screen.key("Down")  # past "secure erase, else Clear by overwrite"
    screen.key("Down")
    s = screen.key("Enter", until="secure erase, else discard")
    s = shrink_quick_plan(screen, 10)
    assert "Torture (s)       5" in s and "TRIM torture (s)  5" in s
    assert "OP levels (%)     0" in s and "Probe (GiB)       0.004" in s
    assert "DESTROYS ALL DATA" in s

    # consent: a wrong answer is refused and starts nothing, the right one starts
    s = screen.key("C-s", until="Consent 1/1")
    assert f"kernel name (the drive has no serial): {name}" in s
    wrong = name[-3:]
    screen.type(wrong)
    # the whole refusal (the dialog's line; the notification wraps it): a capture may land
    # between the two paints of one update (CI, beside other jobs)
    refused = f"'{wrong}' does not match the end of {name}'s name"
    s = screen.key("Enter", until=lambda t: refused in t and "nothing was started" in t)
    assert refused in s
    for _ in wrong:
        screen.key("BSpace")
    screen.type(name[-4:])
    s = screen.key("Enter", until="consistency-default")
    assert not list(results.rglob("report.html"))

    # the run screen: stages of both runs, then the end
    s = screen.wait(lambda t: " running" in t or "stages done" in t, 60)
    assert "probe-after_trim" in s
    s = screen.wait(f"{name}: finished: done", 300)
    assert re.search(rf"{name}\s+12/12 stages done", s), s
    for stage in ("erase", "partition", "fill", "torture", "probe-clean", "trim"):
        assert re.search(rf"\+ {stage}\s+done", s), (stage, s)

    # results
    for _ in range(3):  # v right at the end can be taken by the finishing notification
        tmux("send-keys", "-t", screen.session, "v")
        try:
            screen.wait("Open in a browser", 10)
            break
        except AssertionError:
            continue
    s, rows = results_rows(screen, name, 60)  # after "Analysing the results..."
    m = re.search(r"^ ?(/run/ssdbench/ram/ssdbench/(\S+))/report\.html *$", s, re.M)
    assert m is not None, s
    drive_dir = results / "ssdbench" / m.group(2)
    assert rows == {"consistency-default": "done", "trim": "done"}, s
    assert "erase: discard (not secure-erased)" in s
    assert all(len(line) <= 80 for line in s.splitlines())

    # the folder the screen named
    assert (drive_dir / "report.html").is_file()
    for run in ("consistency-default", "trim"):
        record = json.loads((drive_dir / run / "run.json").read_text())
        assert record["state"] == "done", record
        assert record["params"]["torture_seconds"] == 5
        assert record["params"]["probe_gib"] == 0.004
    summary = (results / "ssdbench" / "summary.csv").read_text()
    assert name in summary
    journal = json.loads((results / "ssdbench" / "state.json").read_text())
    assert journal["drives"][name]["state"] == "done"
    screen.key("q", until=lambda t: True)
