"""The results layout (docs/results-format.md): folder names and run.json, kept current.

:class:`RunRecord` holds a run's ``run.json`` and rewrites it atomically at every state
transition (run started, each stage started/finished, run finished), so a pulled plug
leaves a run.json that says how far the run got.
"""

from __future__ import annotations

import threading
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from ssdbench.results import atomic
from ssdbench.untrusted import path_part

SCHEMA = 1


def utc_stamp(when: datetime | None = None) -> str:
    """2026-11-21T14:53:00Z"""
    return (when or datetime.now(UTC)).strftime("%Y-%m-%dT%H:%M:%SZ")


def drive_dir_name(started: datetime, model: str, serial: str) -> str:
    """``<UTC start %Y%m%dT%H%M%SZ>_<model>_<serial>``, each part by
    :func:`ssdbench.untrusted.path_part` (only ``A-Za-z0-9._-``, at most 64 characters;
    the serial ``distinct``: ``SN 0001`` and ``SN_0001`` get two folders)."""
    return (f"{started.strftime('%Y%m%dT%H%M%SZ')}_{path_part(model)}_"
            f"{path_part(serial, distinct=True)}")


def journal_drive_dir(root: Path, name: object) -> Path | None:
    """The drive folder a journal (state.json) names, when it is one folder right under
    ``root`` (a name :func:`drive_dir_name` could have made, no link): a journal is read
    back from a stick and may have been edited (``../../etc``). None otherwise."""
    if not isinstance(name, str) or path_part(name, limit=255) != name:
        return None
    path = Path(root) / name
    try:
        inside = path.is_dir() and not path.is_symlink() \
            and path.resolve().parent == Path(root).resolve()
    except (OSError, RuntimeError):
        return None
    return path if inside else None


def run_name(kind: str, op_percent: int = 0) -> str:
    """consistency-default, consistency-op25, trim, diagnose."""
    if kind == "consistency":
        return "consistency-default" if op_percent == 0 else f"consistency-op{op_percent}"
    return kind


class RunRecord:
    """run.json of one run, rewritten atomically at each transition."""

    def __init__(self, path: Path, data: dict[str, Any]) -> None:
        self.path = Path(path)
        self.data = data
        self._lock = threading.Lock()
        self._t0: dict[str, float] = {}

    @classmethod
    def create(cls, run_dir: Path, *, run: str, kind: str, drive: dict[str, Any],
               target: dict[str, Any], params: dict[str, Any],
               tools: dict[str, Any]) -> RunRecord:
        data: dict[str, Any] = {
            "schema": SCHEMA,
            "run": run,
            "kind": kind,
            "state": "running",
            "error": None,
            "started": utc_stamp(),
            "finished": None,
            "drive": drive,
            "target": target,
            "params": params,
            "tools": tools,
            "erase": None,
            "stages": [],
            "trim": None,
            "analysis": {},
        }
        record = cls(Path(run_dir) / "run.json", data)
        record.save()
        return record

    def save(self) -> None:
        with self._lock:
            atomic.write_json(self.path, self.data)

    def set(self, key: str, value: Any) -> None:
        with self._lock:
            self.data[key] = value
        self.save()

    def set_entry(self, key: str, name: str, value: Any) -> None:
        """``data[key][name] = value`` (``data[key]`` a mapping per stage or phase, made on
        first use), then saved."""
        with self._lock:
            entries = dict(self.data.get(key) or {})
            entries[name] = value
            self.data[key] = entries
        self.save()

    def plan_stages(self, names: list[str]) -> None:
        """List every stage of the plan up front, all "pending"."""
        with self._lock:
            self.data["stages"] = [
                {"name": n, "state": "pending", "started": None, "finished": None,
                 "duration_s": None, "error": None, "job": None}
                for n in names
            ]
        self.save()

    def _stage(self, name: str) -> dict[str, Any]:
        for entry in self.data["stages"]:
            if entry["name"] == name:
                return entry  # type: ignore[no-any-return]
        entry = {"name": name, "state": "pending", "started": None, "finished": None,
                 "duration_s": None, "error": None, "job": None}
        self.data["stages"].append(entry)
        return entry

    def stage_started(self, name: str, job: str | None = None) -> None:
        with self._lock:
            entry = self._stage(name)
            entry.update(state="running", started=utc_stamp(), job=job)
            self._t0[name] = time.monotonic()
        self.save()

    def stage_finished(self, name: str, state: str, error: str | None = None,
                       job: str | None = None) -> None:
        with self._lock:
            entry = self._stage(name)
            t0 = self._t0.get(name)
            entry.update(state=state, finished=utc_stamp(), error=error)
            if job is not None:
                entry["job"] = job
            if t0 is not None:
                entry["duration_s"] = round(time.monotonic() - t0, 3)
        self.save()

    def finish(self, state: str, error: str | None = None) -> None:
        with self._lock:
            self.data.update(state=state, error=error, finished=utc_stamp())
            for entry in self.data["stages"]:
                if entry["state"] == "pending":
                    entry["state"] = "skipped"
        self.save()
