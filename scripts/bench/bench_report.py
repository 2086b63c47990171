#!/usr/bin/env python3
"""Report benchmark: analysis + every chart (PNG + SVG) + report.html + index.html for one
drive with one 2000-second consistency run (with latency columns and a fill).
BENCH_SMOKE=1: a 120-second run (make test checks the benchmark still runs).

Generates the synthetic result folder first (not timed), then runs the report in a fresh
subprocess and prints, from that subprocess:

    report_seconds=…        wall time of the import + analysis + charts + HTML (goal <= 3)
    report_cpu_seconds=…    CPU time of the same (the machine may be shared)
    report_peak_rss_mb=…    peak RSS of the process doing it (ru_maxrss; goal <= 250)
"""

from __future__ import annotations

import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
# BENCH_SMOKE=1 (make test's smoke run): a 120-second run, so the benchmark is exercised in
# seconds; the figures then mean nothing
DURATION = 120 if os.environ.get("BENCH_SMOKE") == "1" else 2000

CHILD = r"""
import resource, sys, time
from pathlib import Path
t0 = time.perf_counter(); c0 = time.process_time()
from ssdbench.report import render_drive, render_index
root = Path(sys.argv[1])
drive = next(p for p in root.iterdir() if p.is_dir())
report = render_drive(drive)
render_index(root)
seconds = time.perf_counter() - t0
cpu = time.process_time() - c0
rss_mb = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
assert report.runs and report.runs[0].iops is not None, "no analysis"
assert report.charts, "no chart"
print(f"report_seconds={seconds:.2f}")
print(f"report_cpu_seconds={cpu:.2f}")
print(f"report_peak_rss_mb={rss_mb:.1f}")
print(f"report_charts={len(report.charts)}")
"""


def main() -> int:
    sys.path.insert(0, str(REPO))
    from tests.unit.report.synthetic import write_drive_folder

    with tempfile.TemporaryDirectory(prefix="bench-report-") as tmp:
        root = Path(tmp) / "ssdbench"
        write_drive_folder(root, duration=DURATION, runs=("consistency-default",))
        proc = subprocess.run([sys.executable, "-c", CHILD, str(root)], check=False)
        print("# goals: report_seconds <= 3, report_peak_rss_mb <= 250", file=sys.stderr)
        return proc.returncode


if __name__ == "__main__":
    raise SystemExit(main())
