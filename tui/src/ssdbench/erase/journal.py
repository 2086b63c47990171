"""Where temporary ATA passwords are remembered until they are removed again.

A password is recorded against the drive's serial BEFORE it is set on the drive, so a
crash, a power loss or a hung erase never leaves a locked drive with an unknown password
(TKperf PR#26 left drives with security enabled after a crash). The run journal
(state.json, built by the stages room) implements :class:`PasswordJournal`;
:class:`JsonPasswordJournal` is a small standalone implementation (one JSON file, written
atomically with fsync) that the journal can reuse.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from pathlib import Path
from typing import Protocol

from ssdbench import jsonfile


class PasswordJournal(Protocol):
    def record_password(self, serial: str, password: str) -> None:
        """Durably remember the password (on disk, fsynced) before it is used."""
        ...

    def clear_password(self, serial: str) -> None:
        """Forget it once the drive shows security disabled."""
        ...

    def password_for(self, serial: str) -> str | None:
        """The password an earlier (maybe crashed) run left on this drive, if any."""
        ...


class JsonPasswordJournal:
    """``{"ata_passwords": {serial: password}}`` in one file; other keys are kept as they are."""

    KEY = "ata_passwords"

    def __init__(self, path: Path) -> None:
        self.path = path
        self._lock = threading.Lock()

    def _load(self) -> dict[str, object]:
        try:
            text = self.path.read_bytes()
        except FileNotFoundError:
            return {}
        try:
            data = jsonfile.loads(text)
        except ValueError as exc:
            raise ValueError(f"{self.path}: not valid JSON ({exc}); not overwriting it") from exc
        if not isinstance(data, dict):
            raise ValueError(f"{self.path}: expected a JSON object; not overwriting it")
        return data

    def _passwords(self, data: dict[str, object]) -> dict[str, str]:
        raw = data.get(self.KEY, {})
        if not isinstance(raw, dict):
            raise ValueError(f"{self.path}: {self.KEY!r} must be an object")
        return {str(k): str(v) for k, v in raw.items()}

    def _write(self, data: dict[str, object]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".tmp-", dir=self.path.parent)
        try:
            with os.fdopen(fd, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, sort_keys=True)
                f.write("\n")
                f.flush()
                os.fsync(f.fileno())
            os.replace(tmp, self.path)
        except BaseException:
            try:
                os.unlink(tmp)
            except FileNotFoundError:
                pass
            raise
        dir_fd = os.open(self.path.parent, os.O_RDONLY)
        try:
            os.fsync(dir_fd)
        finally:
            os.close(dir_fd)

    def record_password(self, serial: str, password: str) -> None:
        with self._lock:
            data = self._load()
            passwords = self._passwords(data)
            passwords[serial] = password
            data[self.KEY] = passwords
            self._write(data)

    def clear_password(self, serial: str) -> None:
        with self._lock:
            data = self._load()
            passwords = self._passwords(data)
            if serial not in passwords:
                return
            del passwords[serial]
            data[self.KEY] = passwords
            self._write(data)

    def password_for(self, serial: str) -> str | None:
        with self._lock:
            return self._passwords(self._load()).get(serial)


class MemoryPasswordJournal:
    """In memory (tests, dry runs). Not durable: never use it for a real erase."""

    def __init__(self, passwords: dict[str, str] | None = None) -> None:
        self.passwords: dict[str, str] = dict(passwords or {})
        self.events: list[tuple[str, str]] = []  # ("record"|"clear", serial)

    def record_password(self, serial: str, password: str) -> None:
        self.passwords[serial] = password
        self.events.append(("record", serial))

    def clear_password(self, serial: str) -> None:
        self.passwords.pop(serial, None)
        self.events.append(("clear", serial))

    def password_for(self, serial: str) -> str | None:
        return self.passwords.get(serial)
