"""`scripts/simdrive`: start, attach, detach and stop simulated SSDs; presets; the twin.

    simdrive start --preset NAME --size SIZE --dir DIR [--fob-iops N] [--serial S] [--model M]
                   [--firmware F] [--identity ordinary|hostile]
                   [--sector-size 512|4096] [--seed N]      -> prints DIR/nbd.sock
    simdrive attach --dir DIR                               -> prints /dev/loopN (host path)
    simdrive detach --dir DIR
    simdrive stop --dir DIR [--keep-data]
    simdrive sanitize --dir DIR                             (host-side secure erase)
    simdrive presets
    simdrive twin --preset NAME --size SIZE [--fob-iops N] [--op PERCENT] [--seconds S]

Runs with the system python3 (no venv): stdlib only.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from simdrive import presets
from simdrive.identity import IDENTITIES, named

PLUGIN = Path(__file__).resolve().parent / "nbdkit_plugin.py"
DEFAULT_FOB = 4000.0


class SimdriveError(Exception):
    """A clear, user-facing failure."""


def parse_size(text: str) -> int:
    """Bytes ("1073741824"), sectors ("2097152s", 512-byte) or K/M/G/KiB/MiB/GiB suffixes."""
    m = re.fullmatch(r"\s*(\d+)\s*(s|k|kib|m|mib|g|gib)?\s*", text, re.IGNORECASE)
    if not m:
        raise SimdriveError(f"bad size {text!r}: bytes, NNNs (512-byte sectors) or NNN[KMG]")
    n = int(m.group(1))
    unit = (m.group(2) or "").lower()
    mult = {"": 1, "s": 512, "k": 1 << 10, "kib": 1 << 10, "m": 1 << 20, "mib": 1 << 20,
            "g": 1 << 30, "gib": 1 << 30}[unit]
    size = n * mult
    if size <= 0:
        raise SimdriveError("size must be positive")
    return size


def _wait(cond: Callable[[], bool], deadline_s: float) -> bool:
    end = time.monotonic() + deadline_s
    while time.monotonic() < end:
        if cond():
            return True
        time.sleep(0.05)
    return cond()


def _pid_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    try:  # a zombie child of ours counts as gone
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except OSError:
        return False
    return state != "Z"


def _read_pid(path: Path) -> int | None:
    try:
        return int(path.read_text().strip())
    except (OSError, ValueError):
        return None


def _run(argv: list[str]) -> str:
    proc = subprocess.run(argv, capture_output=True, text=True, check=False,
                          stdin=subprocess.DEVNULL)
    if proc.returncode != 0:
        raise SimdriveError(f"{' '.join(argv)} failed ({proc.returncode}): "
                            f"{proc.stderr.strip() or proc.stdout.strip()}")
    return proc.stdout


def _state(d: Path) -> dict[str, Any]:
    try:
        obj: dict[str, Any] = json.loads((d / "simdrive.json").read_text())
    except OSError:
        raise SimdriveError(f"{d} holds no simulated drive (no simdrive.json)") from None
    return obj


def _kill(pid: int, what: str, deadline_s: float = 10.0) -> None:
    if not _pid_alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    if not _wait(lambda: not _pid_alive(pid), deadline_s):
        os.kill(pid, signal.SIGKILL)
        if not _wait(lambda: not _pid_alive(pid), 5.0):
            raise SimdriveError(f"{what} (pid {pid}) does not exit")


# The drive's processes (nbdkit, nbdfuse) run as real-time tasks when root (SCHED_FIFO at
# DRIVE_RT_PRIORITY, below ssdbench's block-stat sampler at 2), else at DRIVE_NICE if they may:
# a drive is hardware, and a host busy with other work (QEMU beside the tests, CPU hogs)
# otherwise delays its replies, or nbdfuse's answers to the kernel, by tens of ms now and
# then, after the model's completion time (docs/simdrive.md "Ground truth"). Measured with
# three CPU hogs on two cores: at nice -10, 2 of 3 host-priority runs had a write land in the
# second after the model's (a zero second gained or lost).
DRIVE_RT_PRIORITY = 1
DRIVE_NICE = -10

# nbdfuse's NBD connections. nbdfuse (libnbd 1.14) hands each FUSE request to one of its
# connections (round robin over all but one of them); that connection's thread waits in
# nbd_poll() holding the handle's lock while any command is in flight on it, so a request
# whose reply came in cannot be answered to the kernel until the next reply on the same
# connection: up to a whole GC stall late. Measured with strace (fio QD32, enterprise
# preset): with nbdfuse's default 4 connections 156 of 8581 writes reached the kernel more
# than 12 ms after their reply arrived, up to 103 ms; with 11 (10 used, as many as libfuse's
# worker threads) 0 of 12054 (at most 8 ms), but the round robin does not keep each worker on
# a connection of its own: one write was held through each multi-second stall of the
# host-priority drive. With 21 (twice the workers), none was (tests/integration known answers).
NBDFUSE_CONNECTIONS = 21


def _priority() -> list[str]:
    """The prefix that runs a drive process at its priority ([] when not root)."""
    if os.geteuid() != 0:
        return []
    fifo = ["chrt", "--fifo", str(DRIVE_RT_PRIORITY)]
    if shutil.which("chrt") is not None and subprocess.run(
            [*fifo, "true"], capture_output=True, check=False).returncode == 0:
        return fifo
    return ["nice", "-n", str(DRIVE_NICE)]  # no real time here (an RT cgroup budget)


def _at_drive_priority(argv: list[str], package: str) -> list[str]:
    """``argv`` at the drive's priority; a clear error when its program is missing."""
    if shutil.which(argv[0]) is None:
        raise SimdriveError(f"{argv[0]} is not installed (apt-get install {package})")
    return [*_priority(), *argv]


def start(args: argparse.Namespace) -> str:
    d = Path(args.dir).resolve()
    size = parse_size(args.size)
    personality = presets.get(args.preset)
    if args.sector_size not in (512, 4096):
        raise SimdriveError("--sector-size must be 512 or 4096")
    if size % args.sector_size:
        raise SimdriveError(f"size {size} is not a multiple of the {args.sector_size}-byte sector")
    if args.fob_iops <= 0:
        raise SimdriveError("--fob-iops must be positive")
    fake = getattr(args, "fake", "") or ""
    real = size
    if fake:
        real = parse_size(args.real_size) if getattr(args, "real_size", None) else 0
        if not 0 < real < size or real % args.sector_size:
            raise SimdriveError(f"--fake {fake}: --real-size must be a whole number of "
                                f"sectors below the claimed {size} bytes")
    from simdrive.ftl import FTL
    try:
        FTL(personality, real, args.fob_iops)  # geometry check before anything starts
    except ValueError as exc:
        raise SimdriveError(str(exc)) from None
    d.mkdir(parents=True, exist_ok=True)
    pidfile = d / "nbd.pid"
    old = _read_pid(pidfile)
    if old is not None and _pid_alive(old):
        raise SimdriveError(f"a simulated drive already runs in {d} (pid {old}); stop it first")
    sock = d / "nbd.sock"
    for stale in (sock, pidfile, d / "data.img", d / "truth.jsonl", d / "truth.complete"):
        stale.unlink(missing_ok=True)
    state = {
        "preset": personality.name, "size": size, "fob_iops": args.fob_iops,
        "sector_size": args.sector_size, "serial": args.serial, "model": args.model,
        "firmware": getattr(args, "firmware", "") or "",
        "seed": args.seed, "socket": str(sock), "truth": str(d / "truth.jsonl"),
        "data": str(d / "data.img"), "fake": fake, "real_size": real,
    }
    argv = _at_drive_priority([
        "nbdkit", "--log=stderr", "--unix", str(sock), "--pidfile", str(pidfile),
        "python", str(PLUGIN),
        f"preset={personality.name}", f"size={size}", f"fob={args.fob_iops}",
        f"data={d / 'data.img'}", f"truth={d / 'truth.jsonl'}", f"seed={args.seed}",
        f"serial={args.serial}", f"model={args.model}", f"sector_size={args.sector_size}",
        *([f"fake={fake}", f"real_size={real}"] if fake else []),
    ], "nbdkit nbdkit-plugin-python")
    # nbdkit forks into the background once it is listening (its pidfile then exists); the
    # foreground mode dies with the process that started it.
    with (d / "nbdkit.log").open("w") as log:
        proc = subprocess.run(argv, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                              check=False, timeout=120)
    # the daemon writes its pidfile after the parent has returned: wait for it
    if proc.returncode == 0:
        _wait(lambda: _read_pid(pidfile) is not None and sock.exists(), 30.0)
    pid = _read_pid(pidfile)
    if proc.returncode != 0 or pid is None or not sock.exists():
        if pid is not None:
            _kill(pid, "nbdkit")
        text = (d / "nbdkit.log").read_text(errors="replace").strip()
        raise SimdriveError(f"nbdkit did not start: {text[-2000:]}")
    state["nbdkit_pid"] = pid
    (d / "simdrive.json").write_text(json.dumps(state, indent=1) + "\n")
    return str(sock)


def attach(args: argparse.Namespace) -> str:
    d = Path(args.dir).resolve()
    state = _state(d)
    if state.get("loop"):
        raise SimdriveError(f"already attached as {state['loop']}")
    mnt = d / "fuse"
    mnt.mkdir(exist_ok=True)
    pidfile = d / "nbdfuse.pid"
    pidfile.unlink(missing_ok=True)
    log = (d / "nbdfuse.log").open("w")
    try:
        proc = subprocess.Popen(
            _at_drive_priority(["nbdfuse", "-C", str(NBDFUSE_CONNECTIONS), "-P", str(pidfile),
                                str(mnt / "nbd"), "--unix", state["socket"]], "libnbd-bin"),
            stdin=subprocess.DEVNULL, stdout=log, stderr=log, start_new_session=True)
    finally:
        log.close()
    state["nbdfuse_pid"] = proc.pid
    (d / "simdrive.json").write_text(json.dumps(state, indent=1) + "\n")
    try:
        if not _wait(lambda: proc.poll() is not None or pidfile.exists(), 30.0) or \
                proc.poll() is not None:
            text = (d / "nbdfuse.log").read_text(errors="replace").strip()
            raise SimdriveError(f"nbdfuse did not start: {text[-2000:]}")
        loop = _run(["losetup", "--find", "--show", "--direct-io=on",
                     "--sector-size", str(state["sector_size"]), str(mnt / "nbd")]).strip()
    except BaseException:
        _detach(d, state)
        raise
    state["loop"] = loop
    (d / "simdrive.json").write_text(json.dumps(state, indent=1) + "\n")
    return loop


def _detach(d: Path, state: dict[str, Any]) -> None:
    errors: list[str] = []
    loop = state.get("loop")
    if loop:
        try:
            out = _run(["losetup", "--list", "--noheadings", "--output", "NAME,BACK-FILE"])
            if any(line.split()[:1] == [loop] for line in out.splitlines()):
                _run(["losetup", "--detach", loop])
        except SimdriveError as exc:
            errors.append(str(exc))
    mnt = d / "fuse"
    if os.path.ismount(mnt):
        proc = subprocess.run(["umount", str(mnt)], capture_output=True, text=True, check=False)
        if proc.returncode != 0:
            subprocess.run(["umount", "-l", str(mnt)], capture_output=True, check=False)
    pid = state.get("nbdfuse_pid")
    if pid:
        try:
            _kill(int(pid), "nbdfuse")
        except SimdriveError as exc:
            errors.append(str(exc))
    state.pop("loop", None)
    state.pop("nbdfuse_pid", None)
    (d / "simdrive.json").write_text(json.dumps(state, indent=1) + "\n")
    if errors:
        raise SimdriveError("; ".join(errors))


def detach(args: argparse.Namespace) -> None:
    d = Path(args.dir).resolve()
    _detach(d, _state(d))


def stop(args: argparse.Namespace) -> None:
    d = Path(args.dir).resolve()
    state = _state(d)
    errors: list[str] = []
    try:
        _detach(d, state)
    except SimdriveError as exc:
        errors.append(str(exc))
    pid = state.get("nbdkit_pid") or _read_pid(d / "nbd.pid")
    if pid:
        try:
            _kill(int(pid), "nbdkit")
        except SimdriveError as exc:
            errors.append(str(exc))
    for f in ("nbd.sock", "nbd.pid"):
        (d / f).unlink(missing_ok=True)
    if not args.keep_data:
        (d / "data.img").unlink(missing_ok=True)
    if errors:
        raise SimdriveError("; ".join(errors))


def start_drive(d: str | Path, preset: str, size: int | str, *, fob_iops: float = DEFAULT_FOB,
                serial: str = "SIM0001", model: str = "", sector_size: int = 512,
                seed: int = 1) -> Path:
    """Python API of `simdrive start`: the socket path."""
    ns = argparse.Namespace(dir=str(d), preset=preset, size=str(size), fob_iops=fob_iops,
                            serial=serial, model=model, sector_size=sector_size, seed=seed)
    return Path(start(ns))


def attach_drive(d: str | Path) -> str:
    """Python API of `simdrive attach`: /dev/loopN."""
    return attach(argparse.Namespace(dir=str(d)))


def stop_drive(d: str | Path, *, keep_data: bool = False) -> None:
    """Python API of `simdrive stop`."""
    stop(argparse.Namespace(dir=str(d), keep_data=keep_data))


@contextlib.contextmanager
def running(d: str | Path, preset: str, size: int | str, *, attach_loop: bool = True,
            **kw: Any) -> Iterator[tuple[Path, str | None]]:
    """A simulated drive for the duration of a with-block: (socket, /dev/loopN or None);
    stopped (loop, fuse mount, processes gone) however the block ends."""
    sock = start_drive(d, preset, size, **kw)
    try:
        loop = attach_drive(d) if attach_loop else None
        yield sock, loop
    finally:
        stop_drive(d)


def sanitize(args: argparse.Namespace) -> None:
    """Reset the drive from the host, as a vendor's secure-erase tool would: for drives
    whose own erase path is a TRIM the drive ignores (SandForce-like on QEMU SATA)."""
    d = Path(args.dir).resolve()
    _state(d)
    pid = _read_pid(d / "nbd.pid")
    if pid is None or not _pid_alive(pid):
        raise SimdriveError(f"no simulated drive runs in {d}")
    request = d / "sanitize.request"
    request.write_text("sanitize\n")
    if not _wait(lambda: not request.exists(), 30.0):
        request.unlink(missing_ok=True)
        raise SimdriveError("the drive did not serve the sanitize request within 30 s")


def show_presets() -> str:
    from simdrive.expected import describe_all
    return describe_all()


def twin(args: argparse.Namespace) -> str:
    from simdrive.twin import describe_run
    return describe_run(args.preset, parse_size(args.size), fob_iops=args.fob_iops,
                        op_fraction=args.op / 100.0, seconds=args.seconds, seed=args.seed)


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    """The command line, with ``start``'s identity filled in (``--identity``, then the
    plain defaults, for what no flag gave)."""
    ap = argparse.ArgumentParser(prog="simdrive", description=__doc__.split("\n")[0],
                                 formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("start", help="start a simulated drive (nbdkit on DIR/nbd.sock)")
    s.add_argument("--preset", required=True, help=", ".join(presets.PRESETS))
    s.add_argument("--size", required=True, help="bytes, NNNs (512-byte sectors) or NNN[KMG]")
    s.add_argument("--dir", required=True)
    s.add_argument("--fob-iops", type=float, default=DEFAULT_FOB,
                   help=f"fresh-out-of-box 4K random write IOPS (default {DEFAULT_FOB:.0f})")
    s.add_argument("--identity", choices=tuple(IDENTITIES), default=None,
                   help="the model, serial and firmware of simdrive/identity.py (hostile: "
                        "markup, a line break, U+202E); --serial/--model/--firmware win")
    s.add_argument("--serial", default=None, help="default SIM0001")
    s.add_argument("--model", default=None)
    s.add_argument("--firmware", default=None,
                   help="recorded with the drive (the guest sees QEMU's device options)")
    s.add_argument("--sector-size", type=int, default=512)
    s.add_argument("--seed", type=int, default=1)
    s.add_argument("--fake", choices=("wrap", "drop"), default="",
                   help="a counterfeit: claims --size but holds --real-size; beyond it writes "
                        "wrap (offset mod real) or vanish (reads give zeros)")
    s.add_argument("--real-size", help="with --fake: the bytes it really holds")
    for name, hlp in (("attach", "expose DIR's drive as /dev/loopN (nbdfuse + loop, direct I/O)"),
                      ("detach", "remove the loop device and the fuse mount")):
        sub.add_parser(name, help=hlp).add_argument("--dir", required=True)
    s = sub.add_parser("stop", help="detach and stop the drive (truth.jsonl stays)")
    s.add_argument("--dir", required=True)
    s.add_argument("--keep-data", action="store_true", help="keep DIR/data.img")
    sub.add_parser("sanitize", help="reset the drive from the host (a vendor secure erase)"
                   ).add_argument("--dir", required=True)
    sub.add_parser("presets", help="the presets and their expected answers")
    s = sub.add_parser("twin", help="run the offline twin: expected cliff and steady state")
    s.add_argument("--preset", required=True)
    s.add_argument("--size", required=True)
    s.add_argument("--fob-iops", type=float, default=DEFAULT_FOB)
    s.add_argument("--op", type=float, default=0.0, help="extra OP percent (unwritten LBAs)")
    s.add_argument("--seconds", type=float, default=240.0, help="torture seconds")
    s.add_argument("--seed", type=int, default=1)
    args = ap.parse_args(argv)
    if args.cmd == "start":
        ident = named(args.identity) if args.identity else None
        for key, plain in (("serial", "SIM0001"), ("model", ""), ("firmware", "")):
            if getattr(args, key) is None:
                setattr(args, key, plain if ident is None else getattr(ident, key))
    return args


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        if args.cmd == "start":
            print(start(args))
        elif args.cmd == "attach":
            print(attach(args))
        elif args.cmd == "detach":
            detach(args)
        elif args.cmd == "stop":
            stop(args)
        elif args.cmd == "sanitize":
            sanitize(args)
        elif args.cmd == "presets":
            print(show_presets())
        else:
            print(twin(args))
    except (SimdriveError, ValueError) as exc:
        print(f"simdrive: {exc}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
