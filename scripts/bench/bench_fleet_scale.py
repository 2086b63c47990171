#!/usr/bin/env python3
"""The fleet at scale (#46): `ssdbench fleet` over a synthetic store of FLEET_RUNS runs
(default 1,000,000: 100 benches x 2,500 drives x 4 runs, each run.json a real one, the
trim run of tests/data/lab, 9.5 KB, its drive, serial, steady IOPS, lot and asset tag
changed), then the same after FLEET_NEW new runs (default 10,000) were added.
BENCH_SMOKE=1: 2,000 runs and 200 new ones (make test checks the benchmark still runs).

The store is a folder (a copy of the prefix, as `aws s3 sync` leaves it): generating it is
not timed. Each build runs in a fresh process and prints from it:

    fleet_scale_runs=…                 runs in fleet.csv after the cold build
    fleet_scale_cold_seconds=…         wall time of a build with no index (reads every run.json)
    fleet_scale_cold_peak_rss_mb=…
    fleet_scale_incremental_seconds=…  wall time after FLEET_NEW new runs (goal <= 30)
    fleet_scale_incremental_peak_rss_mb=…   (goal <= 500)
    fleet_scale_incremental_read=…     run.json files read by the incremental build
    fleet_scale_incremental_cpu_seconds=…   user + system CPU of it (the machine shared)
    fleet_scale_incremental_all=…      every incremental build's seconds/CPU/MB (FLEET_REPEAT)
    fleet_scale_html_mb=…              fleet.html (summaries and the newest 500 runs)

The incremental build starts from the output folder the cold build left (its index, its
cache: docs/lab.md); FLEET_REPEAT=n (default 1) measures it n times, each from a copy of
that folder, and prints the slowest (the machine may be shared: the spread is printed too).
FLEET_DIR=path keeps the store there (not deleted: generate once, measure again with
FLEET_REUSE=1).
"""

from __future__ import annotations

import json
import os
import random
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
DRIVE = REPO / "tests/data/lab/results/20261125T062239Z_QEMU_NVMe_Ctrl_DEMONVME0001"
BENCHES = 100
RUNS = ("intake", "consistency-default", "trim", "speed")
SMOKE = os.environ.get("BENCH_SMOKE") == "1"
TOTAL = 2000 if SMOKE else int(os.environ.get("FLEET_RUNS", "1000000"))
NEW = 200 if SMOKE else int(os.environ.get("FLEET_NEW", "10000"))
MODELS = [(f"Vendor{m % 7} SSD {m * 128} GB", p) for m, p in enumerate(
    ("S4EV", "PHKS", "WD-W", "2004", "BTYF", "5002", "S5GX", "CT10", "TW0X", "A1B2",
     "HBSE", "S3Z9", "Y7K3", "M0Q8", "J9R2", "D4U6", "NX71", "KP33", "G8L5", "E2W4"), 1)]

CHILD = r"""
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter()
from ssdbench.cli import main
rc = main(["fleet", sys.argv[1], "-o", sys.argv[2], "--silent-after", "1e12"])
seconds = time.perf_counter() - t0
usage = resource.getrusage(resource.RUSAGE_SELF)
rss_mb = usage.ru_maxrss / 1024
assert rc == 0, rc
print(f"seconds={seconds:.2f}")
print(f"cpu_seconds={usage.ru_utime + usage.ru_stime:.2f}")
print(f"rc={rc}")
print(f"peak_rss_mb={rss_mb:.1f}")
"""


def _templates() -> tuple[str, str]:
    run = json.loads((DRIVE / "trim" / "run.json").read_text())
    drive = json.loads((DRIVE / "drive.json").read_text())
    run.update(run="@RUN@", started="@STARTED@", finished="@STARTED@", lot="@LOT@",
               asset_tag="@TAG@")
    run["drive"].update(model="@MODEL@", serial="@SERIAL@")
    run["analysis"]["iops"]["steady"]["mean"] = 123456789.5
    drive["drive"].update(model="@MODEL@", serial="@SERIAL@")
    return json.dumps(run), json.dumps(drive)


def write_runs(root: Path, first_drive: int, drives: int, day: int) -> int:
    """``drives`` drives (numbered from ``first_drive``) of 4 runs each, spread over the
    benches; returns the runs written."""
    run_t, drive_t = _templates()
    rnd = random.Random(first_drive)
    n = 0
    for i in range(first_drive, first_drive + drives):
        b = i % BENCHES
        model, prefix = MODELS[(i * 7) % len(MODELS)]
        serial = f"{prefix}{(i * 7919) % 10 ** 8:08d}"
        hour, minute = divmod(i % 1440, 60)
        run_id = f"2026{11 - day // 28:02d}{1 + day % 28:02d}T{hour:02d}{minute:02d}00Z"
        session = root / f"bench-{b:03d}" / serial / run_id
        session.mkdir(parents=True, exist_ok=True)
        sub = {"@MODEL@": model, "@SERIAL@": serial}
        text = drive_t
        for k, v in sub.items():
            text = text.replace(k, v)
        (session / "drive.json").write_text(text)
        for j, run in enumerate(RUNS):
            started = f"{run_id[:4]}-{run_id[4:6]}-{run_id[6:8]}T{hour:02d}:{minute:02d}:{j:02d}Z"
            text = run_t.replace("@RUN@", run).replace("@STARTED@", started).replace(
                "@LOT@", f"LOT-{i // 5000:04d}").replace("@TAG@", f"AT{i:07d}").replace(
                "123456789.5", f"{rnd.gauss(20000 + 3000 * (i % 5), 3000):.1f}")
            for k, v in sub.items():
                text = text.replace(k, v)
            (session / run).mkdir(exist_ok=True)
            (session / run / "run.json").write_text(text)
            n += 1
    for b in range(BENCHES):
        bench = root / f"bench-{b:03d}"
        if bench.is_dir():
            (bench / "status.json").write_text(json.dumps({
                "bench": bench.name, "state": "done", "plan": "intake",
                "time": "2026-11-25T07:00:00Z", "drives": [], "last_event": "", "errors": []}))
    return n


def measure(root: Path, out: Path) -> dict[str, str]:
    proc = subprocess.run([sys.executable, "-c", CHILD, str(root), str(out)], check=True,
                          capture_output=True, text=True)
    sys.stderr.write(proc.stderr[-2000:])
    return dict(line.split("=", 1) for line in proc.stdout.split() if "=" in line)


def _lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(block.count(b"\n") for block in iter(lambda: f.read(1 << 20), b""))


def main() -> int:
    keep = os.environ.get("FLEET_DIR")
    tmp = Path(keep) if keep else Path(tempfile.mkdtemp(prefix="bench-fleet-scale-"))
    try:
        root, out = tmp / "lab1", tmp / "out"
        drives = TOTAL // len(RUNS)
        if not (keep and os.environ.get("FLEET_REUSE") == "1"):
            shutil.rmtree(root, ignore_errors=True)
            print(f"# writing {TOTAL} runs into {root}", file=sys.stderr, flush=True)
            write_runs(root, 0, drives, day=0)
        shutil.rmtree(root / "_fleet", ignore_errors=True)  # cold: no index
        shutil.rmtree(out, ignore_errors=True)
        cold = measure(root, out)
        rows = _lines(out / "fleet.csv") - 1
        base = tmp / "out.cold"
        shutil.rmtree(base, ignore_errors=True)
        shutil.copytree(out, base, symlinks=True)  # each incremental build starts here
        write_runs(root, drives, NEW // len(RUNS), day=1)
        runs: list[dict[str, str]] = []
        for i in range(max(1, int(os.environ.get("FLEET_REPEAT", "1")))):
            if i:
                shutil.rmtree(out)
                shutil.copytree(base, out, symlinks=True)
            runs.append(measure(root, out))
        warm = max(runs, key=lambda r: float(r["seconds"]))
        after = _lines(out / "fleet.csv") - 1
        read = after - rows  # every other row came from the index
        shutil.rmtree(base, ignore_errors=True)
        print(f"fleet_scale_runs={rows}")
        print(f"fleet_scale_cold_seconds={cold['seconds']}")
        print(f"fleet_scale_cold_peak_rss_mb={cold['peak_rss_mb']}")
        print(f"fleet_scale_cold_cpu_seconds={cold['cpu_seconds']}")
        print(f"fleet_scale_incremental_seconds={warm['seconds']}")
        print(f"fleet_scale_incremental_peak_rss_mb={warm['peak_rss_mb']}")
        print(f"fleet_scale_incremental_cpu_seconds={warm['cpu_seconds']}")
        print(f"fleet_scale_incremental_read={read}")
        print("fleet_scale_incremental_all=" + ",".join(
            f"{r['seconds']}s/{r['cpu_seconds']}cpu/{r['peak_rss_mb']}MB" for r in runs))
        print(f"fleet_scale_html_mb={(out / 'fleet.html').stat().st_size / 2**20:.1f}")
        print("# goals: fleet_scale_incremental_seconds <= 30, "
              "fleet_scale_incremental_peak_rss_mb <= 500", file=sys.stderr)
        if keep:  # the next run starts from this store
            shutil.rmtree(root / "_fleet", ignore_errors=True)
            shutil.rmtree(out, ignore_errors=True)
    finally:
        if not keep:
            shutil.rmtree(tmp, ignore_errors=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
