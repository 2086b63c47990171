"""The journal: ``state.json`` at the results root, rewritten (fsynced) at every transition.

After a power loss it says, per drive, which plan ran, which runs finished and which stage
was running, so ``ssdbench run --resume`` and kiosk mode skip finished runs and redo an
interrupted one from its erase. Form::

    {"schema": 1,
     "drives": {"<consent id>": {
        "consent_id": "S4EV...", "drive": "nvme0n1", "model": "...", "serial": "...",
        "drive_dir": "20261121T145300Z_Model_S4EV...",      # relative to the results root
        "plan": {Plan.to_json()}, "state": "running",       # running | done | failed | cancelled
        "started": "...", "updated": "...",
        "runs": {"trim": {"state": "running", "stage": "torture",
                          "stages": {"erase": "done", "probe-clean": "done", ...}}}}}}
"""

from __future__ import annotations

import json
import threading
from pathlib import Path
from typing import Any

from ssdbench import jsonfile
from ssdbench.results import atomic
from ssdbench.results.layout import utc_stamp

NAME = "state.json"
SCHEMA = 1
FINISHED = ("done", "failed")


class JournalError(Exception):
    """state.json exists but cannot be read: it is reported, never overwritten."""


class Journal:
    def __init__(self, path: Path, data: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.data: dict[str, Any] = data or {"schema": SCHEMA, "drives": {}}
        self._lock = threading.RLock()

    @classmethod
    def open(cls, results_root: Path) -> Journal:
        path = Path(results_root) / NAME
        if not path.exists():
            return cls(path)
        try:
            data = jsonfile.read(path)
        except (OSError, ValueError) as exc:
            raise JournalError(f"{path}: unreadable journal ({exc}); move it away to start "
                               "afresh") from None
        if not isinstance(data, dict) or not isinstance(data.get("drives"), dict):
            raise JournalError(f"{path}: not an ssdbench journal (no \"drives\" table)")
        return cls(path, data)

    def _save(self) -> None:
        atomic.write_json(self.path, self.data)

    def entry(self, key: str) -> dict[str, Any] | None:
        with self._lock:
            entry = self.data["drives"].get(key)
            return json.loads(json.dumps(entry)) if entry is not None else None

    def unfinished(self) -> dict[str, dict[str, Any]]:
        """Entries whose plan did not end (running: power loss; cancelled: Ctrl-C)."""
        with self._lock:
            return {k: json.loads(json.dumps(v)) for k, v in self.data["drives"].items()
                    if v.get("state") not in FINISHED}

    def start_drive(self, key: str, *, drive: str, model: str, serial: str,
                    drive_dir: str, plan: dict[str, Any]) -> None:
        with self._lock:
            self.data["drives"][key] = {
                "consent_id": key, "drive": drive, "model": model, "serial": serial,
                "drive_dir": drive_dir, "plan": plan, "state": "running",
                "started": utc_stamp(), "updated": utc_stamp(), "runs": {},
            }
            self._save()

    def resume_drive(self, key: str, drive: str) -> None:
        with self._lock:
            entry = self.data["drives"][key]
            entry.update(state="running", drive=drive, updated=utc_stamp())
            entry.setdefault("resumes", []).append(utc_stamp())
            self._save()

    def run_state(self, key: str, run: str, state: str) -> None:
        with self._lock:
            entry = self.data["drives"][key]
            runs = entry.setdefault("runs", {})
            rec = runs.setdefault(run, {"state": state, "stage": None, "stages": {}})
            rec["state"] = state
            if state == "running":
                rec["stage"] = None
                rec["stages"] = {}
            entry["updated"] = utc_stamp()
            self._save()

    def stage_state(self, key: str, run: str, stage: str, state: str) -> None:
        with self._lock:
            entry = self.data["drives"][key]
            rec = entry.setdefault("runs", {}).setdefault(
                run, {"state": "running", "stage": None, "stages": {}})
            rec["stages"][stage] = state
            rec["stage"] = stage
            entry["updated"] = utc_stamp()
            self._save()

    def finish_drive(self, key: str, state: str) -> None:
        with self._lock:
            entry = self.data["drives"][key]
            entry.update(state=state, updated=utc_stamp())
            self._save()
