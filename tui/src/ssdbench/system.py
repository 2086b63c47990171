"""The one place where ssdbench starts a process, and the one view of the host's files.

Every external command (lsblk, hdparm, nvme, smartctl, fio, blkdiscard, sfdisk, ...) goes
through :meth:`Runner.run` or :meth:`Runner.stream`.  The live implementation,
:class:`SystemRunner`, calls :func:`subprocess.Popen` in exactly one function
(:func:`_popen`):

* argv is a list, never a shell string;
* the environment is explicit (``LANG=C.UTF-8``, ``LC_ALL=C.UTF-8``, a fixed ``PATH``);
* stdin is ``/dev/null``;
* each call says which exit codes are fine and how long it may take;
* the child (and its process group) is killed on timeout or on any exception;
* a failure raises :class:`CommandError` naming the command (``shlex.join``) and the tail
  of its stderr;
* every call is recorded as a :class:`CommandRecord` and handed to the runner's sinks (the
  run's ``log.txt``, the support bundle, tests).

Files under ``/sys``, ``/proc`` and ``/dev/disk`` are read through a :class:`HostFS`, so a
support bundle can record them and replay discovery offline.
"""

from __future__ import annotations

import os
import queue
import shlex
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Protocol

DEFAULT_PATH = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
STDERR_TAIL_CHARS = 2000


def base_environment() -> dict[str, str]:
    """The environment every child gets: a fixed locale and PATH, nothing inherited."""
    env = {"LANG": "C.UTF-8", "LC_ALL": "C.UTF-8", "PATH": DEFAULT_PATH}
    # Keep the venv's/installed scripts reachable (tests run tools from a venv; the image
    # installs everything under /usr).
    extra = os.environ.get("SSDBENCH_EXTRA_PATH")
    if extra:
        env["PATH"] = extra + ":" + env["PATH"]
    return env


_HIDDEN: dict[str, int] = {}  # secret -> how many callers hide it now
_HIDDEN_LOCK = threading.Lock()


@contextmanager
def hidden_in_logs(secret: str) -> Iterator[None]:
    """While inside, ``secret`` reaches the commands' argv but every CommandRecord (log.txt,
    the run screen, bundles) and every CommandError shows ``***`` instead (a PSID on a
    sedutil-cli command line: docs/erase.md)."""
    if not secret:
        yield
        return
    with _HIDDEN_LOCK:
        _HIDDEN[secret] = _HIDDEN.get(secret, 0) + 1
    try:
        yield
    finally:
        with _HIDDEN_LOCK:
            _HIDDEN[secret] -= 1
            if not _HIDDEN[secret]:
                del _HIDDEN[secret]


def shown_argv(argv: Sequence[str]) -> tuple[str, ...]:
    """``argv`` as logs may show it: every hidden secret replaced by ``***``."""
    with _HIDDEN_LOCK:
        secrets = sorted(_HIDDEN, key=len, reverse=True)
    out = []
    for arg in argv:
        shown = arg
        for secret in secrets:
            shown = shown.replace(secret, "***")
        out.append(shown)
    return tuple(out)


@dataclass(frozen=True)
class CommandRecord:
    """What one finished (or failed to start) command did: the run log's unit."""

    argv: tuple[str, ...]
    returncode: int | None  # None: never started, killed, or timed out
    started: float  # time.time() at start
    duration_s: float
    stdout_bytes: int
    stderr_bytes: int
    stderr_tail: str
    # "ok", "failed", "timeout", "not-found", "killed", "stopped" (asked to stop, ended well)
    outcome: str

    def log_line(self) -> str:
        """One line for log.txt: UTC start, duration, exit code, argv, stderr tail."""
        stamp = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime(self.started))
        rc = "-" if self.returncode is None else str(self.returncode)
        line = (
            f"{stamp} rc={rc} {self.outcome} {self.duration_s:.3f}s "
            f"out={self.stdout_bytes}B err={self.stderr_bytes}B $ {shlex.join(self.argv)}"
        )
        if self.stderr_tail.strip() and self.outcome != "ok":
            tail = self.stderr_tail.strip().replace("\n", "\n    ")
            line += f"\n    stderr: {tail}"
        return line


@dataclass(frozen=True)
class Result:
    """A finished command's output."""

    argv: tuple[str, ...]
    returncode: int
    stdout: bytes
    stderr: bytes
    duration_s: float

    @property
    def text(self) -> str:
        return self.stdout.decode("utf-8", errors="replace")

    @property
    def stderr_text(self) -> str:
        return self.stderr.decode("utf-8", errors="replace")


class CommandError(Exception):
    """A command failed: bad exit code, timeout, not installed, or killed."""

    def __init__(
        self,
        argv: Sequence[str],
        reason: str,
        *,
        returncode: int | None = None,
        stderr: str = "",
        stdout: bytes = b"",
    ) -> None:
        self.argv = tuple(argv)
        self.reason = reason
        self.returncode = returncode
        self.stderr_tail = stderr[-STDERR_TAIL_CHARS:]
        self.stdout = stdout
        message = f"{shlex.join(self.argv)}: {reason}"
        tail = self.stderr_tail.strip()
        if tail:
            message += "\n" + "\n".join("  " + line for line in tail.splitlines()[-12:])
        super().__init__(message)


class CommandTimeout(CommandError):
    """The command ran longer than its timeout (or produced no output for too long)."""


class CommandNotFound(CommandError):
    """The program is not installed."""


class RecordingMissing(CommandError):
    """A fake runner has no recording for this argv (tests, bundle replay)."""


CommandSink = Callable[[CommandRecord], None]


class RunningProcess(Protocol):
    """A long-running command whose stdout is consumed while it runs (fio)."""

    argv: tuple[str, ...]

    def chunks(self, idle_timeout: float | None) -> Iterator[bytes]:
        """Yield stdout as it arrives; raise CommandTimeout after idle_timeout s of silence."""
        ...

    def terminate(self, grace_s: float = 10.0) -> None:
        """Ask the command to stop (SIGINT, then SIGTERM, then SIGKILL after grace_s)."""
        ...

    def wait(self) -> Result:
        """Wait for the end; raise CommandError for an exit code not allowed."""
        ...


class Runner(Protocol):
    """Anything that runs commands: the live system, a recording, a replay."""

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result: ...

    def stream(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> RunningProcess: ...

    def add_sink(self, sink: CommandSink) -> None: ...

    def remove_sink(self, sink: CommandSink) -> None: ...


class CommandSinks:
    """The sinks every Runner hands its CommandRecords to (log.txt, bundles, tests)."""

    def __init__(self) -> None:
        self._sinks: list[CommandSink] = []
        self._lock = threading.Lock()

    def add_sink(self, sink: CommandSink) -> None:
        with self._lock:
            self._sinks.append(sink)

    def remove_sink(self, sink: CommandSink) -> None:
        with self._lock:
            if sink in self._sinks:
                self._sinks.remove(sink)

    def _emit(self, record: CommandRecord) -> None:
        record = replace(record, argv=shown_argv(record.argv))
        with self._lock:
            sinks = list(self._sinks)
        for sink in sinks:
            sink(record)


def _popen(
    argv: Sequence[str], env: Mapping[str, str] | None, cwd: str | Path | None
) -> subprocess.Popen[bytes]:
    """The only call that starts a process."""
    full_env = base_environment()
    if env:
        full_env.update(env)
    try:
        return subprocess.Popen(
            list(argv),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            env=full_env,
            cwd=cwd,
            start_new_session=True,  # its own process group: we can kill all of it
            close_fds=True,
        )
    except FileNotFoundError as exc:
        raise CommandNotFound(argv, f"{argv[0]} is not installed (not found in PATH)") from exc
    except PermissionError as exc:
        raise CommandNotFound(argv, f"{argv[0]} cannot be executed: {exc}") from exc


def _kill_group(proc: subprocess.Popen[bytes], sig: int = signal.SIGKILL) -> None:
    try:
        os.killpg(proc.pid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _check_argv(argv: Sequence[str]) -> tuple[str, ...]:
    if isinstance(argv, str | bytes) or not argv:
        raise TypeError("argv must be a non-empty list of strings, never a shell string")
    return tuple(str(a) for a in argv)


class SystemRunner(CommandSinks):
    """Runs commands on this machine."""

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        args = _check_argv(argv)
        started = time.time()
        t0 = time.monotonic()
        try:
            proc = _popen(args, env, None)
        except CommandNotFound as exc:
            self._emit(CommandRecord(args, None, started, 0.0, 0, 0, exc.reason, "not-found"))
            raise
        outcome = "killed"
        out, err = b"", b""
        try:
            out, err = proc.communicate(timeout=timeout)
            outcome = "ok" if proc.returncode in ok_codes else "failed"
        except subprocess.TimeoutExpired:
            outcome = "timeout"
            _kill_group(proc)
            out, err = proc.communicate()
        finally:
            if proc.returncode is None:
                _kill_group(proc)
                proc.wait()
            duration = time.monotonic() - t0
            err_text = err.decode("utf-8", errors="replace")
            rc = proc.returncode if outcome in ("ok", "failed") else None
            self._emit(
                CommandRecord(
                    args, rc, started, duration, len(out), len(err),
                    err_text[-STDERR_TAIL_CHARS:], outcome,
                )
            )
        if outcome == "timeout":
            raise CommandTimeout(
                shown_argv(args), f"timed out after {timeout:g} s", stderr=err_text, stdout=out
            )
        if outcome == "failed":
            raise CommandError(
                shown_argv(args), f"exit code {proc.returncode}", returncode=proc.returncode,
                stderr=err_text, stdout=out,
            )
        return Result(args, proc.returncode, out, err, duration)

    def stream(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> _LiveProcess:
        args = _check_argv(argv)
        started = time.time()
        try:
            proc = _popen(args, env, cwd)
        except CommandNotFound as exc:
            self._emit(CommandRecord(args, None, started, 0.0, 0, 0, exc.reason, "not-found"))
            raise
        return _LiveProcess(args, proc, tuple(ok_codes), started, self._emit)


_EOF = object()


@dataclass
class _LiveProcess:
    """A running child whose stdout is read by a thread and handed over as chunks."""

    argv: tuple[str, ...]
    proc: subprocess.Popen[bytes]
    ok_codes: tuple[int, ...]
    started: float
    emit: Callable[[CommandRecord], None]
    _out: queue.Queue[object] = field(default_factory=queue.Queue)
    _stdout_parts: list[bytes] = field(default_factory=list)
    _stderr_parts: list[bytes] = field(default_factory=list)
    _t0: float = field(default_factory=time.monotonic)
    _terminated: bool = False
    _result: Result | None = None

    def __post_init__(self) -> None:
        self._threads = [
            threading.Thread(target=self._pump_stdout, daemon=True),
            threading.Thread(target=self._pump_stderr, daemon=True),
        ]
        for t in self._threads:
            t.start()

    def _pump_stdout(self) -> None:
        assert self.proc.stdout is not None
        fd = self.proc.stdout.fileno()
        while True:
            data = os.read(fd, 65536)
            if not data:
                break
            self._stdout_parts.append(data)
            self._out.put(data)
        self._out.put(_EOF)

    def _pump_stderr(self) -> None:
        assert self.proc.stderr is not None
        fd = self.proc.stderr.fileno()
        while True:
            data = os.read(fd, 65536)
            if not data:
                break
            self._stderr_parts.append(data)

    @property
    def pid(self) -> int:
        return self.proc.pid

    def stderr_text(self) -> str:
        return b"".join(self._stderr_parts).decode("utf-8", errors="replace")

    def chunks(self, idle_timeout: float | None) -> Iterator[bytes]:
        while True:
            try:
                item = self._out.get(timeout=idle_timeout)
            except queue.Empty:
                self.terminate(grace_s=5.0)
                raise CommandTimeout(
                    self.argv,
                    f"no output for {idle_timeout:g} s: the command seems hung and was stopped",
                    stderr=self.stderr_text(),
                ) from None
            if item is _EOF:
                return
            assert isinstance(item, bytes)
            yield item

    def terminate(self, grace_s: float = 10.0) -> None:
        """SIGINT (fio stops cleanly and writes its logs), then SIGTERM, then SIGKILL."""
        self._terminated = True
        for sig, wait_s in ((signal.SIGINT, grace_s), (signal.SIGTERM, 5.0)):
            if self.proc.poll() is not None:
                return
            _kill_group(self.proc, sig)
            try:
                self.proc.wait(timeout=wait_s)
                return
            except subprocess.TimeoutExpired:
                continue
        _kill_group(self.proc, signal.SIGKILL)
        self.proc.wait()

    def wait(self) -> Result:
        if self._result is not None:
            return self._result
        try:
            rc = self.proc.wait()
        except BaseException:
            self.terminate(grace_s=5.0)
            raise
        for t in self._threads:
            t.join(timeout=10)
        out = b"".join(self._stdout_parts)
        err = b"".join(self._stderr_parts)
        err_text = err.decode("utf-8", errors="replace")
        if self._terminated:
            outcome = "stopped" if rc in self.ok_codes else "killed"
        else:
            outcome = "ok" if rc in self.ok_codes else "failed"
        self.emit(
            CommandRecord(
                self.argv, rc, self.started, time.monotonic() - self._t0, len(out), len(err),
                err_text[-STDERR_TAIL_CHARS:], outcome,
            )
        )
        if outcome == "failed":
            raise CommandError(
                self.argv, f"exit code {rc}", returncode=rc, stderr=err_text, stdout=out
            )
        self._result = Result(self.argv, rc, out, err, time.monotonic() - self._t0)
        return self._result

    def __enter__(self) -> _LiveProcess:
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc.poll() is None:
            self.terminate(grace_s=5.0)
        if self._result is None:
            try:
                self.wait()
            except CommandError:
                if exc[0] is None:
                    raise


class HostFS(Protocol):
    """Read-only view of the host's /sys, /proc and /dev/disk (live or recorded)."""

    def read_text(self, path: str) -> str | None:
        """The file's text, or None when it does not exist or cannot be read."""
        ...

    def listdir(self, path: str) -> list[str]:
        """Sorted entry names, or [] when the directory does not exist."""
        ...

    def readlink(self, path: str) -> str | None:
        """The link's target (as os.readlink gives it), or None when not a link."""
        ...

    def exists(self, path: str) -> bool: ...


class LiveFS:
    """The real files of this machine."""

    def read_text(self, path: str) -> str | None:
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return None

    def listdir(self, path: str) -> list[str]:
        try:
            return sorted(os.listdir(path))
        except OSError:
            return []

    def readlink(self, path: str) -> str | None:
        try:
            return os.readlink(path)
        except OSError:
            return None

    def exists(self, path: str) -> bool:
        return os.path.lexists(path)


@dataclass(frozen=True)
class Host:
    """What the engine needs from the machine: commands and files."""

    runner: Runner
    fs: HostFS


def live_host() -> Host:
    return Host(SystemRunner(), LiveFS())


class CommandLogFile:
    """A sink appending every command to a log.txt (argv, exit code, duration, stderr)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def __call__(self, record: CommandRecord) -> None:
        line = record.log_line() + "\n"
        with self._lock:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            with open(self.path, "a", encoding="utf-8") as f:
                f.write(line)
                f.flush()
                os.fsync(f.fileno())
