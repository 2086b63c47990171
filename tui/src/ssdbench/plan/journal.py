"""The journal: ``state.json`` at the results root, rewritten (fsynced) at every transition.

After a power loss it says, per drive, which plan ran, which runs finished and which stage
was running, so ``ssdbench run --resume`` and kiosk mode skip finished runs and redo an
interrupted one from its erase. Form::

    {"schema": 1,
     "drives": {"<consent id>": {
        "consent_id": "S4EV...", "drive": "nvme0n1", "model": "...", "serial": "...",
        "identity": {DriveIdentity.to_json()},                # what the drive is matched by
        "drive_dir": "20261121T145300Z_Model_S4EV...",      # relative to the results root
        "plan": {Plan.to_json()}, "state": "running",       # running | done | failed | cancelled
        "started": "...", "updated": "...",
        "runs": {"trim": {"state": "running", "stage": "torture",
                          "stages": {"erase": "done", "probe-clean": "done", ...}}}}}}

An entry belongs to the drive whose identity (devices/model.py ``DriveIdentity``: serial,
model, WWN, capacity, place) it recorded, never to a serial alone: two drives that report
one serial get two entries (the second under ``<consent id>~2``), and an entry without an
identity (written by an older ssdbench) matches no drive.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ssdbench import jsonfile
from ssdbench.results import atomic
from ssdbench.results.layout import utc_stamp

NAME = "state.json"
SCHEMA = 1
FINISHED = ("done", "failed")


def doubt(entry: Mapping[str, Any], telling: bool, unique: bool,
          shared_now: Sequence[str] = ()) -> str:
    """Why the drive whose identity an entry recorded still cannot be told apart from
    another (the kiosk then runs the plan afresh, the TUI asks), or "" when it can. ``telling``:
    the identity has a serial or a WWN; ``unique``: a WWN or a backing file no twin shares;
    ``shared_now``: the drives that report its serial now. The one rule of kiosk/run.py and
    ui/engine.py."""
    raw = entry.get("serial_shared_with")
    then = [str(n) for n in raw] if isinstance(raw, list) else []
    if not telling:
        return "it reports no serial and no WWN"
    if then and not unique:
        return f"its serial was shared with {', '.join(then)} when it ran"
    if shared_now and not unique:
        return f"its serial is shared with {', '.join(shared_now)} now"
    return ""


class JournalError(Exception):
    """state.json exists but cannot be read: it is reported, never overwritten."""


class Journal:
    def __init__(self, path: Path, data: dict[str, Any] | None = None) -> None:
        self.path = Path(path)
        self.data: dict[str, Any] = data or {"schema": SCHEMA, "drives": {}}
        self._lock = threading.RLock()
        self._claims: dict[str, dict[str, Any]] = {}  # keys given out, not started yet

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

    def entries(self) -> dict[str, dict[str, Any]]:
        """Every entry (a copy), by key."""
        with self._lock:
            return {k: json.loads(json.dumps(v)) for k, v in self.data["drives"].items()
                    if isinstance(v, dict)}

    def find(self, identity: Mapping[str, Any]) -> tuple[str, dict[str, Any]] | None:
        """The key and entry recorded for exactly this identity (the newest when there are
        several); None when no entry has it."""
        want = dict(identity)
        with self._lock:
            found = [(str(v.get("updated") or ""), k) for k, v in self.data["drives"].items()
                     if isinstance(v, dict) and v.get("identity") == want]
            if not found:
                return None
            key = max(found)[1]
            return key, json.loads(json.dumps(self.data["drives"][key]))

    def key_for(self, consent_id: str, identity: Mapping[str, Any]) -> str:
        """The key a new plan on this drive is journaled under: the key of this identity's
        entry (it is replaced, as a new plan on a drive always was), else ``consent_id``
        when no other drive's entry holds it, else ``consent_id~2``, ``~3``... Claimed at
        once: two threads starting drives that share a serial get two keys."""
        want = dict(identity)
        with self._lock:
            drives = self.data["drives"]
            claimed = self._claims
            mine = [k for k, v in {**drives, **claimed}.items()
                    if isinstance(v, dict) and v.get("identity") == want]
            if mine:
                key = consent_id if consent_id in mine else sorted(mine)[0]
            else:
                key, n = consent_id, 1
                while key in drives or key in claimed:
                    n += 1
                    key = f"{consent_id}~{n}"
            claimed[key] = {"identity": want}
            return key

    def unfinished(self) -> dict[str, dict[str, Any]]:
        """Entries whose plan did not end (running: power loss; cancelled: Ctrl-C)."""
        with self._lock:
            return {k: json.loads(json.dumps(v)) for k, v in self.data["drives"].items()
                    if v.get("state") not in FINISHED}

    def start_drive(self, key: str, *, drive: str, model: str, serial: str,
                    drive_dir: str, plan: dict[str, Any],
                    identity: Mapping[str, Any] | None = None,
                    consent_id: str | None = None,
                    serial_shared_with: Sequence[str] = ()) -> None:
        with self._lock:
            self.data["drives"][key] = {
                "consent_id": key if consent_id is None else consent_id,
                "drive": drive, "model": model, "serial": serial,
                "drive_dir": drive_dir, "plan": plan, "state": "running",
                "started": utc_stamp(), "updated": utc_stamp(), "runs": {},
                **({} if identity is None else {"identity": dict(identity)}),
                # other drives present then reported its serial: it names no drive
                **({"serial_shared_with": list(serial_shared_with)}
                   if serial_shared_with else {}),
            }
            self._claims.pop(key, None)
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
