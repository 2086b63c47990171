"""Run folders of the intake, grade and speed plans as their stages leave them (run.json
only: these runs keep no per-second series), inside a synthetic drive folder."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from ssdbench.plan.engine import DriveOutcome, RunOutcome
from tests.unit.report.synthetic import DriveSpec, write_drive_folder

NO_FIRMWARE_ERASE = ("no secure erase: the drive offers no firmware erase command and the "
                     "plan does not allow a Clear by overwrite")
GRADE = {"grade": "note", "reasons": [
    {"grade": "note", "text": "power-on hours 51,000 over 43,800", "counter":
     "power_on_hours", "value": 51000, "threshold": 43800}], "inputs": {"warnings": []}}
SPEED_CORNERS = (("SEQ1M Q8T1", 520.4), ("SEQ1M Q1T1", 480.0), ("RND4K Q32T16", 310.2),
                 ("RND4K Q1T1", 38.7))
PARAMS = {"torture_seconds": 2000, "trim_torture_seconds": 3600, "probe_gib": 1.0,
          "op_percent": 0, "capacity_check": "quick", "self_test": "short",
          "speed_seconds": 12, "operator": "", "erase_fallback": "fail"}


def _meta(run: str, kind: str, plan: str, state: str = "done",
          error: str | None = None) -> dict[str, Any]:
    return {"schema": 1, "run": run, "kind": kind, "state": state, "error": error,
            "started": "2026-11-28T10:00:00Z", "finished": "2026-11-28T10:05:00Z",
            "plan": {"name": plan, "source": "preset"},
            "drive": {"name": "sda", "path": "/dev/sda", "model": "Samsung SSD 860 EVO",
                      "serial": "S3Z9NB0K123456", "firmware": "RVT04B6Q",
                      "size_bytes": 500107862016},
            "target": {"path": "/dev/sda", "span_bytes": 500107862016, "op_percent": 0},
            "params": dict(PARAMS), "stages": [], "erase": None}


def _write(run_dir: Path, meta: dict[str, Any]) -> None:
    run_dir.mkdir(parents=True, exist_ok=True)
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")


def no_smart(stages: list[str]) -> dict[str, Any]:
    return {"before": {"available": False, "reason": "smartctl could not read: no SMART"},
            **({"after": {"available": False, "reason": "smartctl could not read"}}
               if "health-after" in stages else {})}


def write_intake(root: Path) -> tuple[Path, DriveOutcome]:
    """An intake on a drive with no firmware erase: capacity genuine, grade note, the
    erase FAILs (its record says why)."""
    drive_dir = write_drive_folder(root, DriveSpec(), runs=())
    auth = _meta("authenticity", "authenticity", "intake")
    auth["authenticity"] = {
        "verdict": "genuine", "claimed_bytes": 500107862016, "real_bytes": 500107862016,
        "block": 4096, "grid_bytes": 1 << 30, "tags_written": 466, "reads": 466,
        "seconds": 41.0, "evidence": [], "fake": False,
        "summary": "genuine: 466 tagged blocks across the claimed 500,107,862,016 bytes "
                   "all held"}
    auth["stages"] = [{"name": "authenticity", "state": "done"}]
    _write(drive_dir / "authenticity", auth)
    reason = f"stage erase: erase record FAIL: {NO_FIRMWARE_ERASE}"
    erase = _meta("erase", "erase", "intake", "failed", reason)
    erase["grade"] = GRADE
    erase["erase_record"] = {"json": "record.json", "html": "certificate.html", "pdf": None,
                             "result": {"status": "FAIL", "reason": NO_FIRMWARE_ERASE},
                             "signed": False, "warnings": []}
    erase["stages"] = [{"name": "erase", "state": "failed", "error": reason}]
    _write(drive_dir / "erase", erase)
    return drive_dir, DriveOutcome("sda", "S1", drive_dir, (
        RunOutcome("authenticity", "done", None, drive_dir / "authenticity"),
        RunOutcome("erase", "failed", reason, drive_dir / "erase")))


def write_grade(root: Path) -> tuple[Path, DriveOutcome]:
    """A grade on a drive without SMART (a USB bridge): the health stages not available."""
    drive_dir = write_drive_folder(root, DriveSpec(), runs=())
    meta = _meta("grade", "grade", "grade")
    meta["grade"] = GRADE
    meta["health"] = no_smart(["health-before"])
    meta["self_test"] = {"kind": "short", "summary": "not supported by the drive",
                         "ran": False}
    meta["stages"] = [{"name": "health-before", "state": "not available",
                       "error": "smartctl could not read: no SMART"},
                      {"name": "self-test", "state": "done"},
                      {"name": "grade", "state": "done"}]
    _write(drive_dir / "grade", meta)
    return drive_dir, DriveOutcome("sda", "S1", drive_dir, (
        RunOutcome("grade", "done", None, drive_dir / "grade"),))


def write_speed(root: Path) -> tuple[Path, DriveOutcome]:
    drive_dir = write_drive_folder(root, DriveSpec(), runs=())
    meta = _meta("speed", "speed", "speed")
    corners = []
    for label, mb in SPEED_CORNERS:
        corners.append({"key": label.lower().replace(" ", "_"), "label": label,
                        "direction": "read", "mb_s": mb, "iops": mb * 1e6 / 4096,
                        "mean_latency_us": 120.0, "temperature_start_c": 35,
                        "temperature_end_c": 38, "verdict": "as fast",
                        "reference_mb_s": mb * 1.02})
    meta["speed"] = {"seconds": 12, "ramp_seconds": 3, "region_bytes": 1 << 30,
                     "writes": False, "corners": corners,
                     "verdict": {"verdict": "as fast", "text": "as fast as its class",
                                 "class": "sata-ssd", "tolerance_percent": 15}}
    meta["stages"] = [{"name": "speed", "state": "done"}]
    _write(drive_dir / "speed", meta)
    return drive_dir, DriveOutcome("sda", "S1", drive_dir, (
        RunOutcome("speed", "done", None, drive_dir / "speed"),))
