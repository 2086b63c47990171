"""Kiosk results live in RAM and are mirrored onto the SSDRESULTS stick whenever it is there.

The system runs from RAM, so the stick may be pulled during a run. The engine therefore
never writes to the stick: it writes to ``/run/ssdbench/ram/ssdbench`` (seeded at start
from the stick, so the journal and earlier runs are there for a resume), and
:class:`StickMirror` copies what changed onto the stick at every stage start and end and
at the end of the kiosk run:

* a file is copied when its size or mtime in RAM differs from the last copy to this
  mount (atomically: a temp file, then rename); nothing on the stick is deleted;
* the stick is gone when its partition left ``/sys/class/block`` or a write fails: the
  stale mount is lazily unmounted and one line says results are held in RAM;
* while gone, each sync looks for a SSDRESULTS partition again (``find_destination``, which
  mounts it); when one is back, everything is copied again;
* the copying runs in its own thread: a vanished or slow stick never stops a measurement;
* at the end, :meth:`StickMirror.close` syncs once more, and :meth:`wait_for_stick` lets the
  kiosk wait (instead of powering off and losing the results) until the stick is back.
"""

from __future__ import annotations

import os
import threading
import time
from collections.abc import Callable
from pathlib import Path

from ssdbench.results import atomic
from ssdbench.results.destination import Destination, find_destination, mount_point
from ssdbench.system import CommandError, Host

Finder = Callable[[Host], Destination]


def _files(root: Path) -> list[Path]:
    if not root.is_dir():
        return []
    return sorted(p for p in root.rglob("*") if p.is_file() and not atomic.is_temp(p.name))


def remove_torn(root: Path, *, checked: bool = False) -> tuple[list[Path], list[Path]]:
    """Tidy the temp files an interrupted atomic write left under ``root``: (removed,
    restored).

    A torn temp (its bytes are not its final file's) is deleted. On FAT a power cut in the
    middle of the rename can leave the temp name and the final name on the same clusters
    (docs/kiosk.md, "Power loss"): deleting one would free the other's, and so would the
    next rename over the final name. Unless ``checked`` (fsck.fat ran before the mount,
    ``Destination.checked``) a temp with its final file's bytes is therefore left alone.
    fsck.fat parts such a pair by truncating the second name in the directory to nothing:
    after it, a temp with its final file's bytes is an ordinary copy (deleted), and an empty
    final file with a non-empty temp is the pair with the final name truncated: the temp,
    fsynced before its rename began, is renamed over it (restored)."""
    removed: list[Path] = []
    restored: list[Path] = []
    if not root.is_dir():
        return removed, restored
    for p in sorted(root.rglob(".*.tmp-*")):
        if not p.is_file():
            continue
        final = _final_of(p)
        try:
            if checked and final.is_file() and final.stat().st_size == 0 and p.stat().st_size:
                os.replace(p, final)
                restored.append(final)
                continue
            if _same(p, final) and not checked:
                continue
            p.unlink(missing_ok=True)
            removed.append(p)
        except OSError:
            continue
    return removed, restored


def _final_of(temp: Path) -> Path:
    return temp.with_name(temp.name[1:].rpartition(".tmp-")[0])


def _same(temp: Path, final: Path) -> bool:
    try:
        return (final.is_file() and final.stat().st_size == temp.stat().st_size
                and final.read_bytes() == temp.read_bytes())
    except OSError:
        return False


class StickMirror:
    """RAM results folder (``ram/ssdbench``) kept copied onto ``stick`` (a Destination)."""

    def __init__(self, host: Host, ram: Path, stick: Destination | None,
                 say: Callable[[str], None], *, find: Finder = find_destination) -> None:
        self.host = host
        self.ram = Path(ram)
        self.stick = stick if stick is not None and stick.on_stick else None
        self.say = say
        self._find = find
        self._memo: dict[str, tuple[int, int]] = {}  # relative path -> (size, mtime_ns)
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.ever_had_stick = self.stick is not None

    @property
    def results_dir(self) -> Path:
        return self.ram / "ssdbench"

    def on_stick(self) -> str | None:
        """The stick's description while results are being copied to one, else None."""
        stick = self.stick
        return stick.description if stick is not None else None

    # ---- start: the stick's results into RAM ----

    def seed(self) -> int:
        """Copy the stick's results folder into RAM (journal, earlier runs); torn temp files
        of an interrupted copy are removed from the stick first. Files copied."""
        self.results_dir.mkdir(parents=True, exist_ok=True)
        if self.stick is None:
            return 0
        src = self.stick.results_dir
        copied = 0
        try:
            removed, restored = remove_torn(src, checked=self.stick.checked)
            for p in removed:
                self.say(f"removed {p.name}, a torn copy left by a power loss")
            for p in restored:
                self.say(f"restored {p.name} from the copy a power loss left beside it")
            for path in _files(src):
                rel = path.relative_to(src)
                target = self.results_dir / rel
                data = path.read_bytes()
                atomic.write_bytes(target, data)
                st = path.stat()
                os.utime(target, (st.st_atime, st.st_mtime))
                tst = target.stat()
                self._memo[str(rel)] = (tst.st_size, tst.st_mtime_ns)
                copied += 1
        except OSError as exc:
            self.say(f"reading the results on the stick failed: {exc}")
        return copied

    # ---- one pass ----

    def present(self) -> bool:
        stick = self.stick
        if stick is None or stick.device is None:
            return False
        name = Path(os.path.realpath(stick.device)).name
        if not self.host.fs.exists(f"/sys/class/block/{name}"):
            return False
        return mount_point(self.host, stick.device) is not None

    def sync(self) -> int:
        """Copy what changed onto the stick (finding it again if it was gone). Never raises;
        returns the number of files written."""
        with self._lock:
            try:
                return self._sync()
            except Exception as exc:  # the measurement must go on whatever happens here
                self.say(f"copying results to the stick failed: {type(exc).__name__}: {exc}")
                return 0

    def _sync(self) -> int:
        if self.stick is not None and not self.present():
            self._lost("removed")
        if self.stick is None:
            found = self._find(self.host)
            if not found.on_stick:
                return 0
            self.stick = found
            self.ever_had_stick = True
            self._memo = {}
            self.say(f"stick back: {found.description}; copying the results held in RAM")
        try:
            return self._push()
        except OSError as exc:
            self._lost(f"writing failed: {exc}")
            return 0

    def _push(self) -> int:
        assert self.stick is not None
        dst = self.stick.results_dir
        copied = 0
        for path in _files(self.results_dir):
            rel = str(path.relative_to(self.results_dir))
            st = path.stat()
            stamp = (st.st_size, st.st_mtime_ns)
            if self._memo.get(rel) == stamp:
                continue
            atomic.write_bytes(dst / rel, path.read_bytes())
            try:
                os.utime(dst / rel, ns=(st.st_atime_ns, st.st_mtime_ns))
            except OSError:
                pass  # FAT keeps 2 s times; the memo, not the stick's time, decides
            self._memo[rel] = stamp
            copied += 1
        if copied:
            os.sync()
        return copied

    def _lost(self, why: str) -> None:
        stick = self.stick
        self.stick = None
        self._memo = {}
        if stick is None:
            return
        self.say(f"stick gone ({why}): results held in RAM ({self.results_dir}) until a "
                 "SSDRESULTS stick is back")
        try:  # the dead mount would shadow the stick when it comes back
            self.host.runner.run(["umount", "-l", str(stick.root)], ok_codes=range(256),
                                 timeout=30)
        except CommandError:
            pass

    # ---- the background thread ----

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="stick-mirror", daemon=True)
        self._thread.start()

    def request(self) -> None:
        """Sync soon (a stage started or ended); never blocks."""
        self._wake.set()

    def _loop(self) -> None:
        while not self._stop.is_set():
            self._wake.wait()
            self._wake.clear()
            if self._stop.is_set():
                break
            n = self.sync()
            if n:
                self.say(f"results copied to the stick ({n} files)")

    def close(self) -> int:
        """Stop the thread and sync a last time; files written by that last pass."""
        self._stop.set()
        self._wake.set()
        if self._thread is not None:
            self._thread.join()
        return self.sync()

    def wait_for_stick(self, cancel: threading.Event, *, poll_s: float = 2.0,
                       clock: Callable[[], float] = time.monotonic) -> bool:
        """Until the results are on a stick (or ``cancel``): True when they are."""
        said = clock() - 3600
        while not cancel.is_set():
            if self.stick is not None and self.present():
                return True
            if clock() - said >= 60:
                self.say("waiting for the SSDRESULTS stick: plug it in to save the results "
                         "(they are only in RAM)")
                said = clock()
            self.sync()
            if self.stick is not None:
                return True
            cancel.wait(poll_s)
        return False
