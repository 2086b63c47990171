"""Where temporary ATA passwords are remembered until they are removed again.

A password is recorded against the drive BEFORE it is set on the drive, so a crash, a
power loss or a hung erase never leaves a locked drive with an unknown password (TKperf
PR#26 left drives with security enabled after a crash). An entry names the drive by its
identity (``DriveIdentity``: serial, model, WWN, capacity, place), so two drives that
report one serial keep a password each; an entry of an older journal has only the serial
and is matched by it (:func:`find_entry`, docs/erase.md "The password journal").
The run journal (state.json, built by the stages room) implements :class:`PasswordJournal`;
:class:`JsonPasswordJournal` is a small standalone implementation (one JSON file, written
atomically with fsync) that the journal can reuse.
"""

from __future__ import annotations

import json
import os
import tempfile
import threading
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from ssdbench import jsonfile
from ssdbench.devices.model import DriveIdentity
from ssdbench.erase.model import EraseTarget


@dataclass(frozen=True)
class PasswordEntry:
    """One remembered password: the drive's consent id (serial, or kernel name) and its
    identity; ``identity`` None for an entry an older journal wrote (serial only)."""

    serial: str
    password: str
    identity: DriveIdentity | None = None

    def same_drive(self, other: PasswordEntry) -> bool:
        """The same journal slot: the same identity, or (older entries) the same serial."""
        if self.identity is None or other.identity is None:
            return self.identity is None and other.identity is None and self.serial == other.serial
        return self.identity == other.identity


@dataclass(frozen=True)
class EntryMatch:
    entry: PasswordEntry
    how: str  # for the erase steps: why this entry is taken for this drive


def _moved_here(entry: DriveIdentity, drive: DriveIdentity) -> bool:
    """The same drive in another place: serial and model agree, and the WWN too when both
    report one (a different WWN is a different drive, whatever its serial says)."""
    return (entry.serial == drive.serial and entry.model == drive.model
            and (not entry.wwn or not drive.wwn or entry.wwn == drive.wwn)
            and entry.place != drive.place)


def find_entry(entries: list[PasswordEntry], target: EraseTarget, *,
               locked: bool | None) -> EntryMatch | None:
    """The journal entry that belongs to ``target``, or None.

    - an entry with the target's own identity;
    - else an entry of an older journal (no identity) with its serial, as before;
    - else, only when the drive is ``locked`` (a power loss mid-erase, then the drive was
      plugged into another port): the one entry whose serial and model match - never
      when two entries could be it (twins), and never for a drive that is not locked
      (an unlocked twin has nothing to unlock; trying the password would only count
      against its security retries).
    An entry with an identity is never applied to a drive whose identity differs
    otherwise. A target without identity (built by hand) sees only older entries.
    """
    mine = [e for e in entries if e.serial == target.serial]
    ident = target.identity
    for e in mine:
        if ident is not None and e.identity == ident:
            return EntryMatch(e, "recorded for this drive")
    for e in mine:
        if e.identity is None:
            return EntryMatch(e, "recorded by serial only (an older journal)")
    if ident is None or not locked:
        return None
    moved = [e for e in mine if e.identity is not None and _moved_here(e.identity, ident)]
    if len(moved) == 1 and moved[0].identity is not None:
        return EntryMatch(moved[0], f"recorded for this serial and model at another place "
                          f"({moved[0].identity.place}); the drive is locked")
    return None


class PasswordJournal(Protocol):
    def record_password(self, entry: PasswordEntry) -> None:
        """Durably remember the password (on disk, fsynced) before it is used; replaces
        the entry of the same drive (:meth:`PasswordEntry.same_drive`)."""
        ...

    def clear_password(self, entry: PasswordEntry) -> None:
        """Forget the entry of that drive once it shows security disabled."""
        ...

    def entries(self) -> list[PasswordEntry]:
        """Every password an earlier (maybe crashed) run left, oldest first."""
        ...


class JsonPasswordJournal:
    """``{"ata_password_entries": [{"serial", "password", "identity"}],
    "ata_passwords": {serial: password}}`` in one file (the second: what older journals
    wrote, still read, and written for a drive without identity); other keys are kept as
    they are."""

    KEY = "ata_password_entries"
    LEGACY_KEY = "ata_passwords"

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

    def _entries(self, data: dict[str, object]) -> list[PasswordEntry]:
        legacy = data.get(self.LEGACY_KEY, {})
        if not isinstance(legacy, dict):
            raise ValueError(f"{self.path}: {self.LEGACY_KEY!r} must be an object")
        raw = data.get(self.KEY, [])
        if not isinstance(raw, list):
            raise ValueError(f"{self.path}: {self.KEY!r} must be a list")
        out = [PasswordEntry(str(k), str(v)) for k, v in legacy.items()]
        for i, item in enumerate(raw):
            ident = DriveIdentity.from_json(item.get("identity")) if isinstance(item, dict) \
                else None
            if not isinstance(item, dict) or ident is None \
                    or not isinstance(item.get("serial"), str) \
                    or not isinstance(item.get("password"), str):
                raise ValueError(f"{self.path}: {self.KEY!r} entry {i} is not a serial, a "
                                 "password and an identity; not overwriting it")
            out.append(PasswordEntry(item["serial"], item["password"], ident))
        return out

    def _store(self, data: dict[str, object], entries: list[PasswordEntry]) -> None:
        legacy = {e.serial: e.password for e in entries if e.identity is None}
        current = [{"serial": e.serial, "password": e.password, "identity": e.identity.to_json()}
                   for e in entries if e.identity is not None]
        for key, value in ((self.LEGACY_KEY, legacy), (self.KEY, current)):
            if value:
                data[key] = value
            else:
                data.pop(key, None)
        self._write(data)

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

    def record_password(self, entry: PasswordEntry) -> None:
        with self._lock:
            data = self._load()
            entries = [e for e in self._entries(data) if not e.same_drive(entry)]
            self._store(data, [*entries, entry])

    def clear_password(self, entry: PasswordEntry) -> None:
        with self._lock:
            data = self._load()
            entries = self._entries(data)
            kept = [e for e in entries if not e.same_drive(entry)]
            if len(kept) != len(entries):
                self._store(data, kept)

    def entries(self) -> list[PasswordEntry]:
        with self._lock:
            return self._entries(self._load())


class MemoryPasswordJournal:
    """In memory (tests, dry runs). Not durable: never use it for a real erase."""

    def __init__(self, passwords: dict[str, str] | None = None) -> None:
        # ``passwords``: entries as an older journal wrote them (serial only)
        self._entries = [PasswordEntry(k, v) for k, v in (passwords or {}).items()]
        self.events: list[tuple[str, str]] = []  # ("record"|"clear", serial)

    @property
    def passwords(self) -> dict[str, str]:
        """serial -> password (tests; twins collapse, use :meth:`entries` for them)."""
        return {e.serial: e.password for e in self._entries}

    def record_password(self, entry: PasswordEntry) -> None:
        self._entries = [e for e in self._entries if not e.same_drive(entry)] + [entry]
        self.events.append(("record", entry.serial))

    def clear_password(self, entry: PasswordEntry) -> None:
        self._entries = [e for e in self._entries if not e.same_drive(entry)]
        self.events.append(("clear", entry.serial))

    def entries(self) -> list[PasswordEntry]:
        return list(self._entries)
