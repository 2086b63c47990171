#!/usr/bin/env python3
"""Fleet benchmark: `ssdbench fleet` over 10,000 synthetic runs (100 benches x 50 drives x
2 runs, each run.json the size of a real one: tests/data/lab's trim run, with its analysis).
BENCH_SMOKE=1: 2 benches x 3 drives (make test checks the benchmark still runs).

Generates the folder first (not timed), then builds fleet.html and fleet.csv in a fresh
subprocess and prints from it:

    fleet_runs=…              runs in the CSV (10000)
    fleet_seconds=…           wall time of the import + reading + page + CSV (goal <= 10)
    fleet_cpu_seconds=…       CPU time of the same (the machine may be shared)
    fleet_peak_rss_mb=…       peak RSS of the process doing it (goal <= 150)
    fleet_html_mb=…           size of the page
"""

from __future__ import annotations

import copy
import json
import os
import random
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVE = REPO / "tests/data/lab/results/20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001"
BENCHES, DRIVES, RUNS = 100, 50, ("consistency-default", "trim")
if os.environ.get("BENCH_SMOKE") == "1":  # make test's smoke run: seconds, no figure
    BENCHES, DRIVES = 2, 3

CHILD = r"""
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter(); c0 = time.process_time()
from ssdbench.cli import main
rc = main(["fleet", sys.argv[1], "-o", sys.argv[2], "--silent-after", "1e12"])
seconds = time.perf_counter() - t0
cpu = time.process_time() - c0
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
out = Path(sys.argv[2])
rows = (out / "fleet.csv").read_text().count("\n") - 1
assert rc == 0, rc
print(f"fleet_runs={rows}")
print(f"fleet_seconds={seconds:.2f}")
print(f"fleet_cpu_seconds={cpu:.2f}")
print(f"fleet_peak_rss_mb={rss_mb:.1f}")
print(f"fleet_html_mb={(out / 'fleet.html').stat().st_size / 2**20:.1f}")
"""


def write_lab(root: Path) -> None:
    rnd = random.Random(21)
    run_doc = json.loads((DRIVE / "trim" / "run.json").read_text())
    drive_doc = json.loads((DRIVE / "drive.json").read_text())
    models = [f"Vendor{m % 7} SSD {m * 128} GB" for m in range(1, 21)]
    for b in range(BENCHES):
        bench = root / f"bench-{b:03d}"
        bench.mkdir(parents=True)
        state = rnd.choice(("running", "done", "failed"))
        (bench / "status.json").write_text(json.dumps({
            "bench": bench.name, "state": state, "plan": "quick",
            "time": "2026-11-25T07:00:00Z", "drives": [], "last_event": "", "errors": []}))
        for d in range(DRIVES):
            model = rnd.choice(models)
            serial = f"S{b:03d}{d:03d}X"
            session = bench / serial / "20261125T062239Z"
            session.mkdir(parents=True)
            dd = copy.deepcopy(drive_doc)
            dd["drive"].update(model=model, serial=serial)
            (session / "drive.json").write_text(json.dumps(dd, indent=2))
            for run in RUNS:
                doc = copy.deepcopy(run_doc)
                doc["run"] = run
                doc["drive"].update(model=model, serial=serial)
                doc["analysis"]["iops"]["steady"]["mean"] = rnd.gauss(20000, 4000)
                (session / run).mkdir()
                (session / run / "run.json").write_text(json.dumps(doc, indent=2))


def main() -> int:
    with tempfile.TemporaryDirectory(prefix="bench-fleet-") as tmp:
        root = Path(tmp) / "lab1"
        write_lab(root)
        proc = subprocess.run([sys.executable, "-c", CHILD, str(root), str(Path(tmp) / "out")],
                              check=False)
        print("# goals: fleet_seconds <= 10, fleet_peak_rss_mb <= 150", file=sys.stderr)
        return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
