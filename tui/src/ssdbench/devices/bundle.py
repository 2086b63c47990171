"""Support bundles: record what discovery runs and reads, replay it offline.

A bundle is a folder::

    manifest.json            format, ssdbench version, date, kernel; commands, files,
                             readlinks, listdirs, exists
    cmd/<argv>.out|.err      each command's stdout / stderr, verbatim
    fs/<path>                each /sys, /proc, /dev file read, at its mirrored path
    list.json                the `ssdbench list --json` answer at capture time

`RecordingRunner` / `RecordingFS` wrap the live `Runner` / `HostFS`; `ReplayRunner` /
`ReplayFS` serve the recordings, keyed by argv tuple and path.  A command that was not
recorded raises `RecordingMissing` naming the argv.  Other rooms use `ReplayRunner` for
their own tests: `ReplayRunner().add(argv, stdout=..., returncode=...)`.
"""

from __future__ import annotations

import json
import os
import platform
import re
import threading
import time
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ssdbench import __version__
from ssdbench.system import (
    CommandError,
    CommandNotFound,
    CommandRecord,
    CommandSink,
    CommandSinks,
    CommandTimeout,
    HostFS,
    RecordingMissing,
    Result,
    Runner,
    RunningProcess,
)
from ssdbench.untrusted import without_url_secrets

BUNDLE_FORMAT = 1
MANIFEST = "manifest.json"
ALL_EXIT_CODES = tuple(range(256))


@dataclass(frozen=True)
class Recording:
    """One recorded command: what replay hands back."""

    argv: tuple[str, ...]
    stdout: bytes
    stderr: bytes
    returncode: int | None
    outcome: str = "ok"  # ok/failed (by exit code at replay), timeout, not-found
    duration_s: float = 0.0


def _as_bytes(data: bytes | str) -> bytes:
    return data.encode("utf-8") if isinstance(data, str) else data


def _raise_or_result(rec: Recording, ok_codes: Sequence[int], timeout: float | None) -> Result:
    stderr = rec.stderr.decode("utf-8", errors="replace")
    if rec.outcome == "timeout":
        raise CommandTimeout(rec.argv, f"timed out after {timeout or 0:g} s (recorded)",
                             stderr=stderr, stdout=rec.stdout)
    if rec.outcome == "not-found":
        raise CommandNotFound(rec.argv, stderr or f"{rec.argv[0]} is not installed (recorded)")
    if rec.returncode is None:
        raise CommandError(rec.argv, f"killed ({rec.outcome}, recorded)", stderr=stderr,
                           stdout=rec.stdout)
    if rec.returncode not in ok_codes:
        raise CommandError(rec.argv, f"exit code {rec.returncode}", returncode=rec.returncode,
                           stderr=stderr, stdout=rec.stdout)
    return Result(rec.argv, rec.returncode, rec.stdout, rec.stderr, rec.duration_s)


@dataclass
class _ReplayProcess:
    """A replayed long-running command: its stdout comes back as one chunk."""

    argv: tuple[str, ...]
    rec: Recording
    ok_codes: tuple[int, ...]
    emit: CommandSink
    _done: bool = False

    def chunks(self, idle_timeout: float | None) -> Iterator[bytes]:
        if self.rec.stdout:
            yield self.rec.stdout

    def terminate(self, grace_s: float = 10.0) -> None:
        self._done = True

    def wait(self) -> Result:
        rc = self.rec.returncode
        self.emit(_record_of(self.rec, "ok" if rc in self.ok_codes else "failed"))
        return _raise_or_result(self.rec, self.ok_codes, None)


def _record_of(rec: Recording, outcome: str) -> CommandRecord:
    return CommandRecord(
        rec.argv, rec.returncode, time.time(), rec.duration_s, len(rec.stdout),
        len(rec.stderr), rec.stderr.decode("utf-8", errors="replace")[-2000:], outcome,
    )


class ReplayRunner(CommandSinks):
    """A Runner that answers from recordings keyed by argv (a support bundle or `add`).

    The same argv recorded several times is answered in order; the last answer repeats.
    """

    def __init__(self, recordings: Sequence[Recording] = ()) -> None:
        super().__init__()
        self._recordings: dict[tuple[str, ...], list[Recording]] = {}
        self._served: dict[tuple[str, ...], int] = {}
        self.calls: list[tuple[str, ...]] = []
        for rec in recordings:
            self._recordings.setdefault(rec.argv, []).append(rec)

    def add(
        self,
        argv: Sequence[str],
        *,
        stdout: bytes | str = b"",
        stderr: bytes | str = b"",
        returncode: int | None = 0,
        outcome: str = "ok",
    ) -> ReplayRunner:
        key = tuple(str(a) for a in argv)
        rec = Recording(key, _as_bytes(stdout), _as_bytes(stderr), returncode, outcome)
        self._recordings.setdefault(key, []).append(rec)
        return self

    def add_file(self, argv: Sequence[str], path: Path, *, returncode: int = 0) -> ReplayRunner:
        """Register a recorded output file (a fixture) as the command's stdout."""
        return self.add(argv, stdout=path.read_bytes(), returncode=returncode)

    def _next(self, argv: Sequence[str]) -> Recording:
        key = tuple(str(a) for a in argv)
        self.calls.append(key)
        recs = self._recordings.get(key)
        if not recs:
            raise RecordingMissing(key, "no recording for this command")
        i = self._served.get(key, 0)
        self._served[key] = i + 1
        return recs[min(i, len(recs) - 1)]

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        rec = self._next(argv)
        outcome = rec.outcome
        if outcome == "ok" and rec.returncode not in ok_codes:
            outcome = "failed"
        self._emit(_record_of(rec, outcome))
        return _raise_or_result(rec, ok_codes, timeout)

    def stream(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> RunningProcess:
        rec = self._next(argv)
        return _ReplayProcess(rec.argv, rec, tuple(ok_codes), self._emit)


class RecordingRunner:
    """Wraps a live Runner and keeps every command's full stdout/stderr and exit code."""

    def __init__(self, inner: Runner) -> None:
        self.inner = inner
        self.recordings: list[Recording] = []
        self._lock = threading.Lock()

    def _keep(self, rec: Recording) -> None:
        with self._lock:
            self.recordings.append(rec)

    def run(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        timeout: float | None = 60.0,
        env: Mapping[str, str] | None = None,
    ) -> Result:
        key = tuple(str(a) for a in argv)
        t0 = time.monotonic()
        try:
            # Every exit code is accepted below so that stderr is kept whole; the
            # caller's ok_codes are applied afterwards, exactly as the live runner would.
            result = self.inner.run(key, ok_codes=ALL_EXIT_CODES, timeout=timeout, env=env)
        except CommandTimeout as exc:
            self._keep(Recording(key, exc.stdout, exc.stderr_tail.encode(), None, "timeout",
                                 time.monotonic() - t0))
            raise
        except CommandNotFound as exc:
            self._keep(Recording(key, b"", exc.reason.encode(), None, "not-found"))
            raise
        except CommandError as exc:
            self._keep(Recording(key, exc.stdout, exc.stderr_tail.encode(), exc.returncode,
                                 "killed", time.monotonic() - t0))
            raise
        rec = Recording(key, result.stdout, result.stderr, result.returncode, "ok",
                        result.duration_s)
        self._keep(rec)
        return _raise_or_result(rec, ok_codes, timeout)

    def stream(
        self,
        argv: Sequence[str],
        *,
        ok_codes: Sequence[int] = (0,),
        env: Mapping[str, str] | None = None,
        cwd: str | Path | None = None,
    ) -> RunningProcess:
        return self.inner.stream(argv, ok_codes=ok_codes, env=env, cwd=cwd)

    def add_sink(self, sink: CommandSink) -> None:
        self.inner.add_sink(sink)

    def remove_sink(self, sink: CommandSink) -> None:
        self.inner.remove_sink(sink)


@dataclass
class FSRecord:
    files: dict[str, str | None] = field(default_factory=dict)
    readlinks: dict[str, str | None] = field(default_factory=dict)
    listdirs: dict[str, list[str]] = field(default_factory=dict)
    exists: dict[str, bool] = field(default_factory=dict)


class RecordingFS:
    """Wraps a live HostFS and keeps every value read."""

    def __init__(self, inner: HostFS) -> None:
        self.inner = inner
        self.record = FSRecord()
        self._lock = threading.Lock()

    def read_text(self, path: str) -> str | None:
        value = self.inner.read_text(path)
        with self._lock:
            self.record.files[path] = value
        return value

    def listdir(self, path: str) -> list[str]:
        value = self.inner.listdir(path)
        with self._lock:
            self.record.listdirs[path] = list(value)
        return value

    def readlink(self, path: str) -> str | None:
        value = self.inner.readlink(path)
        with self._lock:
            self.record.readlinks[path] = value
        return value

    def exists(self, path: str) -> bool:
        value = self.inner.exists(path)
        with self._lock:
            self.record.exists[path] = value
        return value


class ReplayFS:
    """A HostFS that answers from an FSRecord; paths never recorded are listed in
    ``unrecorded`` (and read as missing)."""

    def __init__(self, record: FSRecord) -> None:
        self.record = record
        self.unrecorded: list[str] = []

    def _miss(self, what: str, path: str) -> None:
        self.unrecorded.append(f"{what} {path}")

    def read_text(self, path: str) -> str | None:
        if path not in self.record.files:
            self._miss("read", path)
            return None
        return self.record.files[path]

    def listdir(self, path: str) -> list[str]:
        if path not in self.record.listdirs:
            self._miss("listdir", path)
            return []
        return sorted(self.record.listdirs[path])

    def readlink(self, path: str) -> str | None:
        if path not in self.record.readlinks:
            self._miss("readlink", path)
            return None
        return self.record.readlinks[path]

    def exists(self, path: str) -> bool:
        if path in self.record.exists:
            return self.record.exists[path]
        if self.record.files.get(path) is not None or self.record.readlinks.get(path):
            return True
        self._miss("exists", path)
        return False


# --- the folder format ---------------------------------------------------------------

def argv_file_stem(argv: Sequence[str]) -> str:
    """`nvme id-ctrl /dev/nvme0 -o json` -> `nvme_id-ctrl_dev_nvme0_-o_json`."""
    parts = [re.sub(r"[^A-Za-z0-9.,=+:@%-]+", "_", a.strip("/")) for a in argv]
    stem = "_".join(p for p in parts if p) or "command"
    return stem[:180]


def _fs_file(path: str) -> str:
    clean = os.path.normpath("/" + path).lstrip("/")
    clean = "/".join(re.sub(r"[^A-Za-z0-9._:+,=@%-]", "_", p) or "_" for p in clean.split("/"))
    return "fs/" + clean


def _write(path: Path, data: bytes) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(data)


def write_bundle(
    out: Path,
    runner: RecordingRunner,
    fs: RecordingFS,
    *,
    extra_files: Mapping[str, bytes] | None = None,
) -> Path:
    """Write the recordings as a bundle folder (created; must be empty or absent)."""
    out.mkdir(parents=True, exist_ok=True)
    commands: list[dict[str, Any]] = []
    used: set[str] = set()
    for rec in runner.recordings:
        stem = argv_file_stem(rec.argv)
        name, n = stem, 1
        while name in used:
            n += 1
            name = f"{stem}~{n}"
        used.add(name)
        _write(out / "cmd" / f"{name}.out", rec.stdout)
        _write(out / "cmd" / f"{name}.err", rec.stderr)
        commands.append({
            "argv": list(rec.argv),
            "returncode": rec.returncode,
            "outcome": rec.outcome,
            "duration_s": round(rec.duration_s, 3),
            "stdout": f"cmd/{name}.out",
            "stderr": f"cmd/{name}.err",
        })
    files: dict[str, str] = {}
    taken: dict[str, str] = {}
    for path, text in sorted(fs.record.files.items()):
        if text is None:
            files[path] = "missing"
            continue
        rel = _fs_file(path)
        if rel in taken or any(t.startswith(rel + "/") or rel.startswith(t + "/")
                               for t in taken):
            rel = f"fs-extra/{len(taken)}"
        taken[rel] = path
        # /proc/cmdline may name the config URL with the lab's password or a token in it
        _write(out / rel, without_url_secrets(text).encode("utf-8"))
        files[path] = rel
    uname = platform.uname()
    manifest = {
        "format": BUNDLE_FORMAT,
        "ssdbench_version": __version__,
        "created": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "kernel": uname.release,
        "kernel_version": uname.version,
        "machine": uname.machine,
        "commands": commands,
        "files": files,
        "readlinks": dict(sorted(fs.record.readlinks.items())),
        "listdirs": dict(sorted(fs.record.listdirs.items())),
        "exists": dict(sorted(fs.record.exists.items())),
    }
    for rel, data in (extra_files or {}).items():
        _write(out / rel, data)
    _write(out / MANIFEST, (json.dumps(manifest, indent=2) + "\n").encode())
    return out


class BundleError(Exception):
    """A bundle folder is missing or damaged (names the file)."""


@dataclass(frozen=True)
class Bundle:
    path: Path
    manifest: dict[str, Any]
    runner: ReplayRunner
    fs: ReplayFS


def load_bundle(path: Path) -> Bundle:
    manifest_path = path / MANIFEST
    try:
        manifest = json.loads(manifest_path.read_text(encoding="utf-8"))
    except FileNotFoundError as exc:
        raise BundleError(f"{manifest_path}: not a support bundle (no {MANIFEST})") from exc
    except (OSError, ValueError) as exc:
        raise BundleError(f"{manifest_path}: unreadable: {exc}") from exc
    if not isinstance(manifest, dict) or manifest.get("format") != BUNDLE_FORMAT:
        raise BundleError(f"{manifest_path}: unknown bundle format {manifest.get('format')!r}")

    def read(rel: str) -> bytes:
        try:
            return (path / rel).read_bytes()
        except OSError as exc:
            raise BundleError(f"{path / rel}: listed in {MANIFEST} but unreadable: {exc}") from exc

    recordings = []
    for c in manifest.get("commands", []):
        recordings.append(Recording(
            argv=tuple(c["argv"]),
            stdout=read(c["stdout"]),
            stderr=read(c["stderr"]),
            returncode=c["returncode"],
            outcome=c.get("outcome", "ok"),
            duration_s=float(c.get("duration_s", 0.0)),
        ))
    record = FSRecord(
        files={p: None if rel == "missing" else read(rel).decode("utf-8", errors="replace")
               for p, rel in manifest.get("files", {}).items()},
        readlinks=dict(manifest.get("readlinks", {})),
        listdirs={p: list(v) for p, v in manifest.get("listdirs", {}).items()},
        exists={p: bool(v) for p, v in manifest.get("exists", {}).items()},
    )
    return Bundle(path, manifest, ReplayRunner(recordings), ReplayFS(record))
