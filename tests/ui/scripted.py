"""A scripted engine run: the Progress sequence real stages emit, and a real results
folder (run.json + iops.csv) for the results screen to analyse."""

from __future__ import annotations

import json
import math
import threading
from pathlib import Path

from ssdbench.plan.engine import DriveOutcome, RunOutcome
from ssdbench.progress import Progress
from ssdbench.ui.engine import ScriptedEngine, Step

RUN = "consistency-default"


def write_run(run_dir: Path, seconds: int = 240) -> None:
    """A consistency run folder as the stages leave it (state done, discard erase)."""
    run_dir.mkdir(parents=True, exist_ok=True)
    rows = ["time_s,iops,mib_s,lat_mean_us,lat_p99_us,lat_p9999_us,lat_max_us"]
    for t in range(seconds):
        iops = 90000.0 if t < 60 else 20000.0 + 2000.0 * math.sin(t / 7.0)
        if t in (100, 101):
            iops = 0.0
        lat = "" if iops == 0 else f"{1e6 * 32 / iops:.1f}"
        rows.append(f"{t},{iops:.0f},{iops * 4096 / 2**20:.2f},{lat},{lat},{lat},{lat}")
    (run_dir / "iops.csv").write_text("\n".join(rows) + "\n", encoding="utf-8")
    meta = {
        "schema": 1, "run": RUN, "kind": "consistency", "state": "done", "error": None,
        "started": "2026-11-21T14:53:00Z", "finished": "2026-11-21T14:58:00Z",
        "drive": {"name": "loop1", "path": "/dev/loop1", "model": "", "serial": "",
                  "firmware": "", "size_bytes": 33554432},
        "target": {"path": "/dev/loop1", "span_bytes": 33554432, "op_percent": 0},
        "params": {"torture_seconds": seconds, "steady_start_s": int(seconds * 0.7)},
        "erase": {"method": "discard", "secure": False, "verified": False,
                  "duration_s": 0.1, "detail": "not secure-erased"},
        "stages": [{"name": n, "state": "done"} for n in ("erase", "fill", "torture")],
    }
    (run_dir / "run.json").write_text(json.dumps(meta), encoding="utf-8")


def events(drive: str = "loop1") -> list[Step]:
    def ev(stage: str, state: str, **kw: object) -> Step:
        return Step(event=Progress(drive, RUN, stage, state, **kw))  # type: ignore[arg-type]

    steps = [
        ev("erase", "running", message="started"),
        Step(command="blkdiscard --offset 0 --length 33554432 /dev/loop1"),
        ev("erase", "running", message="discarding 33554432 bytes of /dev/loop1"),
        ev("erase", "done", message="done"),
        ev("fill", "running", message="started"),
        Step(command="fio --output-format=json --status-interval=1 jobs/fill.fio"),
    ]
    for t in range(1, 4):
        steps.append(ev("fill", "running", fraction=t / 4, elapsed_s=float(t),
                        eta_s=float(4 - t), bytes_done=t * 8 << 20, mib_s=800.0 + t * 10))
    steps += [ev("fill", "done", message="done"), ev("torture", "running", message="started"),
              Step(command="fio --output-format=json --status-interval=1 jobs/torture.fio")]
    for t in range(1, 31):
        steps.append(ev("torture", "running", fraction=t / 60, elapsed_s=float(t),
                        eta_s=float(60 - t), iops=90000.0 - 2000.0 * t,
                        mib_s=(90000.0 - 2000.0 * t) * 4096 / 2**20))
    return steps


def scripted_engine(results: Path, drive: str = "loop1",
                    hold: threading.Event | None = None) -> ScriptedEngine:
    """Plays events; with ``hold`` it stops mid-torture until the event is set."""
    steps = events(drive)
    tail = [Step(event=Progress(drive, RUN, "torture", "running", fraction=1.0,
                                elapsed_s=60.0, eta_s=0.0, iops=21000.0, mib_s=82.0)),
            Step(event=Progress(drive, RUN, "torture", "done", message="done"))]
    if hold is not None:
        steps.append(Step(wait=hold))
    steps += tail
    run_dir = results / f"20261121T145300Z_unknown_{drive}" / RUN
    write_run(run_dir)
    outcome = DriveOutcome(drive, drive, run_dir.parent, (RunOutcome(RUN, "done", None, run_dir),))
    return ScriptedEngine({drive: steps}, {drive: outcome})
